"""Open documents: text, version and syntax tree, updated synchronously on every edit.

The LSP handlers call :meth:`DocumentStore.change` with positions exactly as the
client sent them; they are turned into byte offsets here, once. Completion code
reads :class:`Snapshot` objects, which never change under it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import tree_sitter

from lsp_copilot.documents.buffer import Buffer, ByteEdit, Encoding, PositionError
from lsp_copilot.documents.tree import SyntaxTree
from lsp_copilot.language.ids import language_for, parser_for

Range = tuple[int, int, int, int]
Change = tuple[Range | None, str]


class DocumentError(ValueError):
    """A request about a document the store does not hold."""


@dataclass(frozen=True)
class Snapshot:
    """One version of a document, safe to read while edits continue."""

    uri: str
    version: int
    language_id: str
    grammar: str | None
    text: str
    data: bytes
    tree: tree_sitter.Tree | None
    too_large: bool
    binary: bool
    out_of_sync: str | None = None  # why our text may differ from the editor's


class _Document:
    __slots__ = ("binary", "buffer", "grammar", "language_id", "out_of_sync", "syntax",
                 "too_large", "version")

    def __init__(self, language_id: str, grammar: str | None, version: int, text: str) -> None:
        self.language_id = language_id
        self.grammar = grammar
        self.version = version
        self.buffer = Buffer(text)
        self.syntax: SyntaxTree | None = None
        self.too_large = False
        self.binary = False
        self.out_of_sync: str | None = None


def _path_of(uri: str) -> str:
    """Enough of a path for extension lookup; uris need not be file: uris."""
    return uri.split("?", 1)[0].split("#", 1)[0]


class DocumentStore:
    """All open documents by uri.

    Documents over ``max_parse_bytes``, binary ones (containing NUL) and those
    without a grammar are still tracked and edited, just never parsed: a huge or
    odd file must not stall the event loop, yet a later edit may make it parseable.
    """

    def __init__(self, max_parse_bytes: int = 2_000_000) -> None:
        self.max_parse_bytes = max_parse_bytes
        self._docs: dict[str, _Document] = {}

    def __contains__(self, uri: object) -> bool:
        return uri in self._docs

    def __len__(self) -> int:
        return len(self._docs)

    def uris(self) -> list[str]:
        return list(self._docs)

    def _get(self, uri: str) -> _Document:
        doc = self._docs.get(uri)
        if doc is None:
            raise DocumentError(f"unknown document {uri!r} (not opened, or already closed)")
        return doc

    def open(self, uri: str, language_id: str, version: int, text: str) -> None:
        """Track a document; re-opening an open uri replaces it (clients do this)."""
        grammar = language_for(language_id, _path_of(uri))
        doc = _Document(language_id, grammar, version, text)
        self._docs[uri] = doc
        self._sync_tree(doc, [], fresh=True)

    def change(
        self,
        uri: str,
        version: int,
        changes: Sequence[Change],
        encoding: Encoding,
    ) -> None:
        """Apply a didChange notification's changes in order, all or nothing.

        Each change is ((start_line, start_char, end_line, end_char) in ``encoding``
        units, text), or (None, text) for the full content. The edits are made on a
        copy of the buffer; the tree is edited per change and re-parsed once for the batch.

        A batch that cannot apply (a bad range, a version that goes backwards, an unknown
        document) raises DocumentError/PositionError and leaves the document marked out of
        sync: its partial edits are refused until the client sends the full content (or
        opens it again), which resynchronizes it.
        """
        full = max((i for i, (rng, _) in enumerate(changes) if rng is None), default=None)
        doc = self._docs.get(uri)
        if doc is None:
            if full is None:
                raise DocumentError(
                    f"unknown document {uri!r} (not opened, or already closed)")
            self.open(uri, "", version, changes[full][1])  # resync from the full content
            self.change(uri, version, changes[full + 1:], encoding)
            return
        if full is None:
            if doc.out_of_sync is not None:
                raise DocumentError(f"{uri} is out of sync ({doc.out_of_sync}); edit ignored "
                                    "until the client sends the full text")
            if version < doc.version:
                doc.out_of_sync = f"version {version} after {doc.version}"
                raise DocumentError(f"{uri}: version {version} goes backwards (have "
                                    f"{doc.version}); waiting for the full text")
        buffer = doc.buffer.copy()
        edits: list[ByteEdit] = []
        fresh = False
        try:
            for rng, text in changes:
                if rng is None:
                    buffer = Buffer(text)
                    edits.clear()
                    fresh = True
                    continue
                start_line, start_char, end_line, end_char = rng
                start = buffer.offset(start_line, start_char, encoding)
                end = buffer.offset(end_line, end_char, encoding)
                if end < start:  # a reversed range: be lenient, as editors are
                    start, end = end, start
                edits.append(buffer.replace(start, end, text))
        except PositionError as exc:
            doc.out_of_sync = f"an edit at a position it does not have: {exc}"
            raise
        doc.buffer = buffer
        doc.version = version
        doc.out_of_sync = None
        self._sync_tree(doc, edits, fresh=fresh)

    def _sync_tree(self, doc: _Document, edits: list[ByteEdit], *, fresh: bool) -> None:
        """Bring the tree in line with the buffer, or drop it if it must not be parsed."""
        data = doc.buffer.data
        doc.too_large = len(data) > self.max_parse_bytes
        doc.binary = b"\x00" in data
        if not doc.grammar or doc.too_large or doc.binary:
            doc.syntax = None
        elif doc.syntax is None:  # a parser only for a new tree, not at every keystroke
            parser = parser_for(doc.grammar)
            doc.syntax = SyntaxTree(parser, data) if parser is not None else None
        elif fresh:
            doc.syntax.reparse(data)
        else:
            doc.syntax.edit_many(edits, data)

    def close(self, uri: str) -> None:
        """Forget a document; closing an unknown uri is a no-op (clients race on it)."""
        self._docs.pop(uri, None)

    def out_of_sync(self, uri: str) -> str | None:
        return self._get(uri).out_of_sync

    def unparsed_reason(self, uri: str) -> str | None:
        """Why the document is tracked but not parsed ("binary", "too large"), if it is."""
        doc = self._get(uri)
        return "binary" if doc.binary else "too large" if doc.too_large else None

    def snapshot(self, uri: str) -> Snapshot:
        doc = self._get(uri)
        return Snapshot(
            uri=uri,
            version=doc.version,
            language_id=doc.language_id,
            grammar=doc.grammar,
            text=doc.buffer.text,
            data=doc.buffer.data,
            tree=doc.syntax.copy() if doc.syntax is not None else None,
            too_large=doc.too_large,
            binary=doc.binary,
            out_of_sync=doc.out_of_sync,
        )

    def version(self, uri: str) -> int:
        return self._get(uri).version

    def buffer(self, uri: str) -> Buffer:
        """The live buffer, for position conversion; do not edit it directly."""
        return self._get(uri).buffer

    def get_offset(self, uri: str, line: int, character: int, encoding: Encoding) -> int:
        return self._get(uri).buffer.offset(line, character, encoding)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._docs))
