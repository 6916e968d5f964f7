"""What the extra layers (P1-P4) of one build share: the cursor, the file's symbols, the
names referenced near the cursor, the imports resolved in the index, the open buffers."""

from __future__ import annotations

from lsp_copilot.context.context_cache import ContextCache
from lsp_copilot.context.index.same_file import SameFile
from lsp_copilot.context.index.symbols import Definition, references_near
from lsp_copilot.context.index.workspace import Workspace, uri_to_path
from lsp_copilot.context.layers.blocks import Block, line_start
from lsp_copilot.documents.store import Snapshot
from lsp_copilot.language.grammars import LanguageQueries
from lsp_copilot.tokens import TokenCounter

REFERENCE_LINES = 24
"""References are collected from this many lines above the cursor (and the cursor line)."""
MAX_NAMES = 40


def display_path(snapshot: Snapshot, workspace: Workspace | None) -> str:
    """The file's path as the prompt names it: relative to its workspace folder."""
    if workspace is not None:
        rel = workspace.relative(snapshot.uri)
        if rel is not None:
            return rel
    path = uri_to_path(snapshot.uri)
    return path.name if path is not None else snapshot.uri


class LayerInputs:
    """One context build's cursor and what every layer reads about it."""

    def __init__(self, snapshot: Snapshot, offset: int, counter: TokenCounter,
                 q: LanguageQueries, workspace: Workspace | None,
                 cache: ContextCache) -> None:
        assert snapshot.tree is not None
        self.snapshot = snapshot
        self.offset = offset
        self.counter = counter
        self.q = q
        self.workspace = workspace
        self.cache = cache
        # A multi-root workspace: the index of the folder holding this file.
        self.index = workspace.index_for(snapshot.uri) if workspace is not None else None
        self.data = snapshot.data
        self.tree = snapshot.tree
        self.path = display_path(snapshot, workspace)
        self.cursor_row = self.data.count(b"\n", 0, offset)
        self.symbols: SameFile = cache.symbols.read(q, self.tree, self.data, snapshot.uri,
                                                    offset)
        start = line_start(self.data, offset)
        for _ in range(REFERENCE_LINES):
            if start == 0:
                break
            start = line_start(self.data, start - 1)
        # The word being typed is left out: it changes with every keystroke, and the
        # layers built from references should stay put while the user types a word.
        end = offset
        while end > start and (chr(self.data[end - 1]).isalnum() or self.data[end - 1] == 95):
            end -= 1
        found = references_near(q, self.tree, self.data, start, end)[:MAX_NAMES]
        self.references = [name for name, _ in found]
        self.captured = {name for name, captured in found if captured}
        self.rel = workspace.relative(snapshot.uri) if workspace else None
        self.resolved: list[tuple[str, str, tuple[str, ...]]] = []
        if self.index is not None and self.rel is not None:
            self.resolved = self.index.resolve_imports(
                self.rel, q.grammar, ((i.module, i.names) for i in self.symbols.imports))
        self._documents: list[tuple[str, str]] | None = None

    def visible(self, d: Definition, first_line: int) -> bool:
        """Already in the prompt's window (the cursor's own lines)."""
        return d.start_line >= first_line and d.start_line <= self.cursor_row

    def encloses(self, d: Definition) -> bool:
        return d.start_byte <= self.offset < d.end_byte

    def block_for(self, path: str, d: Definition) -> Block:
        return Block(path, d.start_line, d.text)

    def documents(self) -> list[tuple[str, str]]:
        """Open buffers, read once per build."""
        if self._documents is None:
            self._documents = self.workspace.documents() if self.workspace is not None else []
        return self._documents

    def open_and_recent(self) -> tuple[set[str], dict[str, int]]:
        """Open and recently edited files of this file's folder (relative paths)."""
        if self.workspace is None:
            return set(), {}
        ws = self.workspace
        open_files = {r for uri, _ in self.documents()
                      if (r := ws.relative(uri)) is not None and ws.index_for(uri) is self.index}
        recent = {r: tick for uri, tick in ws.recent().items()
                  if (r := ws.relative(uri)) is not None and ws.index_for(uri) is self.index}
        return open_files, recent
