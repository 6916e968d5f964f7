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

Where a block's body already waits below the cursor line, only its header fits there
(``body_waits``): the next code line is indented deeper, and, in a language whose blocks
end with a closer (``close`` in language.json: ``}``, ``end``), the deeper run ends at a
closer at the cursor line's own indentation (deeper lines that end otherwise go on the
cursor line's statement: a method chain, a call's arguments). A parse alone cannot tell:
tree-sitter-python accepts a line indented deeper than the one above it, and a brace
grammar pairs the body's closer with an outer block, so the file only breaks far below,
where the baseline (the line taken out) was broken too. The completed line must then open
a block (``opens_block``, or a ``compound_header``) or leave open the bracket the closer
closes. And an explicit request asked for code: an answer that is a comment alone is not
whole there, unless the user is writing that comment.
"""

from __future__ import annotations

import re
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
                 insertion: Insertion, typing: bool, rules: LanguageConfig) -> None:
        self.snapshot = snapshot
        self.offset = offset
        self.typing = typing  # a typing pause, not an explicit request (``header_alone``)
        self.insertion = insertion
        self._baseline: int | None = None
        self._baseline_error_starts: set[int] = set()
        self._baseline_below: set[int] = set()  # starts after the cursor line, in ``data``
        self._rules = rules
        self._blocks = self._rules.blocks
        data = snapshot.data
        self.line_start = data.rfind(b"\n", 0, offset) + 1
        line_end = data.find(b"\n", offset)
        self._line_end = len(data) if line_end < 0 else line_end
        self._following, self._following_end = _following_line(data, self._line_end)
        self._in_brackets = _inside_brackets(snapshot, self.line_start, self._blocks)
        self._closer = body_closer(data, self.line_start, self._line_end, self._rules)

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
        if not self.typing and self._comment_only(tree, end):
            return Verdict(False, 0, 0, "an explicit request on code: a comment alone")
        errors = _errors(tree)
        after = len(errors) + _empty_blocks(tree, self.line_start, end, self._blocks)
        if not after:
            return Verdict(True, 0, 0)
        before = self.baseline_errors()
        if self._broken_around(errors, self.insertion.shift(text)):
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
        never a header with a second copy of the body. With a closer (``}``, ``end``)
        the body waits where the deeper run ends at one on the cursor line's indentation
        (``body_closer``); deeper lines that end otherwise may go on this line's statement,
        and only a finished statement (``;``) is known not to fit above them."""
        before = self._bound_by_lines_below()
        if before is None or self._following is None:
            return True
        after = self.snapshot.data[self.offset + self.insertion.covers(text):
                                   self._line_end].decode("utf-8", "replace")
        deeper = indent(self._following)
        if deeper > indent(before + after) and text.split("\n", 1)[0].strip() \
                and "\n" in text.strip("\n"):
            return False
        line = before + text + after
        last = line.rsplit("\n", 1)[-1]
        if not last.strip() or deeper <= indent(last):
            return True
        code = last.rstrip()
        if self._rules.close and self._closer is None:
            return not code.endswith(";")  # deeper lines that go on this statement, maybe
        return opens_for(line, self._closer, self._rules) or code.endswith("\\")

    def body_waits(self) -> bool:
        """Only a block header fits the cursor line: the next code line is indented
        deeper, the line is in no bracket, and where blocks end with a closer the deeper
        run ends at one on this line's indentation (see ``header_fits``)."""
        if self._bound_by_lines_below() is None or self._following is None:
            return False
        line = self.snapshot.data[self.line_start:self._line_end].decode("utf-8", "replace")
        if indent(self._following) <= indent(line):
            return False
        return not self._rules.close or self._closer is not None

    def _bound_by_lines_below(self) -> str | None:
        """The typed part of the cursor line where the lines below decide what fits on it
        (blocks in the language, a code line below, no bracket around the line or left
        open on it, no ``\\``: otherwise the deeper lines go on this line's statement);
        None where they do not."""
        if not self._blocks or self._in_brackets or self._following is None:
            return None
        before = self.snapshot.data[self.line_start:self.offset].decode("utf-8", "replace")
        if open_brackets(before, self._rules) or before.rstrip().endswith("\\"):
            return None
        return before

    def _comment_only(self, tree: tree_sitter.Tree, end: int) -> bool:
        """The answer is comments and nothing else, on a line where nothing is typed but
        its indentation (after typed code, a comment ends the line: ``x = 1,  /* w */``)."""
        if end <= self.offset or self.snapshot.data[self.line_start:self.offset].strip():
            return False
        leaves = _leaves(tree.root_node, self.offset, end)
        if not leaves or not all("comment" in n.type for n in leaves):
            return False
        # A comment the user started on this line, which the answer goes on with.
        return not any(n.start_byte < self.offset for n in leaves)

    def _broken_around(self, errors: list[tree_sitter.Node], inserted: int) -> bool:
        """An error from the cursor line to the end of the suffix's first code line, with
        the answer in (``inserted``: how far it moved the text after it). One the file
        had before the line was typed does not count when it lies wholly above the cursor
        line's start (an open call the user is filling in) or below its end (a line
        further down that the user has yet to fix)."""
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


def _leaves(root: tree_sitter.Node, start: int, end: int) -> list[tree_sitter.Node]:
    """The tokens that overlap ``[start, end)`` (a comment counts as one token)."""
    found = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.end_byte <= start or node.start_byte >= end:
            continue
        if not node.child_count or "comment" in node.type:
            if node.end_byte > node.start_byte:
                found.append(node)
            continue
        stack.extend(node.children)
    return found


def body_closer(data: bytes, line_start: int, line_end: int, rules: LanguageConfig
                ) -> str | None:
    """In a language whose blocks end with a closer: the closer (``}``, ``)``, ``end``)
    that ends the run of lines indented deeper than the cursor line, when it stands at the
    cursor line's indentation: the body of a block whose header is the cursor line. None
    where no deeper line follows, where the run ends otherwise (a statement that goes on
    over deeper lines, then a sibling), and in a language without a closer."""
    if not rules.close:
        return None
    base = indent(data[line_start:line_end].decode("utf-8", "replace"))
    closers = (rules.close, *rules.closers)
    deeper = False
    for raw in data[line_end + 1:].split(b"\n"):
        line = raw.decode("utf-8", "replace").rstrip()
        if not line.strip():
            continue
        if indent(line) > base:
            deeper = True
            continue
        word = line.strip()
        closer = next((c for c in closers if word.startswith(c)
                       and (len(c) == 1 or (not (word[len(c):] + " ")[0].isalnum()
                            and word[len(c):len(c) + 1] != "_"))), None)
        return closer if deeper and indent(line) == base else None
    return None


def opens_for(line: str, closer: str | None, rules: LanguageConfig) -> bool:
    """The completed cursor line ``line`` opens what ``closer`` ends below it: a block
    (``opens_block``, a ``compound_header`` in a language whose headers have no opener),
    or the bracket that ``closer`` closes, left open innermost. With no closer (blocks by
    indentation) any block or open bracket."""
    last = line.rsplit("\n", 1)[-1]
    stack = open_brackets(line, rules)
    if closer in rules.closers and closer != rules.close:
        return bool(stack) and stack[-1] == rules.closers[closer]  # `)` of `foo(`
    if closer is not None and closer in rules.closers:
        stack = [b for b in stack if b == rules.closers[closer]]  # `}`: a brace, not `(`
    headers_without_opener = rules.compound_header and not rules.header_end
    return (opens_block(last) or bool(stack)
            or bool(headers_without_opener and re.match(rules.compound_header, last)))


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
        if _left_open(logical, rules):
            continue
        if not opens_block(logical):
            return ""
        head = "\n".join(lines[: n + 1]).rstrip()
        return head if _whole_with_a_body(checker, head, typed, rules) else ""
    return ""


def _left_open(logical: str, rules: LanguageConfig) -> bool:
    """Brackets still open on the header's lines: the block's own brace at their end
    (``if (x) {`` where ``}`` ends blocks) opens the body, not a bracket to go on in."""
    code = logical.rstrip()
    if rules.close == "}" and code.endswith("{"):
        code = code[:-1]
    return bool(open_brackets(code, rules))


def _placeholder_bodies(header: str, rules: LanguageConfig) -> list[str]:
    """Bodies for a header with none yet: a placeholder statement one level in (and the
    block's closer, in a language that has one; then also the closer with a comma, where
    the block is an item of a list: an object literal's method, a match arm)."""
    lead = header[: len(header) - len(header.lstrip(" \t"))]
    body = f"\n{lead}    {rules.placeholder or 'pass'}"
    if not rules.close:
        return [body]
    return [body + f"\n{lead}{rules.close}", body + f"\n{lead}{rules.close},"]


def _whole_with_a_body(checker: WholeChecker, head: str, header: str,
                       rules: LanguageConfig) -> bool:
    """``head`` (completing the line ``header`` starts) is whole with a body under it."""
    return any(checker.is_whole(head + body) for body in _placeholder_bodies(header, rules))


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
    checker = WholeChecker(snapshot, offset, Insertion(snapshot, offset), False, rules)
    if checker.is_whole(lead + head):
        return True  # a statement, or a header whose body the file already has
    if not opens_block(typed + head):
        return False
    return _whole_with_a_body(checker, lead + head, typed or head, rules)


def whole_checker(snapshot: Snapshot, offset: int, typing: bool = False) -> WholeChecker:
    """A ``WholeChecker`` with its own insertion and the snapshot's language rules."""
    return WholeChecker(snapshot, offset, Insertion(snapshot, offset), typing,
                        language_config(snapshot.grammar))
