"""How an engine is built: the remote backend, the shared engine of this machine, or one
inside this process; and, when a start hangs, how it is stopped and what is logged."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import stat
from collections.abc import Callable
from typing import Any

from lsp_copilot.engine.base import Engine
from lsp_copilot.settings.layers import EngineSetup
from lsp_copilot.tokens import TokenCounters

log = logging.getLogger(__name__)

Reporter = Callable[[str], None]
"""Progress of a load, in words; an empty message is a silent sign that it moves."""


def embedded_engine(setup: EngineSetup, report: Reporter, counters: TokenCounters, *,
                    inprocess: bool = False) -> Engine:
    """Blocking: vLLM in this process (a server's own, or the shared engine's host, which
    passes ``inprocess``: it may run the EngineCore itself, see VllmEngine.create)."""
    from lsp_copilot.engine.vllm import VllmEngine, detect_device
    from lsp_copilot.models.resolve import resolve_model

    settings = setup.engine
    report("preparing model")
    from lsp_copilot.engine.defaults import weights

    device = detect_device(settings.device)
    model, preset = resolve_model(settings.model or None, device,
                                  weights=weights(settings, device).value)
    display = preset or settings.model
    report(f"loading {display} into vLLM")
    return VllmEngine.create(settings, model, display, counters, max_queue=setup.max_queue,
                             inprocess=inprocess)


class EngineFactory:
    """Builds the real engine: the remote backend, the shared engine of this machine
    (started if none runs) or one inside this process. Tests of scheduling logic may pass
    another factory.

    ``counters`` are the process's token counters (the server's, shared by the engines of
    all its routes); a factory made without them has its own."""

    def __init__(self, counters: TokenCounters | None = None) -> None:
        from lsp_copilot.engine.shared.client import SharedStarter

        self.counters = counters or TokenCounters()
        self._shared = SharedStarter()
        self._embedded = EmbeddedProbe()

    def __call__(self, settings: EngineSetup, report: Reporter) -> Engine:
        if settings.remote.engine_backend == "remote":  # a shared vLLM deployment: no local load
            from lsp_copilot.engine.remote.backend import RemoteEngine

            return RemoteEngine.create(settings, report, self.counters)
        if settings.supervision.engine_shared:
            return self._shared.attach(settings, report, self.counters)
        self._embedded.begin()
        make_room(report)
        return embedded_engine(settings, report, self.counters)

    def busy_seconds(self, settings: EngineSetup) -> float | None:
        """CPU the start under way has used (a load that computes is not stuck)."""
        if settings.supervision.engine_shared:
            return self._shared.busy_seconds()
        return self._embedded.busy_seconds()

    def stalled(self, settings: EngineSetup) -> None:
        """Kill the start under way, after writing its threads' stacks to the log."""
        if settings.supervision.engine_shared:
            self._shared.kill()
        else:
            self._embedded.kill()


def make_room(report: Reporter) -> None:
    """An engine about to load in this server: the shared engines no server uses give way
    (as they do for a shared engine that starts), so their memory is free for this one."""
    from lsp_copilot.engine.shared.control import stop_unused
    from lsp_copilot.engine.shared.runtime import runtime_dir

    folder = runtime_dir()
    if not folder.is_dir():
        return
    try:
        stopped = stop_unused(folder, keep="")
    except OSError as exc:
        log.warning("could not ask the shared engines in %s to make room: %s", folder, exc)
        return
    for name in stopped:
        report(f"stopped the unused shared engine {name} to make room")


class EmbeddedProbe:
    """The processes an embedded load started (its EngineCore): what it costs, and how to
    stop them when the load hangs (other engines' processes are left alone)."""

    def __init__(self) -> None:
        self._before: set[int] = set()

    def _children(self) -> list[Any]:
        import psutil

        try:
            return list(psutil.Process().children(recursive=True))
        except psutil.Error:
            return []

    def begin(self) -> None:
        self._before = {p.pid for p in self._children()}

    def _new(self) -> list[Any]:
        return [p for p in self._children() if p.pid not in self._before]

    def busy_seconds(self) -> float:
        import psutil

        total = sum(os.times()[:2])
        for proc in self._new():
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                total += times.user + times.system
        return total

    def kill(self) -> None:
        import faulthandler

        from lsp_copilot.process import reap

        for stream in log_streams():
            faulthandler.dump_traceback(stream, all_threads=True)
        procs = self._new()
        for proc in procs:  # PYTHONFAULTHANDLER (set for the engine): stacks, then exit
            with contextlib.suppress(Exception):
                proc.send_signal(signal.SIGABRT)
        reap([p.pid for p in procs], timeout=2.0)


def log_streams() -> list[Any]:
    """The open files of the log's handlers (where a stack dump is found afterwards); not
    a pipe (the editor's stderr): if nobody reads it, a dump there would block the watchdog
    that writes it."""
    out = []
    for handler in logging.getLogger().handlers:
        stream = getattr(handler, "stream", None)
        if stream is not None and hasattr(stream, "fileno"):
            with contextlib.suppress(Exception):
                stream.flush()
                if stat.S_ISFIFO(os.fstat(stream.fileno()).st_mode):
                    continue
                out.append(stream)
    return out
