"""What the P3 and P4 layers read from the workspace index and keep between builds: each
is rebuilt at every line start, while the files it reads rarely change."""

from __future__ import annotations

from collections import OrderedDict
from functools import lru_cache

from lsp_copilot.context.index.workspace_index import (
    FAMILIES,
    MAX_FILE_BYTES,
    FileEntry,
    WorkspaceIndex,
)
from lsp_copilot.context.layers.blocks import Block
from lsp_copilot.context.layers.similarity import Windows, identifiers, windows

MAX_NEIGHBOURS = 32
"""Files of the same folder searched for P4 snippets (those named most like this one)..."""
MAX_MODULE_SYMBOLS = 30
"""P3 shows at most this many top-level definitions of a module imported whole."""


class LayerCache:
    """Neighbour lists, file windows read from disk and imported blocks, kept per index
    entry or generation (a re-indexed file is a new entry, so nothing goes stale); the
    identifiers of snippet windows per window text, and other buffers' windows per text."""

    def __init__(self) -> None:
        # A rebuild of the edited buffer's windows scans only the few windows that changed.
        self._chunk_words = lru_cache(maxsize=8192)(identifiers)
        # Other open buffers rarely change between builds.
        self.buffer_windows = lru_cache(maxsize=64)(self.windows)
        self._neighbours: OrderedDict[tuple[int, int, str], list[str]] = OrderedDict()
        self._disk: OrderedDict[str, tuple[FileEntry, str, Windows]] = OrderedDict()
        self._imported: OrderedDict[tuple[str, str, tuple[str, ...]],
                                    tuple[FileEntry, list[tuple[str, Block]]]] = OrderedDict()

    def windows(self, text: str) -> Windows:
        """``text``'s snippet windows, their identifiers read through this cache."""
        return windows(text, self._chunk_words)

    def neighbours(self, index: WorkspaceIndex, rel: str, grammar: str) -> list[str]:
        """Files of ``rel``'s folder in its language family, named most like it first
        (cp1252.py next to cp1251.py, test_x.py next to test_y.py)."""
        key = (id(index), index.generation, rel)
        cached = self._neighbours.get(key)
        if cached is not None:
            return cached
        folder, _, name = rel.rpartition("/")
        family = FAMILIES.get(grammar, grammar)
        found = []
        for other in index.folder(folder):
            entry = index.file(other)
            if other == rel or entry is None:
                continue
            if FAMILIES.get(entry.grammar, entry.grammar) != family:
                continue
            other_name = other.rpartition("/")[2]
            common = next((i for i, (a, b) in enumerate(zip(name, other_name, strict=False))
                           if a != b), min(len(name), len(other_name)))
            found.append((-common, other_name, other))
        found.sort()
        self._neighbours[key] = out = [f[2] for f in found[:MAX_NEIGHBOURS]]
        while len(self._neighbours) > 64:
            self._neighbours.popitem(last=False)
        return out

    def disk_windows(self, index: WorkspaceIndex, rel: str) -> tuple[str, Windows]:
        """An indexed file's windows, read from disk once per index entry; nothing for a
        file that now looks private."""
        entry = index.file(rel)
        if entry is None:
            return "", ()
        key = f"{index.root}\0{rel}"
        cached = self._disk.get(key)
        if cached is not None and cached[0] is entry:
            self._disk.move_to_end(key)
            return cached[1], cached[2]
        try:
            data = (index.root / rel).read_bytes()
        except OSError:
            data = b""
        text = ""
        if data and len(data) <= MAX_FILE_BYTES and index.private(str(index.root / rel),
                                                                  data) is None:
            text = data.decode("utf-8", "replace")
        wins = self.windows(text) if text else ()
        self._disk[key] = (entry, text, wins)
        while len(self._disk) > 256:  # (about 15 MB for files of the standard library's size)
            self._disk.popitem(last=False)
        return text, wins

    def imported_blocks(self, index: WorkspaceIndex, target: str, entry: FileEntry,
                        names: tuple[str, ...]) -> list[tuple[str, Block]]:
        """P3's candidates from one imported file, before ranking: (name, block) for the
        names imported from it, else for its first top-level definitions."""
        key = (str(index.root), target, names)
        cached = self._imported.get(key)
        if cached is not None and cached[0] is entry:
            self._imported.move_to_end(key)
            return cached[1]
        top = [d for d in entry.symbols.definitions if d.container is None]
        if names:
            blocks = [(d.name, Block(target, d.start_line, d.summary)) for d in top
                      if d.name in names]
        else:
            blocks = [(d.name, Block(target, d.start_line, d.signature))
                      for d in top[:MAX_MODULE_SYMBOLS]]
        self._imported[key] = (entry, blocks)
        while len(self._imported) > 512:
            self._imported.popitem(last=False)
        return blocks
