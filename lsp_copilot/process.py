"""Leaving the process: never orphan vLLM's EngineCore, never hang on a loading thread."""

from __future__ import annotations

import contextlib
import logging
import os
import sys

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
