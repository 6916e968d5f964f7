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
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_copilot.paths import (  # noqa: F401 (where the runtime folder is, and its check)
    RUNTIME_DIR_ENV,
    RuntimeDirError,
    check_private,
    private_dir,
    runtime_dir,
)
from lsp_copilot.settings.core import ENGINE_FIELDS, camel
from lsp_copilot.settings.layers import EngineSetup

NOT_SHAPING = frozenset({"engine_shared", "engine_backend"})
"""Engine fields that decide whether an engine is shared, not what it computes."""


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
    """Every engine that has a socket in ``folder`` (running or stale). The folder is
    checked as a start checks it: one another user could write to is refused
    (RuntimeDirError), never read."""
    if not os.path.lexists(folder):
        return []
    check_private(folder)
    return [EnginePlace(folder, p.name[:-len(".sock")]) for p in sorted(folder.glob("*.sock"))]


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (Linux SO_PEERCRED)."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


def same_user(sock: socket.socket) -> bool:
    """Whether the peer runs as this user (both ends check: only this user's processes may
    use an engine, and a server talks only to an engine of its own user). Without
    SO_PEERCRED (not Linux) the private folder is the only guard."""
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    return peer_uid(sock) == os.getuid()


def check_peer(sock: socket.socket, path: Path) -> None:
    """RuntimeDirError unless the engine listening at ``path`` runs as this user."""
    if not same_user(sock):
        raise RuntimeDirError(f"the process listening on {path} runs as uid "
                              f"{peer_uid(sock)}, not as this user: refused")
