"""A tree-sitter tree kept in step with a buffer by incremental re-parsing."""

from __future__ import annotations

from collections.abc import Iterable

import tree_sitter

from lsp_copilot.documents.buffer import ByteEdit


class SyntaxTree:
    """A parser and the latest tree it produced for one document.

    Edits are told to the old tree before re-parsing so tree-sitter can reuse the
    unchanged subtrees: a keystroke costs a fraction of a full parse.
    """

    __slots__ = ("_parser", "_tree")

    def __init__(self, parser: tree_sitter.Parser, data: bytes) -> None:
        self._parser = parser
        self._tree = parser.parse(data)

    @property
    def tree(self) -> tree_sitter.Tree:
        return self._tree

    @property
    def root(self) -> tree_sitter.Node:
        return self._tree.root_node

    def edit(self, e: ByteEdit, data: bytes) -> None:
        """Apply one edit and re-parse ``data`` (the text after the edit)."""
        self.edit_many((e,), data)

    def edit_many(self, edits: Iterable[ByteEdit], data: bytes) -> None:
        """Apply edits in order (each in the coordinates left by the previous), re-parse once."""
        for e in edits:
            self._tree.edit(
                start_byte=e.start_byte,
                old_end_byte=e.old_end_byte,
                new_end_byte=e.new_end_byte,
                start_point=e.start_point,
                old_end_point=e.old_end_point,
                new_end_point=e.new_end_point,
            )
        self._tree = self._parser.parse(data, self._tree)

    def reparse(self, data: bytes) -> None:
        """Parse from scratch, for when the whole text was replaced."""
        self._tree = self._parser.parse(data)

    def copy(self) -> tree_sitter.Tree:
        """A copy safe to read while this tree keeps being edited."""
        return self._tree.copy()
