"""Is a suggestion whole? Checked with tree-sitter against the buffer it goes into.

A suggestion is worth showing only when the file reads as code once it is inserted: the
line the user is typing, completed by the suggestion, is a whole statement or a block
header with its body. A fragment cut mid-expression (``self.``, ``for (i, row)``) makes
the file worse than no suggestion at all. A header alone is whole only on the line the
user is typing (``header_alone``: its body comes after Enter), never as a line the model
adds; on an empty line only at a typing pause (an explicit request gets the body).

The suffix decides what fits. Around the answer (from the cursor line to the first line
of the suffix) the file must parse with it inserted: an error there is the answer's, unless
the file had it before the line was typed and it lies wholly above the cursor line (an
open call the user is filling in) or below it (a line the user has yet to fix).
Elsewhere a file the user is still editing may not parse, and a suggestion cannot be
asked to fix that: there the rule compares error counts with a baseline, the buffer with
the cursor line's typed text taken out.

tree-sitter-python accepts a line indented deeper than the one above it, so a parse alone
cannot tell that a body already waits under the cursor line: in a language whose blocks
are made by indentation, the line above a deeper one must be a block header (or go on into
it with an open bracket).
"""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter

from lsp_copilot.documents.store import Snapshot
from lsp_copilot.language.folders import LanguageConfig, language_config
from lsp_copilot.postprocess.brackets import open_brackets
from lsp_copilot.postprocess.cursor_text import indent
from lsp_copilot.postprocess.insertion import Insertion, edited_tree

BLOCK_HEADERS = (":", "{", " do", " then", "->")
"""Line endings that open a block whose body must follow (``(``/``[`` only continue)."""


@dataclass(frozen=True)
class Verdict:
    """``whole``: show it. ``errors_before``/``errors_after``: for traces and tests."""

    whole: bool
    errors_before: int
    errors_after: int
    reason: str = ""  # why not, for traces and tests


def _errors(tree: tree_sitter.Tree) -> list[tree_sitter.Node]:
    """ERROR and MISSING nodes, found by walking only the subtrees that hold one."""
    if not tree.root_node.has_error:
        return []
    found = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            found.append(node)
            continue  # one broken region counts once
        stack.extend(child for child in node.children if child.has_error)
    return found


def _empty_blocks(tree: tree_sitter.Tree, start: int, end: int, blocks: frozenset[str]) -> int:
    """Blocks with no statement in them that touch ``[start, end]``: some grammars accept
    a header with no body (tree-sitter-python gives it an empty ``block``), the language
    does not. Only the nodes around the cursor line are visited."""
    if not blocks:
        return 0
    count = 0
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in blocks and node.named_child_count == 0:
            count += 1
        stack.extend(c for c in node.children if c.start_byte <= end and c.end_byte >= start)
    return count


def _following_line(data: bytes, line_end: int) -> tuple[str | None, int]:
    """The first non-blank line after the cursor line and where it ends; (None, the
    cursor line's end) at the end of the file."""
    pos = line_end
    while pos < len(data):
        nxt = data.find(b"\n", pos + 1)
        nxt = len(data) if nxt < 0 else nxt
        line = data[pos + 1:nxt].decode("utf-8", "replace").rstrip("\r")
        if line.strip():
            return line, nxt
        pos = nxt
    return None, line_end


def _inside_brackets(snapshot: Snapshot, line_start: int, blocks: frozenset[str]) -> bool:
    """The cursor line is inside brackets or a string opened above it (a call's argument
    list, a literal over several lines; a block's braces do not count): its indentation
    is free there."""
    if snapshot.tree is None:
        return False
    node: tree_sitter.Node | None = snapshot.tree.root_node.descendant_for_byte_range(
        line_start, line_start)
    while node is not None:
        opener = node.children[0].type if node.child_count else ""
        if node.start_byte < line_start < node.end_byte and (
                "string" in node.type or opener in ("(", "[")
                or (opener == "{" and node.type not in blocks)):
            return True
        node = node.parent
    return False


class WholeChecker:
    """Verdicts for several candidate texts at one cursor (the baseline is parsed once,
    each text inserted and parsed once by ``insertion``, which other checks share)."""

    def __init__(self, snapshot: Snapshot, offset: int,
                 insertion: Insertion | None = None, typing: bool = False) -> None:
        self.snapshot = snapshot
        self.offset = offset
        self.typing = typing  # a typing pause, not an explicit request (``header_alone``)
        self.insertion = insertion or Insertion(snapshot, offset)
        self._baseline: int | None = None
        self._baseline_error_starts: set[int] = set()
        self._baseline_below: set[int] = set()  # starts after the cursor line, in ``data``
        self._rules = language_config(snapshot.grammar)
        self._blocks = self._rules.blocks
        data = snapshot.data
        self.line_start = data.rfind(b"\n", 0, offset) + 1
        line_end = data.find(b"\n", offset)
        self._line_end = len(data) if line_end < 0 else line_end
        self._following, self._following_end = _following_line(data, self._line_end)
        self._in_brackets = _inside_brackets(snapshot, self.line_start, self._blocks)

    def baseline_errors(self) -> int:
        if self._baseline is None:
            data = self.snapshot.data
            start = data.rfind(b"\n", 0, self.offset) + 1
            line_end = data.find(b"\n", self.offset)
            end = len(data) if line_end < 0 else line_end
            line = data[start:end]
            # Before this line was typed: its indentation only (the editor puts that there).
            typed = start + len(line) - len(line.lstrip(b" \t"))
            tree = edited_tree(self.snapshot, typed, end, b"")
            errors = [] if tree is None else _errors(tree)
            self._baseline_error_starts = {e.start_byte for e in errors if e.is_error}
            self._baseline_below = {e.start_byte + end - typed for e in errors
                                    if e.start_byte > typed}
            self._baseline = 0 if tree is None else (
                len(errors) + _empty_blocks(tree, start, typed, self._blocks))
        return self._baseline

    def check(self, text: str) -> Verdict | None:
        """None when the language has no grammar here (nothing can be checked)."""
        inserted = text.encode("utf-8")
        tree = self.insertion.tree(text)
        if tree is None:
            return None
        end = self.offset + len(inserted)
        if not self.header_fits(text):
            return Verdict(False, 0, 0, "a deeper line follows: only a block header fits")
        errors = _errors(tree)
        after = len(errors) + _empty_blocks(tree, self.line_start, end, self._blocks)
        if not after:
            return Verdict(True, 0, 0)
        before = self.baseline_errors()
        if self._broken_around(errors, len(inserted)):
            return Verdict(False, before, after, "the file does not parse around it")
        # A broken region that takes the answer in is the answer's doing, unless the same
        # region (same start, before this line) was broken without it.
        new_region = any(
            e.is_error and e.start_byte <= end and e.end_byte >= self.offset
            and (e.start_byte >= self.line_start
                 or e.start_byte not in self._baseline_error_starts)
            for e in errors)
        return Verdict(after <= before and not new_region, before, after)

    def header_fits(self, text: str) -> bool:
        """Where the next code line is indented deeper than the cursor line, a body is
        already there: the line above it must open a block or go on into it (an open
        bracket, a ``\\``), and an answer that completes the cursor line is that one line,
        never a header with a second copy of the body. With braces the parser sees most
        of this; what it accepts is a finished statement (``;``) above a deeper line."""
        if not self._blocks or self._in_brackets or self._following is None:
            return True
        data = self.snapshot.data
        before = data[self.line_start:self.offset].decode("utf-8", "replace")
        after = data[self.offset:self._line_end].decode("utf-8", "replace")
        if open_brackets(before, self._rules) or before.rstrip().endswith("\\"):
            return True  # the deeper lines are the rest of this line's statement
        deeper = indent(self._following)
        if deeper > indent(before + after) and text.split("\n", 1)[0].strip() \
                and "\n" in text.strip("\n"):
            return False
        line = before + text + after
        last = line.rsplit("\n", 1)[-1]
        if not last.strip() or deeper <= indent(last):
            return True
        code = last.rstrip()
        if self._rules.close:
            return not code.endswith(";")
        return opens_block(code) or code.endswith("\\") or bool(open_brackets(line, self._rules))

    def _broken_around(self, errors: list[tree_sitter.Node], inserted: int) -> bool:
        """An error from the cursor line to the end of the suffix's first code line, with
        the answer in. One the file had before the line was typed does not count when it
        lies wholly above the cursor line's start (an open call the user is filling in)
        or below its end (a line further down that the user has yet to fix)."""
        self.baseline_errors()
        line_end = self._line_end + inserted
        for e in errors:
            if e.end_byte < self.line_start or e.start_byte > self._following_end + inserted:
                continue
            if e.start_byte < self.line_start and e.start_byte in self._baseline_error_starts:
                continue
            if e.start_byte > line_end and e.start_byte - inserted in self._baseline_below:
                continue
            return True
        return False

    def is_whole(self, text: str) -> bool:
        """True when ``text`` may be shown: whole, or no grammar says otherwise."""
        verdict = self.check(text)
        return verdict is None or verdict.whole


def opens_block(line: str) -> bool:
    """The line ends with a block opener (``:`` in Python, ``{`` in braces languages)."""
    return line.rstrip().endswith(BLOCK_HEADERS)


def header_alone(checker: WholeChecker, text: str) -> str:
    """The block header that ``text`` completes on the line being typed (its lines up to
    the one that opens the block), when that header is whole with a body under it; else
    "". The user is writing the header (``def f(a,`` typed), and its body comes after
    Enter: offered where the model's body is not whole (comments only, cut by the token
    limit or by the deadline of a typing pause). At a typing pause also where nothing is
    typed yet: the body the model is still writing would come late."""
    data = checker.snapshot.data
    typed = data[checker.line_start:checker.offset].decode("utf-8", "replace")
    if (not typed.strip() and not checker.typing) or text[:1] == "\n":
        return ""
    rules = language_config(checker.snapshot.grammar)
    lines = text.split("\n")
    logical = typed
    for n, line in enumerate(lines):
        logical += ("\n" if n else "") + line
        if open_brackets(logical, rules):
            continue
        if not opens_block(logical):
            return ""
        head = "\n".join(lines[: n + 1]).rstrip()
        return head if checker.is_whole(head + _placeholder_body(typed, rules)) else ""
    return ""


def _placeholder_body(header: str, rules: LanguageConfig) -> str:
    """A body for a header with none yet: a placeholder statement one level in (and the
    block's closer, in a language that has one)."""
    lead = header[: len(header) - len(header.lstrip(" \t"))]
    body = f"\n{lead}    {rules.placeholder or 'pass'}"
    return body + f"\n{lead}{rules.close}" if rules.close else body


def first_line_is_whole(snapshot: Snapshot, offset: int, text: str) -> bool:
    """The measure of a pause: the typed part of the line plus the suggestion's first
    line is a whole statement, or a block header (judged with a placeholder body).

    A comment is neither. At the end of a finished line, a suggestion that starts with
    a newline offers the next line (as Copilot shows it): that line is the one judged."""
    data = snapshot.data
    start = data.rfind(b"\n", 0, offset) + 1
    typed = data[start:offset].decode("utf-8", "replace")
    lead = ""
    head, _, rest = text.partition("\n")
    if not head.strip() and typed.strip() and rest.strip():
        following = rest.lstrip("\n")
        lead, head = text[: len(text) - len(following)], following.split("\n", 1)[0]
        typed = ""
    if not head.strip():
        return False
    rules = language_config(snapshot.grammar)
    if rules.comment and head.strip().startswith(rules.comment):
        return False
    checker = WholeChecker(snapshot, offset)
    if checker.is_whole(lead + head):
        return True  # a statement, or a header whose body the file already has
    if not opens_block(typed + head):
        return False
    return checker.is_whole(lead + head + _placeholder_body(typed or head, rules))
