"""Does a suggestion slip in a dangerous call or a secret? Checked with tree-sitter.

A code model copies what it has seen, and it has seen ``os.system(cmd)``, SQL glued
together with ``+``, ``verify=False`` and keys pasted into source. Accepting such a line
with one Tab is how it reaches a codebase unnoticed, so each suggestion is scanned with
the queries of ``grammars/<language>/safety.scm`` (one ``@finding.<rule>`` capture per
pattern; ``(#set! level "warn")`` marks a rule that is only warned about under
``block``), in the file it goes into: only what the suggestion introduces counts, and a
rule the document already has findings for is not news.

The ``safety`` setting: ``off`` (no scan), ``warn`` (every finding shown with a warning),
``block`` (the default: a suggestion is cut before the line of its first finding of a
block-level rule, or dropped; warn-level rules are warned about).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import tree_sitter

from lsp_copilot.documents.store import Snapshot
from lsp_copilot.language.folders import has_query, supported
from lsp_copilot.language.grammars import compile_query
from lsp_copilot.language.ids import language_for, parser_for
from lsp_copilot.postprocess.insertion import Insertion
from lsp_copilot.postprocess.whole import WholeChecker

log = logging.getLogger(__name__)

SAFETY_LEVELS = ("off", "warn", "block")
PREFIX = "finding."


@dataclass(frozen=True)
class Finding:
    """One match of a rule: ``line`` 0-based in the scanned text, ``text`` its first line."""

    rule: str
    line: int
    text: str
    start: int  # byte offsets in the scanned text
    end: int
    block: bool  # the rule's level: blocked under `block` (else only warned about)

    def message(self) -> str:
        """What the editor shows when a suggestion with this finding is shown anyway."""
        return f"lsp-copilot: the suggestion at line {self.line + 1} adds {self.rule}: {self.text}"

    def as_json(self) -> dict[str, object]:
        """The `safety check --json` shape: lines are 1-based there."""
        return {"line": self.line + 1, "rule": self.rule, "text": self.text}


@cache
def safety_query(grammar: str | None) -> tree_sitter.Query | None:
    """The compiled ``safety.scm`` of ``grammar``; None without one (nothing is scanned)."""
    if grammar is None:
        return None
    try:
        return compile_query(grammar, "safety")
    except Exception as exc:  # a broken query file must not stop completions
        log.warning("cannot load the safety rules of %s: %s", grammar, exc)
        return None


def safety_languages() -> list[str]:
    """Grammars (pack names) with a ``safety.scm`` (their own or one they inherit)."""
    return [g for g in supported() if has_query(g, "safety")]


def scan(grammar: str | None, tree: tree_sitter.Tree, data: bytes,
         start: int = 0, end: int | None = None) -> list[Finding]:
    """Findings of ``grammar``'s rules in ``tree`` (of ``data``) that touch
    ``[start, end)``, in document order, one per construct and rule."""
    query = safety_query(grammar)
    if query is None:
        return []
    cursor = tree_sitter.QueryCursor(query)
    if start or end is not None:
        cursor.set_byte_range(start, len(data) if end is None else end)
    found: dict[tuple[str, int, int], Finding] = {}
    for pattern, captures in cursor.matches(tree.root_node):
        block = query.pattern_settings(pattern).get("level") != "warn"
        for name, nodes in captures.items():
            if not name.startswith(PREFIX):
                continue
            for node in nodes:
                key = (name[len(PREFIX):], node.start_byte, node.end_byte)
                if key in found:
                    continue
                line_end = data.find(b"\n", node.start_byte)
                line_start = data.rfind(b"\n", 0, node.start_byte) + 1
                text = data[line_start:len(data) if line_end < 0 else line_end]
                found[key] = Finding(key[0], node.start_point[0],
                                     text.decode("utf-8", "replace").strip(),
                                     node.start_byte, node.end_byte, block)
    return sorted(found.values(), key=lambda f: (f.start, f.rule))


def scan_text(grammar: str, data: bytes) -> list[Finding]:
    """Every finding in a whole file (``lsp-copilot safety check``)."""
    parser = parser_for(grammar)
    if parser is None:
        return []
    return scan(grammar, parser.parse(data), data)


def scan_file(path: Path) -> tuple[str | None, list[Finding]]:
    """The grammar that reads ``path`` and its findings (none without a grammar)."""
    grammar = language_for(None, str(path))
    if grammar is None:
        return None, []
    return grammar, scan_text(grammar, path.read_bytes())


@dataclass(frozen=True)
class Review:
    """What to show (``text``), what was blocked and what to warn about."""

    text: str
    blocked: tuple[Finding, ...] = ()
    warned: tuple[Finding, ...] = ()


class SafetyChecker:
    """Reviews suggestions; remembers the rules found in the last document version it saw
    (each completion of a version scans the document once, not per suggestion)."""

    def __init__(self) -> None:
        self._known: tuple[tuple[str, int], frozenset[str]] | None = None
        self._warned: dict[tuple[str, str, str], None] = {}  # (uri, rule, text), oldest first

    def first_warning(self, uri: str, finding: Finding) -> bool:
        """Whether the editor has not been told about this finding in this document yet
        (the same suggestion comes back while the user types: one message is enough)."""
        key = (uri, finding.rule, finding.text)
        if key in self._warned:
            return False
        self._warned[key] = None
        if len(self._warned) > 256:
            del self._warned[next(iter(self._warned))]
        return True

    def known_rules(self, snapshot: Snapshot) -> frozenset[str]:
        """The rules the document already has findings for (the user wrote them)."""
        key = (snapshot.uri, snapshot.version)
        if self._known is None or self._known[0] != key:
            rules: frozenset[str] = frozenset()
            if snapshot.tree is not None:
                rules = frozenset(f.rule for f in scan(snapshot.grammar, snapshot.tree,
                                                       snapshot.data))
            self._known = (key, rules)
        return self._known[1]

    def findings(self, insertion: Insertion, text: str) -> list[Finding]:
        """The findings ``text`` introduces where ``insertion`` puts it (lines of the
        document with the text inserted, the tree the other checks read)."""
        snapshot = insertion.snapshot
        if safety_query(snapshot.grammar) is None:
            return []
        tree = insertion.tree(text)
        if tree is None:
            return []
        offset = insertion.offset
        end = offset + len(text.encode("utf-8"))
        new = [f for f in scan(snapshot.grammar, tree, insertion.data(text), offset, end)
               if f.start < end and f.end > offset]
        if not new:
            return []
        known = self.known_rules(snapshot)
        return [f for f in new if f.rule not in known]

    def review(self, whole: WholeChecker, text: str, level: str) -> Review:
        """``text`` as ``level`` (off, warn, block) lets it be shown; what is left before
        a blocked line is shown only when ``whole`` finds it whole."""
        if level == "off" or not text:
            return Review(text)
        found = self.findings(whole.insertion, text)
        if not found:
            return Review(text)
        blocking = [f for f in found if f.block] if level == "block" else []
        if not blocking:
            return Review(text, warned=tuple(found))
        offset = whole.offset
        first = min(f.start for f in blocking)
        kept = _cut_before_line(text, first - offset)
        if kept and not whole.is_whole(kept):
            kept = ""  # what is left before the finding is a fragment (a header, a call)
        end = offset + len(kept.encode("utf-8"))
        warned = tuple(f for f in found if not f.block and f.start < end)
        return Review(kept, blocked=tuple(blocking), warned=warned)


def _cut_before_line(text: str, at: int) -> str:
    """``text`` up to the start of the line holding byte ``at`` (nothing when that is its
    first line, or before it)."""
    if at <= 0:
        return ""
    head = text.encode("utf-8")[:at]
    newline = head.rfind(b"\n")
    return "" if newline < 0 else head[:newline].decode("utf-8", "ignore").rstrip()
