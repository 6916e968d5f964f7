"""Decide whether and how much to complete at the cursor: none, single-line or multi-line.

The spine uses the text around the cursor and the syntax node under it; the context
engine refines this with per-language queries in ``grammars/``.
"""

from __future__ import annotations

from typing import Literal

from lsp_copilot.documents.store import Snapshot

Mode = Literal["none", "single-line", "multi-line"]

BLOCK_OPENERS = (":", "{", "(", "[", "=>", " do", " then", "->")


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _in_comment(snapshot: Snapshot, offset: int) -> bool:
    if snapshot.tree is None:
        return False
    node = snapshot.tree.root_node.descendant_for_byte_range(max(0, offset - 1), offset)
    while node is not None:
        if "comment" in node.type:
            return True
        node = node.parent
    return False


def completion_mode(snapshot: Snapshot, offset: int) -> Mode:
    """Pick the mode from the line around ``offset`` (a byte offset into the snapshot)."""
    data = snapshot.data
    line_start = data.rfind(b"\n", 0, offset) + 1
    line_end = data.find(b"\n", offset)
    if line_end < 0:
        line_end = len(data)
    before = data[line_start:offset].decode("utf-8", "replace")
    after = data[offset:line_end].decode("utf-8", "replace").rstrip("\r")
    if after[:1] and _is_word(after[0]) and before[-1:] and _is_word(before[-1]):
        return "none"  # in the middle of a word: nothing sensible to insert
    if before[-1:] and _is_word(before[-1]) and _in_comment(snapshot, offset):
        return "none"  # typing prose in a comment
    if after.strip():
        return "single-line"
    if before.strip():
        return "single-line"
    prev = data[:line_start].rstrip().decode("utf-8", "replace").splitlines()
    if prev and prev[-1].rstrip().endswith(BLOCK_OPENERS):
        return "multi-line"
    return "multi-line" if prev else "single-line"
