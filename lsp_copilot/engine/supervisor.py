"""What keeps a request from hanging on the engine: deadlines, and an end at once when the
engine goes down.

``SupervisedEngine`` is the engine as the completion pipeline sees it. Every call races
against two things: its deadline (``requestTimeoutMs``) and the supervisor's verdict that
the engine is down. Whichever comes first ends the call, and the engine's own task is
abandoned (cancelled, never awaited: a stuck engine would never let it finish).
``RestartPolicy`` says how long to wait before each restart and when to give up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any, Protocol

from lsp_copilot.engine.base import (
    Engine,
    EngineDeadline,
    EngineDown,
    EngineInfo,
    EngineRequest,
    EngineResult,
)
from lsp_copilot.prompts.encoder import PromptEncoder
from lsp_copilot.tokens import TokenCounter

ABORT_WAIT_S = 2.0
"""How long a cancelled request waits for the engine to confirm the abort."""


@dataclass(frozen=True)
class RestartPolicy:
    """Exponential backoff between restarts; ``window_s`` is how far back failures count."""

    backoff_s: float = 1.0
    backoff_max_s: float = 30.0
    window_s: float = 600.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait before restart ``attempt`` (1-based) of one incident."""
        return float(min(self.backoff_max_s, self.backoff_s * 2 ** max(0, attempt - 1)))


class Guard(Protocol):
    """What a supervised call reports to (the EngineManager)."""

    def deadline_s(self) -> float: ...

    def suspect(self) -> None: ...

    def count(self, name: str) -> None: ...

    def progress(self) -> None: ...

    def outcome(self, ok: bool | None) -> None:
        """A call ended: answered, failed or overran (False), cancelled (None)."""
        ...


def _abandon(task: asyncio.Future[Any]) -> None:
    """Cancel without waiting, and swallow whatever the task ends with later."""
    task.cancel()
    task.add_done_callback(lambda t: None if t.cancelled() else t.exception())


class SupervisedEngine(Engine):
    """Wraps one engine for one life of it (until ``down`` resolves with the reason); what
    the protocol declares is the inner engine's, nothing else is reachable through it."""

    def __init__(self, inner: Engine, down: asyncio.Future[str], guard: Guard) -> None:
        self._inner = inner
        self._down = down
        self._guard = guard
        self.info: EngineInfo = inner.info
        self.counter: TokenCounter = inner.counter
        self.encoder: PromptEncoder | None = inner.encoder

    async def stream(self, request: EngineRequest) -> AsyncGenerator[EngineResult, None]:
        """The inner engine's steps, each one raced against the deadline and the engine
        going down; the step under way when either comes is abandoned."""
        if self._down.done():
            raise EngineDown(self._down.result())
        guard, loop = self._guard, asyncio.get_running_loop()
        allowed_s = guard.deadline_s()
        deadline = loop.time() + allowed_s
        steps = self._inner.stream(request)
        step: asyncio.Future[EngineResult] | None = None
        try:
            while True:
                step = asyncio.ensure_future(anext(steps))
                await self._race(step, deadline - loop.time(), allowed_s)
                try:
                    result = step.result()
                except StopAsyncIteration:
                    guard.outcome(True)
                    return
                except asyncio.CancelledError:
                    guard.outcome(None)
                    raise
                except Exception:
                    guard.outcome(False)
                    guard.suspect()  # maybe the engine died under us: check it now
                    raise
                step = None
                guard.progress()  # text streams: a slow health check is not a stuck engine
                yield result
        except GeneratorExit:  # the caller cut the answer: the engine did its part
            guard.outcome(True)
            raise
        finally:
            if step is None or step.done():  # (never while a step of it is under way)
                await steps.aclose()

    async def _race(self, step: asyncio.Future[EngineResult], timeout: float,
                    allowed_s: float) -> None:
        """Return once ``step`` is done; raise when the engine went down or the deadline
        passed first, or when the caller cancelled (the step is then aborted)."""
        guard = self._guard
        try:
            waits: set[asyncio.Future[Any]] = {step, self._down}
            await asyncio.wait(waits, timeout=max(0.0, timeout),
                               return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            # The client moved on: abort the engine request, but never hang on it.
            guard.outcome(None)
            step.cancel()
            await asyncio.wait({step}, timeout=ABORT_WAIT_S)
            if not step.done():
                _abandon(step)
            raise
        if step.done():
            return
        _abandon(step)
        guard.outcome(False)
        if self._down.done():
            guard.count("engine_interrupted")
            raise EngineDown(self._down.result())
        guard.count("engine_deadline_exceeded")
        guard.suspect()
        raise EngineDeadline(f"no answer from the engine within {allowed_s:g} s")

    async def abort(self, request_id: str) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._inner.abort(request_id), ABORT_WAIT_S)

    async def warm_up(self) -> None:
        await asyncio.wait_for(self._inner.warm_up(), self._guard.deadline_s())

    async def check_health(self) -> None:
        await self._inner.check_health()

    def busy_seconds(self) -> float | None:
        return self._inner.busy_seconds()

    def stats(self) -> dict[str, int]:
        return self._inner.stats()

    async def shutdown(self) -> None:
        """Nothing: the EngineManager owns the engine's life, not the pipeline."""
