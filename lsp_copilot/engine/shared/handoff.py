"""A shared engine that loaded eager hands its socket over to a compiled copy of itself.

On a CPU torch.compile makes the typing model decode about 1.5 times as fast but adds about
two minutes to a load, and the first suggestion of the day should not wait for it. So the
engine loads eager and serves; once the machine's CPU is quiet it starts a copy of itself
(`engine host --replaces INODE`, enforceEager false) that loads on a socket of its own
(``EnginePlace.next_socket``), warms up, and renames that socket over the engine's: one
atomic step after which every new connection reaches the copy. The old engine finds its
socket gone, tells its servers ``moved`` (each finishes its calls, then reconnects) and
exits once they have left. Two processes, not two engines in one: vLLM's in-process
EngineCore keeps global state (its distributed group, the compile config) that a second
engine in the same process would collide with, and an exiting process frees all its memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import time
from pathlib import Path

from lsp_copilot.engine.shared.runtime import EnginePlace

log = logging.getLogger(__name__)

QUIET_SHARE = 0.5
"""The copy starts loading once the machine's CPU has been busy less than this share for
QUIET_TICKS ticks in a row: not while another engine loads, nor while the user types."""
QUIET_TICKS = 3
QUIET_TICK_S = 2.0
QUIET_LIMIT_S = 300.0
"""Loaded anyway after this long: a machine that is never quiet still gets the faster
engine."""
SOCKET_WAIT_S = 60.0
COPY_LIMIT_S = 900.0
"""A copy that has not taken over after this long is stuck (a compile takes about 2
minutes): it is stopped and the eager engine serves on."""


async def quiet_cpu(done: asyncio.Event, tick_s: float = QUIET_TICK_S,
                    limit_s: float = QUIET_LIMIT_S) -> bool:
    """Until the CPU has been quiet for a while (or ``limit_s``); False if ``done`` was set
    meanwhile (the engine is stopping: no copy then)."""
    import psutil

    psutil.cpu_percent(None)  # starts the first interval
    quiet, waited = 0, 0.0
    while quiet < QUIET_TICKS and waited < limit_s:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), tick_s)
        if done.is_set():
            return False
        waited += tick_s
        quiet = quiet + 1 if psutil.cpu_percent(None) < QUIET_SHARE * 100 else 0
    return not done.is_set()


def start(place: EnginePlace, command: list[str]) -> bool:
    """The copy, once its socket is there (False: it never opened one). It detaches as
    every engine does: it is nobody's child, since the old engine's exit ends its own
    children and must not end the copy that serves after it. Its output goes to this
    engine's log."""
    log.info("loading a compiled copy of this engine in the background")
    try:
        subprocess.run(command, stdin=subprocess.DEVNULL, timeout=SOCKET_WAIT_S, check=False,
                       cwd=place.folder)  # never a user's folder (engine/shared/client.py)
    except (OSError, subprocess.SubprocessError):
        log.exception("the compiled copy could not be started")
        return False
    deadline = time.monotonic() + SOCKET_WAIT_S
    while not place.next_socket.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def pending(place: EnginePlace, started: bool, planned: bool, in_place: bool) -> bool:
    """Whether this engine is still to be replaced by its copy (`bench typing` waits):
    waiting for a quiet CPU, compiling, or handed over and waiting for its servers."""
    if started:
        return not in_place or place.next_socket.exists()
    return planned and in_place


def describe(place: EnginePlace, started: bool, planned: bool, in_place: bool) -> str:
    """The copy's state for `engine status` (``in_place``: this engine still holds the
    socket); "" when there is none."""
    if not started:
        return "waiting for a quiet CPU to compile a faster copy" if planned else ""
    if not in_place:
        return "handed over to its compiled copy: exits once its servers moved"
    if place.next_socket.exists():
        return "compiling a faster copy"
    return "the compiled copy exited: see the engine's log"


def stop(place: EnginePlace) -> None:
    """A copy that has not taken over goes with its engine (nobody would reach it)."""
    from lsp_copilot.engine.shared import wire
    from lsp_copilot.engine.shared.control import connect

    try:
        sock = connect(place.next_socket, 2.0)
    except OSError:
        return
    if sock is None:
        return
    with sock, contextlib.suppress(OSError):
        sock.settimeout(5.0)
        sock.sendall(wire.encode({"op": "stop", "id": "stop"}))
        sock.recv(4096)  # "stopping": it exits on its own


def take_over(place: EnginePlace, bound: Path, replaces: int) -> bool:
    """The copy's socket becomes the engine's, if the engine it was started for still holds
    it (else that engine is gone or was replaced: the copy is not wanted)."""
    try:
        current = place.socket.stat().st_ino
    except OSError:
        current = None
    if current != replaces:
        log.info("the engine this copy was compiled for is gone: it exits")
        return False
    os.rename(bound, place.socket)  # atomic: no moment without a socket
    log.info("the compiled copy took over %s", place.socket)
    return True
