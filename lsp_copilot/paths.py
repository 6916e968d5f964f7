"""Where lsp-copilot keeps its data on this machine: models, logs, the completion cache and
the acceptance store all live under one cache folder; the shared engines' sockets live in a
private runtime folder, which is also the working folder of the server and its helpers.

A bottom layer: it imports nothing of lsp_copilot, so that every layer may ask it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

CACHE_DIR_ENV = "LSP_COPILOT_CACHE_DIR"
RUNTIME_DIR_ENV = "LSP_COPILOT_RUNTIME_DIR"
PATH_ENVS = (CACHE_DIR_ENV, RUNTIME_DIR_ENV, "LSP_COPILOT_LOG_FILE")
"""Variables naming a path: made absolute before a process leaves its first folder."""


class RuntimeDirError(RuntimeError):
    """The runtime folder is not private to this user: nothing is shared through it."""


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


def runtime_dir() -> Path:
    """``$LSP_COPILOT_RUNTIME_DIR``, else ``$XDG_RUNTIME_DIR/lsp-copilot``, else a
    per-user folder in the temporary directory."""
    explicit = os.environ.get(RUNTIME_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg) and os.path.isdir(xdg):
        return Path(xdg) / "lsp-copilot"
    return Path("/tmp") / f"lsp-copilot-{os.getuid()}"


def check_private(path: Path) -> Path:
    """``path`` if it is a folder of this user that nobody else may enter; else
    RuntimeDirError (someone could have made it first, to listen in or to plant files)."""
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise RuntimeDirError(f"{path} is not a folder of this user: remove it, or set "
                              f"{RUNTIME_DIR_ENV} to a private folder")
    if info.st_mode & 0o077:
        raise RuntimeDirError(f"{path} may be entered by other users (mode "
                              f"{stat.S_IMODE(info.st_mode):o}): run `chmod 700 {path}`")
    return path


def private_dir(path: Path | None = None) -> Path:
    """The runtime folder, created 0700 and checked (``check_private``)."""
    path = path or runtime_dir()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return check_private(path)


def helper_cwd() -> Path:
    """The working folder of the server and every process it starts: the private runtime
    folder (only this user writes there), else ``/`` (only root does). Never the user's
    project: Python looks for modules in the working folder first (``calendar.py`` at a
    project's root would replace the standard library's inside the engine)."""
    try:
        return private_dir()
    except (OSError, RuntimeDirError):
        return Path("/")


def absolute_path_envs(base: Path) -> None:
    """Make relative paths in our path variables absolute against ``base`` (the first
    working folder), so that leaving it does not change what they name."""
    for name in PATH_ENVS:
        value = os.environ.get(name)
        if value and not os.path.isabs(os.path.expanduser(value)):
            os.environ[name] = str(base / value)


LAUNCH_DIR_ENV = "LSP_COPILOT_LAUNCH_DIR"
"""The folder the server was started in (set by `serve` as it leaves it)."""


def leave_launch_folder() -> Path:
    """Move this process to ``helper_cwd()`` after keeping what named the first folder:
    our path variables become absolute, the folder is recorded for relative path settings
    (``anchored``) and taken off ``sys.path`` (``python -m`` puts it first; a module
    imported later, and vLLM's spawned EngineCore, which copies ``sys.path``, would find a
    project's ``calendar.py`` there). Returns the neutral folder."""
    import sys

    try:
        launch = Path.cwd()
    except OSError:  # the folder was removed under us: nothing relative to keep
        launch = None
    if launch is not None:
        absolute_path_envs(launch)
        os.environ[LAUNCH_DIR_ENV] = str(launch)
        sys.path[:] = [p for p in sys.path if p not in ("", ".", str(launch))]
    neutral = helper_cwd()
    os.chdir(neutral)
    return neutral


def anchored(value: str, *, only_existing: bool = False) -> str:
    """A path setting that is relative, made absolute against the folder the server was
    started in (its meaning before the server left that folder). ``only_existing``: the
    value may also be a name (a preset, a hub id), so only a path found there is changed."""
    base = os.environ.get(LAUNCH_DIR_ENV)
    if not value or not base or os.path.isabs(os.path.expanduser(value)):
        return value
    path = Path(base) / value
    if only_existing and not path.exists():
        return value
    return str(path)
