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

The copy compiles at the lowest CPU priority and takes normal priority back just before it
takes over (``lower_priority``, ``restore_priority``): its compile uses both cores for a
minute or two, and the user types on the eager engine meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
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
LOWEST_NICE = 19
AUTOGROUP = Path("/proc/self/autogroup")
AUTOGROUP_RETRY_S = 1.0
"""The kernel takes an autogroup's nice once a tenth of a second (EAGAIN meanwhile)."""


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


@dataclass(frozen=True)
class Priority:
    """What the copy had before it lowered itself, and what it lowered."""

    nice: int  # its main thread's nice: its parent's, which its threads get back
    autogroup: int | None  # its session's autogroup nice (None: no autogroup to lower)
    threads: str  # "idle" (SCHED_IDLE), "nice" (nice 19) or "" (left as they were)


def lower_priority() -> Priority:
    """The calling process at the lowest CPU priority, for the copy's load and warm-up.

    Two levers, as the kernel may group tasks either way: each thread's policy (SCHED_IDLE,
    else nice 19; it counts against the tasks of its own group, the engine's too when both
    share a cgroup) and its session's autogroup nice (it counts when the kernel groups
    tasks by session: the copy is a session of its own, so its threads' nice and policy
    weigh nothing against the eager engine's session). Threads are lowered only where they
    can be raised again: unprivileged (RLIMIT_NICE 0, the usual), a thread can leave
    neither SCHED_IDLE nor a higher nice, and the copy would serve at idle priority; an
    autogroup's nice may always return to 0 or more."""
    nice = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    threads = _lowering(nice)
    if threads:  # (a thread that refused is logged; restore_priority sets every thread)
        _for_each_thread(_idle if threads == "idle" else _lowest_nice)
    autogroup = _autogroup_nice()
    if autogroup is not None and not _set_autogroup(LOWEST_NICE):
        autogroup = None
    saved = Priority(nice, autogroup, threads)
    log.info("the copy loads at the lowest CPU priority: %s", describe_priority(saved))
    return saved


def restore_priority(saved: Priority) -> bool:
    """Normal priority again (SCHED_OTHER at its parent's nice, its autogroup's nice) for
    every thread, just before the copy takes over; False if a thread kept the low one
    (then the copy must not serve)."""
    ok = True
    if saved.threads:
        ok = _for_each_thread(lambda tid: _normal(tid, saved.nice))
    if saved.autogroup is not None:
        ok = _set_autogroup(saved.autogroup) and ok
    if ok:
        log.info("the copy is back at normal CPU priority")
    else:
        log.warning("the copy could not take its CPU priority back")
    return ok


def describe_priority(saved: Priority) -> str:
    threads = {"idle": "threads SCHED_IDLE", "nice": f"threads nice {LOWEST_NICE}"}.get(
        saved.threads, "threads as they were (they could not be raised again)")
    group = ("no autogroup" if saved.autogroup is None
             else f"autogroup nice {LOWEST_NICE} (was {saved.autogroup})")
    return f"{threads}, {group}"


def _thread_ids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/task")]
    except OSError:
        return [threading.get_native_id()]


def _for_each_thread(change: Callable[[int], None]) -> bool:
    """``change`` on every thread of this process (scheduling is per thread on Linux), also
    those started meanwhile: a thread gets its creator's; False if one refused."""
    done: set[int] = set()
    for _ in range(5):
        new = [tid for tid in _thread_ids() if tid not in done]
        if not new:
            return True
        for tid in new:
            try:
                change(tid)
            except ProcessLookupError:
                pass  # it ended meanwhile
            except OSError as exc:
                log.warning("thread %d keeps its CPU priority: %s", tid, exc)
                return False
            done.add(tid)
    return True


def _idle(tid: int) -> None:
    os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))


def _normal(tid: int, nice: int) -> None:
    os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
    os.setpriority(os.PRIO_PROCESS, tid, nice)


def _lowest_nice(tid: int) -> None:
    os.setpriority(os.PRIO_PROCESS, tid, LOWEST_NICE)


def _lowering(nice: int) -> str:
    """How this process may lower its threads and raise them again: "idle", "nice", or
    "" (unprivileged: neither comes back without root, CAP_SYS_NICE or a RLIMIT_NICE that
    allows it). Tried on a thread started for it."""
    result: list[str] = []

    def attempt() -> None:
        tid = threading.get_native_id()
        for name, lower in (("idle", _idle), ("nice", _lowest_nice)):
            try:
                lower(tid)
                _normal(tid, nice)
            except (OSError, AttributeError):  # AttributeError: no SCHED_IDLE (not Linux)
                continue
            result.append(name)
            return

    probe = threading.Thread(target=attempt, name="priority-probe", daemon=True)
    probe.start()
    probe.join()
    return result[0] if result else ""


def _autogroup_nice() -> int | None:
    try:
        return int(AUTOGROUP.read_text().split()[-1])  # "/autogroup-137 nice 0"
    except (OSError, ValueError, IndexError):
        return None


def _set_autogroup(nice: int) -> bool:
    deadline = time.monotonic() + AUTOGROUP_RETRY_S
    while True:
        try:
            AUTOGROUP.write_text(f"{nice}\n")
            return True
        except BlockingIOError:  # EAGAIN: another change a moment ago
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        except OSError as exc:
            log.warning("the autogroup's nice stays: %s", exc)
            return False
