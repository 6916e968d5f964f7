"""Where lsp-copilot keeps its data on this machine: models, logs, the completion cache and
the acceptance store all live under one cache folder.

A bottom layer: it imports nothing of lsp_copilot, so that every layer may ask it.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_ENV = "LSP_COPILOT_CACHE_DIR"


def cache_dir() -> Path:
    """``$LSP_COPILOT_CACHE_DIR``, else ``$XDG_CACHE_HOME/lsp-copilot``, else
    ``~/.cache/lsp-copilot``."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG spec says relative values are invalid and must be ignored.
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "lsp-copilot"
    return Path.home() / ".cache" / "lsp-copilot"
