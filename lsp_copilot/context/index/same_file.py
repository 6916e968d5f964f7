"""Symbols of the file being edited, re-extracted per keystroke at the cost of one node.

Extraction is cached per top-level node text, so an edit re-extracts only the top-level
definition it touched, and positions are shifted only for the definitions a context build
actually reads. A keystroke inside a huge top-level node (a test class of 4,000 lines)
would still cost a full re-extraction of it: there the previous extraction is used,
slightly stale, while a background thread extracts the new one during a pause in typing.
The cache and that thread belong to a :class:`SameFileSymbols`, which the workspace owns.
"""

from __future__ import annotations

import logging
import threading
import time
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterator
from typing import NamedTuple

import tree_sitter

from lsp_copilot.context.index.symbols import Definition, FileSymbols, Import, extract
from lsp_copilot.language.grammars import LanguageQueries

log = logging.getLogger(__name__)

CHUNK_LIMIT = 20_000
BIG_CHUNK = 12_000
"""Top-level nodes larger than this (bytes) are re-extracted off the request path."""
REFRESH_DELAY = 0.4
"""Seconds without a new request before stale nodes are re-extracted (a pause in typing)."""


class _Named:
    """One top-level node's symbols (positions relative to the node), indexed for reading."""

    __slots__ = ("names", "symbols", "top")

    def __init__(self, symbols: FileSymbols) -> None:
        self.symbols = symbols
        self.names: dict[str, list[Definition]] = {}
        for d in symbols.definitions:
            self.names.setdefault(d.name, []).append(d)
        self.top = tuple(d for d in symbols.definitions if d.container is None)


class _Chunk(NamedTuple):
    row: int
    byte: int
    named: _Named

    @property
    def symbols(self) -> FileSymbols:
        return self.named.symbols


_Key = tuple[str, bytes]  # (grammar, a top-level node's text)
_Slot = tuple[str, int]  # (document and node, index): one pending job per node
_Job = tuple[_Key, LanguageQueries, tree_sitter.Tree, bytes, int]


def _shift(d: Definition, row: int, byte: int) -> Definition:
    return Definition(d.name, d.kind, d.start_line + row, d.end_line + row,
                      d.start_byte + byte, d.end_byte + byte, d.signature, d.summary, d.full,
                      d.container)


def _relative(symbols: FileSymbols, node: tree_sitter.Node) -> FileSymbols:
    row, start = node.start_point.row, node.start_byte
    return FileSymbols(
        tuple(_shift(d, -row, -start) for d in symbols.definitions),
        tuple(Import(i.module, i.names, i.line - row) for i in symbols.imports),
        symbols.package,
        symbols.calls,
    )


def _extract_node(q: LanguageQueries, tree: tree_sitter.Tree, data: bytes,
                  child: tree_sitter.Node) -> _Named:
    return _Named(_relative(extract(q, tree.root_node, data, None, child), child))


class SameFile:
    """Symbols of the file being edited, read lazily chunk by chunk."""

    def __init__(self, chunks: list[_Chunk], owner: SameFileSymbols) -> None:
        self._chunks = chunks
        self._bytes = [c.byte for c in chunks]
        self._owner = owner
        self._names: dict[str, list[int]] | None = None

    def iter_named(self, name: str) -> Iterator[Definition]:
        """Definitions called ``name``, in file order, positioned only as they are read."""
        if self._names is None:
            self._names = self._owner.name_index(self._chunks)
        for i in self._names.get(name, ()):
            c = self._chunks[i]
            for d in c.named.names[name]:
                yield _shift(d, c.row, c.byte)

    def top_level_rows(self) -> Iterator[tuple[int, int, int, Definition]]:
        """(start line, start byte, end byte, definition with relative positions) of the
        top-level definitions: what an outline needs, without a shifted copy of each."""
        for c in self._chunks:
            row, byte = c.row, c.byte
            for d in c.named.top:
                yield d.start_line + row, d.start_byte + byte, d.end_byte + byte, d

    def around(self, offset: int) -> list[Definition]:
        """Definitions that hold byte ``offset`` (outermost first)."""
        i = bisect_right(self._bytes, offset) - 1
        if i < 0:
            return []
        c = self._chunks[i]
        rel = offset - c.byte
        out = []
        for d in c.symbols.definitions:  # sorted by start
            if d.start_byte > rel:
                break
            if rel < d.end_byte:
                out.append(_shift(d, c.row, c.byte))
        return out

    def inside(self, start: int, end: int) -> Iterator[Definition]:
        """Definitions that start within bytes ``start`` .. ``end``, in file order."""
        i = max(0, bisect_right(self._bytes, start) - 1)
        for c in self._chunks[i:]:
            if c.byte >= end:
                break
            for d in c.symbols.definitions:
                if start <= d.start_byte + c.byte < end:
                    yield _shift(d, c.row, c.byte)

    @property
    def imports(self) -> tuple[Import, ...]:
        return tuple(Import(i.module, i.names, i.line + c.row)
                     for c in self._chunks for i in c.symbols.imports)


class SameFileSymbols:
    """Extractions of top-level nodes kept between builds, and the thread that refreshes
    stale ones. The thread runs only while jobs are queued: it ends when it is idle."""

    def __init__(self) -> None:
        self._chunks: OrderedDict[_Key, _Named] = OrderedDict()
        self._name_indexes: OrderedDict[tuple[int, ...],
                                        tuple[list[_Named], dict[str, list[int]]]] = (
            OrderedDict())
        self._stale: OrderedDict[_Slot, _Named] = OrderedDict()
        self._warm: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        self._queue: dict[_Slot, _Job] = {}
        self._due = 0.0
        self._thread: threading.Thread | None = None
        self._idle = threading.Event()
        self._idle.set()

    def read(self, q: LanguageQueries, tree: tree_sitter.Tree, data: bytes,
             uri: str | None = None, offset: int | None = None) -> SameFile:
        """Symbols of a whole file, extracted top-level node by top-level node.

        With ``uri`` and ``offset``, a big node that changed is read from its previous
        extraction, and once the document has been read whole, new nodes away from the
        cursor are extracted in the background (an unbalanced bracket makes the parser
        regroup the rest of the file): this request goes without them, the next have them.
        """
        root = tree.root_node
        chunks: list[_Chunk] = []
        warm = uri is not None and offset is not None and uri in self._warm
        for i, child in enumerate(root.children):
            key = (q.grammar, data[child.start_byte:child.end_byte])
            found = self._chunks.get(key)
            big = child.end_byte - child.start_byte > BIG_CHUNK
            # A big node is known by its first line (``class TestEnum(TestCase):``), which
            # edits inside it leave alone, unlike its text or its index among the children.
            slot = None
            if big and uri is not None:
                head = data[child.start_byte:child.start_byte + 200].split(b"\n", 1)[0]
                slot = (f"{uri} {head!r}", 0)
            if found is None:
                stale = self._stale.get(slot) if slot is not None else None
                near = offset is not None and child.start_byte <= offset <= child.end_byte
                if stale is not None and slot is not None:
                    found = stale
                    self._refresh_later(slot, (key, q, tree.copy(), data, i))
                elif warm and not near:
                    self._refresh_later((f"{uri} #{i}", i), (key, q, tree.copy(), data, i))
                    continue
                else:
                    found = _extract_node(q, tree, data, child)
                    self._store(key, found)
            elif big:
                with self._lock:
                    if key in self._chunks:
                        self._chunks.move_to_end(key)
            if slot is not None:
                self._stale[slot] = found
                self._stale.move_to_end(slot)
                while len(self._stale) > 256:
                    self._stale.popitem(last=False)
            if found.symbols.definitions or found.symbols.imports:
                chunks.append(_Chunk(child.start_point.row, child.start_byte, found))
        if uri is not None:
            self._warm[uri] = None
            self._warm.move_to_end(uri)
            while len(self._warm) > 256:
                self._warm.popitem(last=False)
        return SameFile(chunks, self)

    def name_index(self, chunks: list[_Chunk]) -> dict[str, list[int]]:
        """name -> indexes of the chunks defining it, per sequence of chunks (by identity;
        the list kept with it holds them alive, so an identity is never reused while
        cached). Consecutive builds mostly see the same chunks: made once, not per build."""
        key = tuple(id(c.named) for c in chunks)
        found = self._name_indexes.get(key)
        if found is not None:
            self._name_indexes.move_to_end(key)
            return found[1]
        index: dict[str, list[int]] = {}
        for i, c in enumerate(chunks):
            for name in c.named.names:
                index.setdefault(name, []).append(i)
        self._name_indexes[key] = ([c.named for c in chunks], index)
        while len(self._name_indexes) > 8:
            self._name_indexes.popitem(last=False)
        return index

    def settled(self, timeout: float) -> bool:
        """Wait until no re-extraction is queued or running (False on timeout)."""
        return self._idle.wait(timeout)

    def _store(self, key: _Key, symbols: _Named) -> None:
        with self._lock:
            self._chunks[key] = symbols
            self._chunks.move_to_end(key)
            while len(self._chunks) > CHUNK_LIMIT:
                self._chunks.popitem(last=False)

    def _refresh_later(self, slot: _Slot, job: _Job) -> None:
        with self._lock:
            self._queue[slot] = job
            self._due = time.monotonic() + REFRESH_DELAY
            self._idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._refresh, daemon=True,
                                                name="lsp-copilot-symbols")
                self._thread.start()

    def _refresh(self) -> None:
        while True:
            # Wait for a pause in typing: extraction is Python work that would hold the GIL
            # while the next keystroke's context is built.
            while (left := self._due - time.monotonic()) > 0:
                time.sleep(left)
            with self._lock:
                jobs = list(self._queue.values())
                self._queue.clear()
                if not jobs:
                    self._thread = None
                    self._idle.set()
                    return
            for key, q, tree, data, index in jobs:
                try:
                    self._store(key, _extract_node(q, tree, data, tree.root_node.children[index]))
                except Exception:  # a bad node costs its symbols, never the thread
                    log.exception("re-extracting the symbols of a node failed")
