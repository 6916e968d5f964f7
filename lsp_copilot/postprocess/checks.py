"""Post-processing as one pass over a candidate: the checks in order, shared by the first
answer, its alternatives and the deadline's cut.

A raw model text becomes a ``Candidate``; each check in ``CHECKS`` reads it and returns it
changed (cut, cleaned) or emptied with the reason. The checks that read the document with
the answer in it share one ``Insertion``: a text is inserted and parsed once, whichever
check asks first. The order matters: the text rules make the answer the editor would
insert, the whole check judges that answer in the file, and the secret and safety checks
read what would really be shown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from lsp_copilot.documents.store import Snapshot
from lsp_copilot.language.folders import LanguageConfig, language_config
from lsp_copilot.language.trigger import Mode
from lsp_copilot.postprocess.brackets import covered
from lsp_copilot.postprocess.cursor_text import Cursor
from lsp_copilot.postprocess.insertion import Insertion
from lsp_copilot.postprocess.rules import clean_text, keep_whole_answer
from lsp_copilot.postprocess.safety import Finding, SafetyChecker
from lsp_copilot.postprocess.statement_end import statement_end
from lsp_copilot.postprocess.whole import WholeChecker, opens_block


@dataclass(frozen=True)
class Candidate:
    """One answer on its way to the editor, and what the checks found."""

    text: str
    truncated: bool = False  # the generation ended at its token limit
    ruled: bool = False  # the stream was cut where this request's stop rule said
    dropped_by: str = ""  # the check that left nothing of it ("" while something is left)
    reason: str | None = None  # why it was dropped, for the editor (when a check says)
    warned: tuple[Finding, ...] = ()  # safety findings shown with a warning
    blocked: tuple[Finding, ...] = ()  # safety findings the text was cut before

    @property
    def clean(self) -> bool:
        """Something is left and no safety rule had anything to say about it."""
        return bool(self.text) and not self.warned and not self.blocked


@dataclass(frozen=True)
class Target:
    """Where the answers go, and what the checks need: without a snapshot only the text
    rules run; without ``safety`` (or at level ``off``) no safety scan."""

    mode: Mode
    cursor: Cursor
    snapshot: Snapshot | None = None
    offset: int | None = None
    safety: SafetyChecker | None = None
    level: str = "off"  # the `safety` setting
    secret: Callable[[str], str | None] | None = None  # which secret a text holds, if any
    # A typing pause, not an explicit request: a block header may come without the body
    # the model is still writing (``whole.header_alone``); the user asked for the body.
    typing: bool = False
    rules: LanguageConfig | None = None  # the snapshot's language rules, when looked up


class PostProcessor:
    """Runs ``CHECKS`` over the candidates of one request (one cursor, one document)."""

    def __init__(self, target: Target) -> None:
        self.target = target
        snapshot = target.snapshot
        self.rules = target.rules or language_config(
            snapshot.grammar if snapshot is not None else None)
        self.whole = (WholeChecker(snapshot, target.offset, Insertion(
            snapshot, target.offset, self.covered), typing=target.typing, rules=self.rules)
                      if snapshot is not None and target.offset is not None else None)

    def covered(self, text: str) -> int:
        """The characters right of the cursor that ``text`` takes over (``brackets.covered``;
        closers and quotes: as many bytes)."""
        return covered(text, self.target.cursor, self.rules)

    def header_wanted(self) -> Callable[[str], bool] | None:
        """Where only a block header fits the cursor line (``WholeChecker.body_waits``):
        whether a text, after what is typed on the line, ends one that is whole over the
        body below (a header the line cannot hold, ``pub name(..) {`` in Rust, is none);
        None elsewhere."""
        checker = self.whole
        if checker is None or not checker.body_waits():
            return None
        typed = self.target.cursor.line_before
        return lambda text: opens_block(typed + text) and checker.is_whole(text.rstrip())

    def whole_first(self, texts: list[str]) -> list[str]:
        """``texts`` (items of one explicit request, each through the checks) with those
        whole in the file as they stand before those shown only as the header the user is
        typing (``whole.header_alone``: accepting one leaves a block open); the order is
        kept otherwise. A model that repeats the code below cuts to such a header, where
        an alternative completes the line."""
        if self.whole is None:
            return texts
        checker = self.whole
        return sorted(texts, key=lambda text: not checker.is_whole(text))

    def statement_end(self) -> str:
        """The one token that ends what the cursor line just closed, by the file's own
        style or its list's separator (``statement_end``), when the line is whole with
        it: the answer where the model had none. "" elsewhere."""
        snapshot, offset = self.target.snapshot, self.target.offset
        if (snapshot is None or snapshot.tree is None or offset is None
                or self.target.cursor.line_after.strip()):
            return ""
        token = statement_end(snapshot.tree, offset, "".join(self.rules.closers))
        if not token:
            return ""
        got = self.run(token)
        return token if got.clean and got.text == token else ""

    def run(self, raw: str, truncated: bool = False, until: str = "", ruled: bool = False
            ) -> Candidate:
        """``raw`` through the checks in order (up to and with ``until``, when given);
        ``ruled``: the stream already stopped where the stop rule said (it runs once)."""
        candidate = Candidate(raw, truncated, ruled)
        for name, check in CHECKS:
            if not candidate.text:
                break
            candidate = check(self, candidate)
            if not candidate.text and not candidate.dropped_by:
                candidate = replace(candidate, dropped_by=name)
            if name == until:
                break
        return candidate


def _text(p: PostProcessor, c: Candidate) -> Candidate:
    return replace(c, text=clean_text(c.text, p.target.mode, p.target.cursor, p.rules,
                                      c.truncated, c.ruled))


def _whole(p: PostProcessor, c: Candidate) -> Candidate:
    if p.whole is None:
        return c  # no document, or no grammar: nothing says otherwise
    return replace(c, text=keep_whole_answer(c.text, p.target.mode, p.whole, p.rules))


def _secret(p: PostProcessor, c: Candidate) -> Candidate:
    """One holding a secret or a placeholder is dropped whatever the `safety` setting: it
    would put a secret (or a hole) in the code."""
    found = p.target.secret(c.text) if p.target.secret is not None else None
    if found is None:
        return c
    return replace(c, text="", reason=f"the suggestion holds a secret ({found})")


def _safety(p: PostProcessor, c: Candidate) -> Candidate:
    if p.target.safety is None or p.whole is None:
        return c
    review = p.target.safety.review(p.whole, c.text, p.target.level)
    reason = None
    if review.blocked and not review.text:
        reason = "blocked by `safety`: " + ", ".join(sorted({f.rule for f in review.blocked}))
    return replace(c, text=review.text, warned=review.warned, blocked=review.blocked,
                   reason=reason)


Check = Callable[[PostProcessor, Candidate], Candidate]

CHECKS: tuple[tuple[str, Check], ...] = (
    ("text", _text),
    ("whole", _whole),
    ("secret", _secret),
    ("safety", _safety),
)
"""The checks in the order they run; ``PostProcessor.run(until=...)`` names one of them."""


def finalize(text: str, mode: Mode, cursor: Cursor, snapshot: Snapshot | None = None,
             offset: int | None = None, truncated: bool = False) -> str:
    """The text and whole checks alone (no secret or safety scan); "" means 'no
    suggestion'."""
    target = Target(mode, cursor, snapshot, offset)
    return PostProcessor(target).run(text, truncated, until="whole").text
