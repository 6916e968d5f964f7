"""Questions to running shared engines from outside: their status, and stopping them
(`lsp-copilot engine stop`, or a start that needs the memory an unused engine holds)."""

from __future__ import annotations

import contextlib
import logging
import socket
from pathlib import Path
from typing import Any

from lsp_copilot.engine.shared import wire
from lsp_copilot.engine.shared.runtime import EnginePlace, RuntimeDirError, check_peer, places

log = logging.getLogger(__name__)

STOP_WAIT_S = 60.0
"""How long a stop waits for the engine's processes to be gone (and their memory free)."""


def connect(path: Path, timeout: float | None = 5.0) -> socket.socket | None:
    """A connection to a live engine of this user, or None (no socket, or a stale one:
    nobody listens). A peer of another user is refused (RuntimeDirError)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
        check_peer(sock, path)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    except (OSError, RuntimeDirError):
        sock.close()
        raise
    sock.settimeout(None)
    return sock


def ask(place: EnginePlace, message: dict[str, Any], timeout: float = 5.0
        ) -> dict[str, Any] | None:
    """One question to a running engine; None if nobody answers (a stale socket).
    RuntimeDirError if another user's process answers."""
    try:
        sock = connect(place.socket, timeout)
    except OSError:
        return None
    if sock is None:
        return None
    with sock:
        sock.settimeout(timeout)
        sock.sendall(wire.encode(message))
        try:
            for line in sock.makefile("rb"):
                reply = wire.decode(line)
                if reply.get("id") == message["id"]:
                    return reply
        except (OSError, ValueError):
            return None
    return None


def wait_gone(pid: Any) -> None:
    """Until the engine's process has exited (its EngineCore goes with it)."""
    import psutil

    with contextlib.suppress(psutil.Error, ValueError, TypeError):
        psutil.Process(int(pid)).wait(STOP_WAIT_S)


def stop_unused(folder: Path, keep: str) -> list[str]:
    """Stop this user's loaded engines that no server uses (all but ``keep``): a new engine
    is about to load, and an engine nobody uses must not hold the memory it needs. Each
    engine decides for itself (a server may have attached a moment ago); returns the names
    stopped."""
    stopped = []
    for place in places(folder):
        if place.name == keep:
            continue
        status = ask(place, {"op": "status", "id": "status"})
        if status is None or status.get("clients") != 0:
            continue
        reply = ask(place, {"op": "stop", "id": "stop", "unused": True})
        if reply is not None and reply.get("op") == "stopping":
            wait_gone(status.get("pid"))
            log.info("stopped the unused shared engine %s (%s MB) to make room for %s",
                     place.name, status.get("memory_mb"), keep)
            stopped.append(place.name)
    return stopped
