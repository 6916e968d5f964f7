"""Completion cache: an in-memory LRU in front of a persistent ``diskcache`` layer.

The key covers the model, the template, the generation parameters and the exact prompt,
so a hit is exactly what the engine would have produced. Each workspace gets its own
folder, readable by its owner only: no entry crosses workspaces or users.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from collections import OrderedDict
from pathlib import Path
from typing import Any

from lsp_copilot.paths import cache_dir

log = logging.getLogger(__name__)


def cache_root() -> Path:
    return cache_dir() / "completions"


def cache_key(*parts: object) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(repr(part).encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


def workspace_folder(root: Path, workspace: str) -> Path:
    """One folder per workspace (hashed, so paths don't leak into names)."""
    return root / hashlib.sha256(workspace.encode()).hexdigest()[:16]


class CompletionCache:
    """LRU (memory) + diskcache (disk, survives restarts); either layer may be off."""

    def __init__(
        self,
        folder: Path | None,
        memory_entries: int = 512,
        disk_bytes: int = 64 * 1024 * 1024,
        ttl_seconds: float = 7 * 24 * 3600,
    ) -> None:
        self._memory: OrderedDict[str, str] = OrderedDict()
        self._memory_entries = memory_entries
        self._ttl = ttl_seconds
        self._disk: Any = None
        self._writes = True  # off after a write failed (a full disk): reads go on
        self._warned = False
        if folder is not None:
            try:
                self._disk = self._open(folder, disk_bytes)
            except Exception as exc:  # a read-only home, a full disk: memory only
                log.warning("completion cache on disk disabled (%s): %s", folder, exc)

    @staticmethod
    def _open(folder: Path, disk_bytes: int) -> Any:
        import diskcache

        old = os.umask(0o077)  # files and folders created below: owner only
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            os.chmod(folder, 0o700)
            cache = diskcache.Cache(
                str(folder), size_limit=disk_bytes, eviction_policy="least-recently-used"
            )
        finally:
            os.umask(old)
        for path in folder.rglob("*"):
            os.chmod(path, 0o700 if path.is_dir() else 0o600)
        return cache

    def get(self, key: str) -> str | None:
        if key in self._memory:
            self._memory.move_to_end(key)
            return self._memory[key]
        if self._disk is not None:
            try:
                value = self._disk.get(key)
            except Exception as exc:  # a corrupted file: memory only from now on
                self._trouble("read", exc)
                self._disk = None
                value = None
            if isinstance(value, str):
                self._remember(key, value)
                return value
        return None

    def put(self, key: str, value: str) -> None:
        self._remember(key, value)
        if self._disk is not None and self._writes:
            try:
                old = os.umask(0o077)
                try:
                    self._disk.set(key, value, expire=self._ttl)
                finally:
                    os.umask(old)
            except Exception as exc:  # a full disk: what is saved stays readable
                self._trouble("write", exc)
                self._writes = False

    def _trouble(self, what: str, exc: Exception) -> None:
        """One warning per cache, not one per keystroke; completions go on from memory."""
        if not self._warned:
            self._warned = True
            log.warning("completion cache on disk: %s failed (%s: %s); going on from "
                        "memory (what was saved stays on disk)", what, type(exc).__name__, exc)

    def _remember(self, key: str, value: str) -> None:
        self._memory[key] = value
        self._memory.move_to_end(key)
        while len(self._memory) > self._memory_entries:
            self._memory.popitem(last=False)

    def __len__(self) -> int:
        return len(self._memory)

    def close(self) -> None:
        if self._disk is not None:
            self._disk.close()
            self._disk = None


CACHE_FILE = "cache.db"
"""What diskcache keeps in each workspace's folder: with the name, how a folder is known
to be a completion cache (``clear_all`` removes nothing else)."""


class NotACacheFolder(ValueError):
    """``clear_all`` was pointed at a folder that holds no completion cache."""


def is_workspace_cache(path: Path) -> bool:
    """A folder ``workspace_folder`` made: 16 hex digits, not a link, with diskcache's file."""
    return (len(path.name) == 16 and all(c in "0123456789abcdef" for c in path.name)
            and not path.is_symlink() and path.is_dir() and (path / CACHE_FILE).is_file())


def clear_all(root: Path | None = None) -> tuple[int, list[str]]:
    """Remove every workspace's cache under ``root``, and nothing else: returns how many
    were removed and the names of what was left alone. A folder that holds something but
    no workspace cache (the cache folder itself, with logs/ and models/, or any other
    folder) is refused with ``NotACacheFolder``: nothing is removed."""
    root = root or cache_root()
    if not root.is_dir():
        return 0, []
    children = sorted(root.iterdir())
    caches = [c for c in children if is_workspace_cache(c)]
    others = [c.name for c in children if c not in caches]
    if not caches and others:
        shown = ", ".join(others[:5]) + (", ..." if len(others) > 5 else "")
        raise NotACacheFolder(
            f"{root} holds no completion cache ({shown}): nothing removed. The completion "
            f"caches are in {cache_root()} (or the cacheDir setting)")
    for child in caches:
        shutil.rmtree(child, ignore_errors=True)
    return len(caches), others
