"""Decide whether and how much to complete at the cursor: none, single-line or multi-line.

The text around the cursor decides most cases; the ``@comment`` and ``@string`` captures of
``grammars/<language>/scope.scm`` say whether the cursor is in prose (a word typed in a
comment or a string gets no completion). Languages without queries fall back to node types.
"""

from __future__ import annotations

from typing import Literal, Protocol

import tree_sitter

from lsp_copilot.language.grammars import queries_for
from lsp_copilot.language.scopes import scopes_at

Mode = Literal["none", "single-line", "multi-line"]

BLOCK_OPENERS = (":", "{", "(", "[", "=>", " do", " then", "->")


class Parsed(Protocol):
    """What the mode is decided from: a document's bytes and syntax tree (a snapshot of
    ``documents.store`` is one)."""

    @property
    def grammar(self) -> str | None: ...
    @property
    def data(self) -> bytes: ...
    @property
    def tree(self) -> tree_sitter.Tree | None: ...


def is_word_char(ch: str) -> bool:
    """A character of an identifier."""
    return ch.isalnum() or ch == "_"


def _in_comment(snapshot: Parsed, offset: int) -> bool:
    if snapshot.tree is None:
        return False
    q = queries_for(snapshot.grammar)
    if q is not None:
        scopes = scopes_at(q, snapshot.tree, offset)
        return scopes.in_comment or scopes.in_string
    node = snapshot.tree.root_node.descendant_for_byte_range(max(0, offset - 1), offset)
    while node is not None:
        if "comment" in node.type:
            return True
        node = node.parent
    return False


def _open_quote(before: str) -> bool:
    """An unterminated string on the line (trees show it as an ERROR node, not a string)."""
    return any(before.count(q) % 2 == 1 for q in ('"', "'", "`"))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def room_for_block(data: bytes, line_end: int, level: int) -> bool:
    """The file leaves room for a block of lines at ``line_end`` (the end of the cursor
    line): its next code line is indented no deeper than ``level`` (a dedent, the end of
    the scope) or there is none. A deeper one is code the block already has: a multi-line
    answer there would write a second copy of it."""
    for line in data[line_end:].decode("utf-8", "replace").split("\n"):
        if line.strip():
            return _indent(line) <= level
    return True


def completion_mode(snapshot: Parsed, offset: int, explicit: bool = False) -> Mode:
    """Pick the mode from the line around ``offset`` (a byte offset into ``snapshot.data``);
    ``explicit``: the user asked, on an empty line with room it gets what the block wants."""
    data = snapshot.data
    line_start = data.rfind(b"\n", 0, offset) + 1
    line_end = data.find(b"\n", offset)
    if line_end < 0:
        line_end = len(data)
    before = data[line_start:offset].decode("utf-8", "replace")
    after = data[offset:line_end].decode("utf-8", "replace").rstrip("\r")
    if after[:1] and is_word_char(after[0]) and before[-1:] and is_word_char(before[-1]):
        return "none"  # in the middle of a word: nothing sensible to insert
    if before[-1:] and is_word_char(before[-1]) and (
            _in_comment(snapshot, offset) or _open_quote(before)):
        return "none"  # typing prose in a comment
    if after.strip():
        return "single-line"
    if before.strip():
        return "single-line"
    prev = data[:line_start].rstrip().decode("utf-8", "replace").splitlines()
    if prev and prev[-1].rstrip().endswith(BLOCK_OPENERS) and room_for_block(
            data, line_end, _indent(prev[-1])):
        return "multi-line"
    if explicit and room_for_block(data, line_end, max(0, len(before) - 1)):
        return "multi-line"  # asked for on an empty line with room: the block it starts
    # An empty line elsewhere: one line. A multi-line answer costs seconds on a CPU and
    # mostly lands after the user has moved on (measured with `bench typing`).
    return "single-line"
