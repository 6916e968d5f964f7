"""Where shared engines live: a private folder of Unix sockets, one per engine.

One engine per model and engine settings per user per machine. Its name is the model plus
a digest of the settings that shape it, so a server whose settings differ starts (or
finds) another engine and never reconfigures one that another window depends on. Only the
user reaches the folder (0700, owned by them), the socket is 0600, and the engine checks
each peer's uid as well (SO_PEERCRED): a folder made too open by hand is refused, not used.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import socket
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_copilot.settings.core import ENGINE_FIELDS, camel
from lsp_copilot.settings.layers import EngineSetup

RUNTIME_DIR_ENV = "LSP_COPILOT_RUNTIME_DIR"
NOT_SHAPING = frozenset({"engine_shared", "engine_backend"})
"""Engine fields that decide whether an engine is shared, not what it computes."""


class RuntimeDirError(RuntimeError):
    """The runtime folder is not private to this user: nothing is shared through it."""


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


def private_dir(path: Path | None = None) -> Path:
    """The runtime folder, created 0700; refused if another user owns it or others may
    enter it (someone could have made it first, to listen in)."""
    path = path or runtime_dir()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise RuntimeDirError(f"{path} is not a folder of this user: remove it, or set "
                              f"{RUNTIME_DIR_ENV} to a private folder")
    if info.st_mode & 0o077:
        raise RuntimeDirError(f"{path} may be entered by other users (mode "
                              f"{stat.S_IMODE(info.st_mode):o}): run `chmod 700 {path}`")
    return path


def engine_fields(settings: EngineSetup) -> dict[str, Any]:
    """The settings that shape an embedded engine, by their wire names."""
    values = {f.name: getattr(group, f.name)
              for group in (settings.engine, settings.remote, settings.supervision)
              for f in dataclasses.fields(group)}
    return {camel(name): values[name] for name in sorted(ENGINE_FIELDS)
            if name not in NOT_SHAPING and not name.startswith("remote_")}


def engine_name(settings: EngineSetup, model_label: str) -> str:
    """``<model>-<digest>``: readable in `engine status`, distinct per settings."""
    digest = hashlib.sha256(json.dumps(engine_fields(settings), sort_keys=True)
                            .encode()).hexdigest()[:10]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model_label.strip("/").split("/")[-1])[:40]
    return f"{slug or 'model'}-{digest}"


@dataclass(frozen=True)
class EnginePlace:
    """The files of one shared engine in the runtime folder."""

    folder: Path
    name: str

    @property
    def socket(self) -> Path:
        return self.folder / f"{self.name}.sock"

    @property
    def next_socket(self) -> Path:
        """Where a compiled copy of the engine listens while it loads, before it takes the
        socket over (not ``*.sock``: `engine status` lists only engines servers can reach)."""
        return self.folder / f"{self.name}.sock.next"

    @property
    def lock(self) -> Path:
        """Held by the server that starts (or restarts) the engine: one start at a time."""
        return self.folder / f"{self.name}.lock"

    def log(self, logs: Path) -> Path:
        return logs / f"engine-{self.name}.log"


def places(folder: Path) -> list[EnginePlace]:
    """Every engine that has a socket in ``folder`` (running or stale)."""
    if not folder.is_dir():
        return []
    return [EnginePlace(folder, p.name[:-len(".sock")]) for p in sorted(folder.glob("*.sock"))]


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (Linux SO_PEERCRED)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def same_user(sock: socket.socket) -> bool:
    """Only this user's processes may use the engine."""
    return peer_uid(sock) == os.getuid()
