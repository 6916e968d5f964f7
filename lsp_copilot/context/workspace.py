"""What the context engine knows beyond the current buffer: the index, open buffers and
recent edits. The server owns one; ``lsp-copilot context`` and the bench make their own.

Edits reach the index off the event loop: :meth:`Workspace.edited` records the new text
and a worker thread re-indexes the file a moment later (coalescing bursts of keystrokes).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsp_copilot.context.index import WorkspaceIndex

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
    """Index + open documents + recently edited files, as the context engine reads them."""

    def __init__(
        self,
        index: WorkspaceIndex | None = None,
        documents: Callable[[], Iterable[tuple[str, str]]] | None = None,
    ) -> None:
        self.index = index
        self._documents = documents or (lambda: ())
        self._recent: OrderedDict[str, int] = OrderedDict()
        self._tick = 0
        self._pending: dict[str, bytes | None] = {}
        self._wake = threading.Event()
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
        self._relative: dict[str, str | None] = {}
        self._edit_lines: dict[str, int] = {}

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
        if self.index is None:
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
        if self.index is not None and path is not None:
            self.index.remove(path)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            time.sleep(REINDEX_DELAY)  # let a burst of keystrokes settle
            with self._lock:
                pending, self._pending = self._pending, {}
                self._wake.clear()
            for path, data in sorted(pending.items()):
                try:
                    if self.index is not None:
                        self.index.update(path, data)
                except Exception:
                    log.exception("re-indexing %s failed", path)

    def flush(self) -> None:
        """Apply pending re-indexing now, on this thread (tests, the CLI)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for path, data in sorted(pending.items()):
            if self.index is not None:
                self.index.update(path, data)

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
        """The uri's path in the index (cached: resolving a path costs system calls)."""
        if self.index is None:
            return None  # not cached: the index may come later (built after `initialized`)
        if uri in self._relative:
            return self._relative[uri]
        path = uri_to_path(uri)
        rel = self.index.relative(path) if path is not None else None
        if len(self._relative) > 4096:
            self._relative.clear()
        self._relative[uri] = rel
        return rel
