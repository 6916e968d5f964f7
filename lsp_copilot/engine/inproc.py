"""vLLM's engine core inside this process: the synchronous ``LLMEngine`` stepped by one
thread, behind the part of ``AsyncLLM``'s interface that ``VllmEngine`` uses.

``AsyncLLM`` always runs its EngineCore in a child process (vLLM's ``make_client``
refuses asyncio without multiprocessing), and that child is spawned: it imports torch
and vLLM a second time, about 6 s of every CPU engine's start on two cores. The
``LLMEngine`` with vLLM's ``InprocClient`` runs the same EngineCore (scheduler with
priorities, prefix cache, speculative decoding, logprobs, metrics) in the calling
process. One thread owns it: it builds the engine, then adds, aborts and steps, so
that every torch and OpenMP thread the model uses belongs to that one thread; asyncio
callers get their outputs through ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import queue
import threading
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any

from lsp_copilot.engine.base import EngineDown, EngineUnavailable

log = logging.getLogger(__name__)

Command = Callable[[Any], None]
"""Work for the engine thread, given the ``LLMEngine``."""


@dataclass
class _Stream:
    """Where one request's outputs go: a queue on the caller's event loop."""

    loop: asyncio.AbstractEventLoop
    outputs: asyncio.Queue[Any]

    def put(self, item: Any) -> None:
        # A closed loop (RuntimeError): its caller is gone, nobody is listening.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self.outputs.put_nowait, item)


class _Stop:
    """The engine thread's last command."""


class InprocLLM:
    """An ``LLMEngine`` stepped by a dedicated thread; ``generate`` streams its outputs to
    asyncio. Blocking to construct (it loads the model): call it from a worker thread."""

    def __init__(self, build: Callable[[], Any], name: str = "vllm-engine") -> None:
        self._commands: queue.SimpleQueue[Command | _Stop] = queue.SimpleQueue()
        self._streams: dict[str, _Stream] = {}  # by request id; the engine thread's own
        self._error: BaseException | None = None
        self._engine: Any = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(build,), name=name,
                                        daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        self.tokenizer = getattr(self._engine, "tokenizer", None)

    # -- the engine thread -------------------------------------------------------------

    def _run(self, build: Callable[[], Any]) -> None:
        try:
            self._engine = build()
        except BaseException as exc:  # the load failed: the constructor raises it
            self._error = exc
            return
        finally:
            self._ready.set()
        engine = self._engine
        try:
            while True:
                busy = engine.has_unfinished_requests()
                try:
                    command = self._commands.get(block=not busy)
                except queue.Empty:
                    command = None
                while command is not None:  # every command before the next step
                    if isinstance(command, _Stop):
                        self._close(engine)
                        return
                    command(engine)
                    try:
                        command = self._commands.get_nowait()
                    except queue.Empty:
                        command = None
                if engine.has_unfinished_requests():
                    for out in engine.step():
                        self._deliver(out)
        except BaseException as exc:  # the engine is dead: every caller hears why
            log.exception("the in-process engine failed")
            self._error = exc
            for stream in self._streams.values():
                stream.put(exc)
            self._streams.clear()
            self._drain(exc)

    def _deliver(self, out: Any) -> None:
        stream = self._streams.get(out.request_id)
        if stream is None:
            return
        if out.finished:
            del self._streams[out.request_id]
        stream.put(out)

    def _drain(self, exc: BaseException) -> None:
        """Commands sent after a failure: callers waiting on one hear the failure."""
        while True:
            try:
                command = self._commands.get_nowait()
            except queue.Empty:
                return
            if not isinstance(command, _Stop):
                with contextlib.suppress(BaseException):
                    command(None)

    def _close(self, engine: Any) -> None:
        for stream in self._streams.values():
            stream.put(EngineUnavailable("the engine is shut down"))
        self._streams.clear()
        core = getattr(engine, "engine_core", None)
        if core is not None:
            core.shutdown()

    # -- the caller's side -------------------------------------------------------------

    def _send(self, command: Command) -> None:
        if self._error is not None or not self._thread.is_alive():
            raise EngineDown(f"the in-process engine stopped: {self._error!r}")
        self._commands.put(command)
        if self._error is not None:  # it failed meanwhile, maybe after its last drain
            self._drain(self._error)

    async def _call(self, method: Callable[[Any], Any]) -> Any:
        """``method(engine)`` run by the engine thread, between two steps."""
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def command(engine: Any) -> None:
            # A caller that gave up (a health check's timeout cancels its wait, and with
            # it ``done``) wants no answer; setting one on a cancelled future would raise
            # here, in the engine thread, and take the engine down with it.
            if not done.set_running_or_notify_cancel():
                return
            if engine is None:
                done.set_exception(EngineDown("the in-process engine stopped"))
                return
            try:
                done.set_result(method(engine))
            except BaseException as exc:
                done.set_exception(exc)

        self._send(command)
        return await asyncio.wrap_future(done)

    async def generate(self, prompt: Any, params: Any, request_id: str, *,
                       priority: int = 0) -> AsyncGenerator[Any, None]:
        """vLLM's ``RequestOutput`` for ``request_id`` as the engine steps; leaving early
        (break, cancel, close) aborts the request."""
        stream = _Stream(asyncio.get_running_loop(), asyncio.Queue())

        def add(engine: Any) -> None:
            if engine is None:
                stream.put(EngineDown("the in-process engine stopped"))
                return
            if request_id in self._streams:
                stream.put(ValueError(f"request {request_id!r} is already running"))
                return
            try:
                engine.add_request(request_id, prompt, params, priority=priority)
            except Exception as exc:  # a bad request: its caller hears it, not the engine
                stream.put(exc)
                return
            self._streams[request_id] = stream

        self._send(add)
        finished = False
        try:
            while not finished:
                item = await stream.outputs.get()
                if item is None:  # aborted by ``abort``
                    finished = True
                    return
                if isinstance(item, BaseException):
                    finished = True
                    raise item
                finished = bool(item.finished)
                yield item
        finally:
            if not finished:
                self._abort_soon(request_id, stream)

    def _abort_soon(self, request_id: str, stream: _Stream) -> None:
        def abort(engine: Any) -> None:
            if engine is not None and self._streams.get(request_id) is stream:
                del self._streams[request_id]
                engine.abort_request([request_id])

        if self._error is None and self._thread.is_alive():
            self._commands.put(abort)

    async def abort(self, request_id: str) -> None:
        def abort(engine: Any) -> None:
            if engine is not None:
                stream = self._streams.pop(request_id, None)
                engine.abort_request([request_id])
                if stream is not None:
                    stream.put(None)

        if self._error is None and self._thread.is_alive():
            self._commands.put(abort)

    async def check_health(self) -> None:
        if self._error is not None:
            raise EngineDown(f"the in-process engine failed: {self._error!r}")
        if not self._thread.is_alive():
            raise EngineDown("the in-process engine's thread is gone")

    async def is_sleeping(self) -> bool:
        """Answered by the engine thread between two steps: a stuck engine never does."""
        return bool(await self._call(lambda engine: engine.is_sleeping()))

    def shutdown(self) -> None:
        """Blocking: the engine thread ends its requests and frees the engine."""
        if self._thread.is_alive():
            self._commands.put(_Stop())
            self._thread.join()
