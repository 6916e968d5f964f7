"""``.lspcopilotignore``: paths a repository keeps out of completion and context.

The file sits at a workspace root and uses gitignore syntax (pathspec's gitwildmatch). It
is read again when it changes (its size and modification time are checked on each
question, one ``stat``), so an edit takes effect without a restart.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

IGNORE_FILE = ".lspcopilotignore"


class RepoIgnores:
    """The ``.lspcopilotignore`` of each workspace root the server knows."""

    def __init__(self) -> None:
        # root -> ((mtime_ns, size) of the file or None when absent, compiled spec or None)
        self._roots: dict[Path, tuple[tuple[int, int] | None, Any]] = {}

    def add(self, root: Path) -> None:
        self._roots.setdefault(root.resolve(), (None, None))

    def remove(self, root: Path) -> None:
        self._roots.pop(root.resolve(), None)

    def roots(self) -> list[Path]:
        return list(self._roots)

    def _spec(self, root: Path) -> Any:
        """The root's compiled rules, read again when the file changed; None without."""
        stamp_spec = self._roots[root]
        try:
            st = os.stat(root / IGNORE_FILE)
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        if stamp == stamp_spec[0]:
            return stamp_spec[1]
        spec = None
        if stamp is not None:
            try:
                import pathspec

                lines = (root / IGNORE_FILE).read_text("utf-8", "replace").splitlines()
                spec = pathspec.GitIgnoreSpec.from_lines(lines)
            except Exception as exc:  # unreadable, or a pattern pathspec refuses
                log.warning("%s ignored: %s", root / IGNORE_FILE, exc)
        self._roots[root] = (stamp, spec)
        return spec

    def reason(self, path: str) -> str | None:
        """Why ``path`` (absolute) is excluded by its root's ``.lspcopilotignore``, or None.
        Roots are kept resolved: a caller checks the resolved spellings of a path too
        (``privacy.spellings``), or a workspace opened through a link escapes its rules."""
        if not self._roots or not path.startswith("/"):
            return None
        for root in self._roots:
            prefix = str(root).rstrip("/") + "/"
            if not path.startswith(prefix):
                continue
            spec = self._spec(root)
            if spec is not None and spec.match_file(path[len(prefix):]):
                return f"excluded by {root / IGNORE_FILE}"
        return None
