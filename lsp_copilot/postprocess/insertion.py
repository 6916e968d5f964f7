"""The document at one cursor with a suggestion inserted, parsed once per text.

Every check that reads the document with the answer in it (whole, the block it fills,
safety) asks the same ``Insertion``: a text is inserted and re-parsed the first time one
of them asks, and the others read that tree. The deadline's cut tries the streamed text
line by line through the same object, so the final answer is usually parsed already.
"""

from __future__ import annotations

from collections.abc import Callable

import tree_sitter

from lsp_copilot.documents.store import Snapshot
from lsp_copilot.language.ids import parser_for

KEPT_TREES = 16
"""Trees kept per cursor: the texts one request tries (its cuts, the alternatives)."""


def _point(data: bytes, offset: int) -> tuple[int, int]:
    return data.count(b"\n", 0, offset), offset - (data.rfind(b"\n", 0, offset) + 1)


def edited_tree(snapshot: Snapshot, start: int, old_end: int, new: bytes
                ) -> tree_sitter.Tree | None:
    """The snapshot's tree with ``data[start:old_end]`` replaced by ``new``: an incremental
    re-parse of a copy (about a millisecond in a large file), None without a grammar."""
    if snapshot.grammar is None or snapshot.tree is None:
        return None
    parser = parser_for(snapshot.grammar)
    if parser is None:
        return None
    data = snapshot.data
    tree = snapshot.tree.copy()
    start_point = _point(data, start)
    if b"\n" in new:
        end_point = (start_point[0] + new.count(b"\n"), len(new) - new.rfind(b"\n") - 1)
    else:
        end_point = (start_point[0], start_point[1] + len(new))
    tree.edit(start_byte=start, old_end_byte=old_end, new_end_byte=start + len(new),
              start_point=start_point, old_end_point=_point(data, old_end),
              new_end_point=end_point)
    return parser.parse(data[:start] + new + data[old_end:], tree)


class Insertion:
    """``snapshot`` with candidate texts inserted at ``offset``; each parsed once. A text
    takes over ``covers(text)`` bytes right of the cursor (closers the editor put there
    that the text writes again, ``brackets.covered``): the document is read as the editor
    leaves it when the suggestion is accepted."""

    def __init__(self, snapshot: Snapshot, offset: int,
                 covers: Callable[[str], int] = lambda text: 0) -> None:
        self.snapshot = snapshot
        self.offset = offset
        self.covers = covers
        self._trees: dict[str, tree_sitter.Tree | None] = {}
        self.parses = 0  # re-parses done (tests read it: one per distinct text)

    def shift(self, text: str) -> int:
        """How far the text after the insertion moves: bytes inserted, less those taken
        over."""
        return len(text.encode("utf-8")) - self.covers(text)

    def tree(self, text: str) -> tree_sitter.Tree | None:
        """The document's tree with ``text`` inserted; None without a grammar."""
        if text not in self._trees:
            if len(self._trees) >= KEPT_TREES:
                del self._trees[next(iter(self._trees))]
            self.parses += 1
            self._trees[text] = edited_tree(self.snapshot, self.offset,
                                            self.offset + self.covers(text),
                                            text.encode("utf-8"))
        return self._trees[text]

    def data(self, text: str) -> bytes:
        """The document's bytes with ``text`` inserted."""
        data = self.snapshot.data
        return (data[: self.offset] + text.encode("utf-8")
                + data[self.offset + self.covers(text):])
