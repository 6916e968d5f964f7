"""Leaving the process: never orphan vLLM's EngineCore, never hang on a loading thread."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Any

log = logging.getLogger(__name__)

SAFE_PATH_FLAGS = ("-P",) if sys.version_info >= (3, 11) else ()
"""Python 3.11+: the child's working folder (or script's folder) is not put first on
sys.path. Not ``-I``: that also drops PYTHONPATH, the user's site-packages (an install with
``pip install --user``) and the PYTHON* variables (PYTHONFAULTHANDLER, which the engine
uses for its stacks). On 3.10 the neutral working folder (paths.helper_cwd) alone keeps
the user's files out."""


def python_command(*args: str) -> list[str]:
    """A helper process of the running interpreter: ``python -P ARGS`` (3.11+). Start it in
    ``paths.helper_cwd()``, never in the user's project."""
    return [sys.executable, *SAFE_PATH_FLAGS, *args]


def kill_children(timeout: float = 5.0) -> None:
    """Terminate (then kill) every process we started: EngineCore, its workers."""
    try:
        import psutil
    except ImportError:
        return
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return
    reap([child.pid for child in children], timeout)


def exit_now(code: int) -> None:
    """Stop the engine's processes and leave at once.

    A normal interpreter exit waits for worker threads, and an engine that is still
    loading holds one for as long as the load takes (half a minute or more): an editor
    that asked us to exit must not wait for that.
    """
    kill_children()
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def reap(pids: list[int], timeout: float = 3.0) -> None:
    """Make sure these processes are gone: terminate, wait, then kill (also if stopped)."""
    import psutil

    procs = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            procs.append(psutil.Process(pid))
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=timeout)


# -- orphan guard -------------------------------------------------------------------
#
# vLLM's EngineCore (and its worker) have no parent-death watch: a server killed with
# SIGKILL (an editor crashing, the OOM killer) would leave processes holding gigabytes.
# Nothing in a SIGKILLed process runs, and on CPU vLLM *spawns* its EngineCore (a fresh
# interpreter: no fork hook of ours runs there), so PR_SET_PDEATHSIG or a watchdog thread
# in the child cannot be installed from here. Instead a tiny guardian process (our child,
# ~15 MB) records the server's descendants once a second and, when its parent changes
# (the server died, however), terminates then kills exactly those it recorded.

GUARD_CODE = """
import os, sys, time, psutil
server = int(sys.argv[1]); interval = float(sys.argv[2])
seen = {}
try:
    me = psutil.Process()
    while os.getppid() == server:
        try:
            for p in psutil.Process(server).children(recursive=True):
                if p.pid != me.pid and p.pid not in seen:
                    seen[p.pid] = p.create_time()
        except psutil.Error:
            pass
        time.sleep(interval)
except KeyboardInterrupt:
    pass
procs = []
for pid, created in seen.items():
    try:
        p = psutil.Process(pid)
        if p.create_time() == created:
            procs.append(p)
    except psutil.Error:
        pass
for p in procs:
    try:
        p.terminate()
    except psutil.Error:
        pass
gone, alive = psutil.wait_procs(procs, timeout=2)
for p in alive:
    try:
        p.kill()
    except psutil.Error:
        pass
"""
GUARD_INTERVAL_S = 0.5
_guardian: Any = None


def install_orphan_guard() -> None:
    """Start the guardian (once per process) before any engine process exists."""
    global _guardian
    if _guardian is not None and _guardian.poll() is None:
        return
    import subprocess

    try:
        _guardian = subprocess.Popen(  # "/": it needs no folder, and only root writes there
            python_command("-c", GUARD_CODE, str(os.getpid()), str(GUARD_INTERVAL_S)),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=True, cwd="/")
    except OSError:
        log.warning("could not start the orphan guard: a SIGKILLed server may leave "
                    "vLLM's EngineCore running", exc_info=True)
