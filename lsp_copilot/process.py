"""Leaving the process: never orphan vLLM's EngineCore, never hang on a loading thread."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading

log = logging.getLogger(__name__)


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
    for child in children:
        with contextlib.suppress(psutil.Error):
            child.terminate()
    _, alive = psutil.wait_procs(children, timeout=timeout)
    for child in alive:
        with contextlib.suppress(psutil.Error):
            child.kill()


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
# vLLM forks its EngineCore (VLLM_WORKER_MULTIPROC_METHOD defaults to fork) and gives it
# no parent-death watch: a server killed with SIGKILL (an editor crashing, the OOM killer)
# would leave a process holding gigabytes. PR_SET_PDEATHSIG is no cure: it fires when the
# *thread* that forked exits, and vLLM forks from our loading thread. So every child we
# fork runs a watchdog thread that notices its reparenting and leaves.

GUARD_INTERVAL_S = 0.25
_guard_installed = False
_forker_pid = 0


def _before_fork() -> None:
    global _forker_pid
    _forker_pid = os.getpid()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        threading.Event().wait(GUARD_INTERVAL_S)
    # Our parent is gone: take our own children with us (vLLM workers), then leave.
    with contextlib.suppress(Exception):
        kill_children(timeout=1.0)
    os.kill(os.getpid(), signal.SIGKILL)


def _after_fork_in_child() -> None:
    parent = _forker_pid
    if parent <= 1:
        return
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                     name="lsp-copilot-orphan-guard").start()


def install_orphan_guard() -> None:
    """Make every process forked from now on exit within a fraction of a second of its
    parent's death, however the parent died. Idempotent."""
    global _guard_installed
    if _guard_installed:
        return
    _guard_installed = True
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
