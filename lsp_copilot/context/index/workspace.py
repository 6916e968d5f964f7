"""What the context engine knows beyond the current buffer: the index of each workspace
folder, open buffers and recent edits. The server owns one; ``lsp-copilot context`` and the
bench make their own (with one folder).

A multi-root workspace has one index per folder: a file's layers come from the index of
the folder that holds it (imports resolve within that folder, names are looked up there).

Edits reach the index off the event loop: :meth:`Workspace.edited` records the new text
and a worker thread re-indexes the file a moment later (coalescing bursts of keystrokes).
The workspace also owns what context builds keep for the next ones (its ``cache``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsp_copilot.context.context_cache import ContextCache
from lsp_copilot.context.index.workspace_index import WorkspaceIndex

log = logging.getLogger(__name__)

RECENT_LIMIT = 32
REINDEX_DELAY = 1.5
"""Seconds an edited buffer waits before its re-indexing (bursts of keys cost one)."""


def uri_to_path(uri: str) -> Path | None:
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return None
    return Path(unquote(parsed.path))


class Workspace:
    """Indexes + open documents + recently edited files, as the context engine reads them."""

    def __init__(
        self,
        index: WorkspaceIndex | None = None,
        documents: Callable[[], Iterable[tuple[str, str]]] | None = None,
    ) -> None:
        self._indexes: dict[Path, WorkspaceIndex] = {}
        if index is not None:
            self._indexes[index.root] = index
        self._documents = documents or (lambda: ())
        self._recent: OrderedDict[str, int] = OrderedDict()
        self._tick = 0
        self._pending: dict[str, bytes | None] = {}
        self._wake = threading.Event()
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
        self._relative: dict[str, tuple[WorkspaceIndex, str] | None] = {}
        self._edit_lines: dict[str, int] = {}
        self.cache = ContextCache()  # what context builds keep for the next ones

    # -- folders ------------------------------------------------------------------------
    @property
    def index(self) -> WorkspaceIndex | None:
        """The first folder's index (the only one outside a multi-root workspace)."""
        return next(iter(self._indexes.values()), None)

    def indexes(self) -> list[WorkspaceIndex]:
        return list(self._indexes.values())

    def add_index(self, index: WorkspaceIndex) -> bool:
        """Index one more folder (False when it is already indexed)."""
        if index.root in self._indexes:
            return False
        self._indexes[index.root] = index
        self._relative.clear()
        return True

    def remove_index(self, root: Path) -> WorkspaceIndex | None:
        """Forget a folder's index (a folder removed from the workspace)."""
        gone = self._indexes.pop(root.resolve(), None)
        self._relative.clear()
        return gone

    def index_for_path(self, path: Path) -> WorkspaceIndex | None:
        """The index of the innermost folder holding ``path``."""
        best: WorkspaceIndex | None = None
        for root, index in list(self._indexes.items()):
            inside = path == root or root in path.parents
            if inside and (best is None or len(root.parts) > len(best.root.parts)):
                best = index
        return best

    def index_for(self, uri: str) -> WorkspaceIndex | None:
        found = self._locate(uri)
        return found[0] if found is not None else None

    # -- inputs (event loop) ----------------------------------------------------------
    def edited(self, uri: str, data: bytes | None = None, line: int | None = None) -> None:
        """A buffer changed (``data``: its new content; ``line``: where, 0-based) or a file
        changed on disk (None)."""
        self._tick += 1
        self._recent[uri] = self._tick
        if line is not None:
            self._edit_lines[uri] = line
        self._recent.move_to_end(uri)
        while len(self._recent) > RECENT_LIMIT:
            gone, _ = self._recent.popitem(last=False)
            self._edit_lines.pop(gone, None)
        self.reindex(uri, data)

    def reindex(self, uri: str, data: bytes | None = None) -> None:
        if not self._indexes:
            return
        path = uri_to_path(uri)
        if path is None:
            return
        with self._lock:
            self._pending[str(path)] = data
        self._wake.set()
        if self._worker is None:
            self._worker = threading.Thread(target=self._run, name="lsp-copilot-reindex",
                                            daemon=True)
            self._worker.start()

    def removed(self, uri: str) -> None:
        path = uri_to_path(uri)
        index = self.index_for_path(_resolved(path)) if path is not None else None
        if index is not None and path is not None:
            index.remove(path)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            time.sleep(REINDEX_DELAY)  # let a burst of keystrokes settle
            with self._lock:
                pending, self._pending = self._pending, {}
                self._wake.clear()
            for path, data in sorted(pending.items()):
                try:
                    self._update(path, data)
                except Exception:
                    log.exception("re-indexing %s failed", path)

    def _update(self, path: str, data: bytes | None) -> None:
        index = self.index_for_path(_resolved(Path(path)))
        if index is not None:
            index.update(path, data)

    def flush(self) -> None:
        """Apply pending re-indexing now, on this thread (tests, the CLI)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for path, data in sorted(pending.items()):
            self._update(path, data)

    # -- reads (context building) -----------------------------------------------------
    def documents(self) -> list[tuple[str, str]]:
        """Open buffers (uri, text)."""
        return list(self._documents())

    def recent_edits(self) -> list[tuple[str, int]]:
        """(uri, line of the last edit), most recent first."""
        return [(uri, self._edit_lines[uri]) for uri in reversed(self._recent)
                if uri in self._edit_lines]

    def recent(self) -> dict[str, int]:
        """Recently edited uris with a recency tick (higher is more recent)."""
        return dict(self._recent)

    def relative(self, uri: str) -> str | None:
        """The uri's path in the index of its folder (None outside every folder)."""
        found = self._locate(uri)
        return found[1] if found is not None else None

    def _locate(self, uri: str) -> tuple[WorkspaceIndex, str] | None:
        """(index, relative path) of the folder holding ``uri``; cached: resolving a path
        costs system calls. Not cached while there is no index (it comes after
        `initialized`)."""
        if not self._indexes:
            return None
        if uri in self._relative:
            return self._relative[uri]
        path = uri_to_path(uri)
        found = None
        if path is not None:
            index = self.index_for_path(_resolved(path))
            rel = index.relative(path) if index is not None else None
            found = (index, rel) if index is not None and rel is not None else None
        if len(self._relative) > 4096:
            self._relative.clear()
        self._relative[uri] = found
        return found


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path
