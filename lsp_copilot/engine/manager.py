"""Engine lifecycle: load in the background, report progress, fail without dying.

The server must answer from the first keystroke, so requests never wait for a load:
until the engine is ready they get ``EngineUnavailable`` and the handler answers empty.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lsp_copilot.config import Settings
from lsp_copilot.engine.base import Engine, EngineInfo, EngineUnavailable

log = logging.getLogger(__name__)

Reporter = Callable[[str], None]


@dataclass
class LoadResult:
    ok: bool
    message: str
    seconds: float


class EngineFactory:
    """Builds the real engine. Tests of scheduling logic may pass another factory."""

    def __call__(self, settings: Settings, report: Reporter) -> Engine:
        if settings.engine_backend == "remote":  # a shared vLLM deployment: no local load
            from lsp_copilot.engine.remote import RemoteEngine

            return RemoteEngine.create(settings, report)
        from lsp_copilot.engine.models import ModelError, resolve_model
        from lsp_copilot.engine.vllm import VllmEngine

        report("preparing model")
        try:
            model, is_default = resolve_model(settings.model or None)
        except ModelError:
            raise
        display = "SmolLM2-135M (default)" if is_default else settings.model
        report(f"loading {display} into vLLM")
        return VllmEngine.create(settings, model, display)


def explain_failure(exc: BaseException) -> str:
    """A reason and a fix the user can act on, not a traceback."""
    from lsp_copilot.engine.remote import RemoteError

    if isinstance(exc, RemoteError):  # already says what to fix (remote* settings)
        return f"remote backend: {exc}"

    from lsp_copilot.engine.validate import EngineConfigError

    if isinstance(exc, EngineConfigError):  # already a sentence that names the fix
        return f"invalid engine settings: {exc}."
    text = f"{type(exc).__name__}: {exc}"
    lowered = text.lower()
    if "out of memory" in lowered or isinstance(exc, MemoryError):
        return (
            f"the engine ran out of memory ({text}). Lower cpuKvCacheGib or "
            "gpuMemoryUtilization, or pick a smaller model."
        )
    if "no module named 'vllm'" in lowered:
        return (
            "vLLM is not installed. Run `pip install 'lsp-copilot[cpu]'` (no GPU) or "
            "`pip install 'lsp-copilot[gpu]'` (CUDA), then restart the server."
        )
    return f"{text}. Check the `model` setting and run `lsp-copilot doctor`."


class EngineManager:
    """Owns at most one engine; states: idle, loading, ready, failed, stopped."""

    def __init__(self, factory: Callable[[Settings, Reporter], Engine] | None = None) -> None:
        self._factory = factory or EngineFactory()
        self._engine: Engine | None = None
        self.state = "idle"
        self.error: str | None = None
        self.load_seconds: float | None = None
        self._load_task: asyncio.Task[LoadResult] | None = None

    @property
    def info(self) -> EngineInfo | None:
        return self._engine.info if self._engine else None

    def engine(self) -> Engine:
        if self._engine is None or self.state != "ready":
            raise EngineUnavailable(self.error or f"engine is {self.state}")
        return self._engine

    def stats(self) -> dict[str, int]:
        return self._engine.stats() if self._engine else {}

    def start(self, settings: Settings, report: Reporter = lambda _: None) -> asyncio.Task[Any]:
        """Begin loading in a worker thread; the returned task resolves to a LoadResult."""
        self._load_task = asyncio.ensure_future(self._load(settings, report))
        return self._load_task

    async def wait_ready(self) -> LoadResult | None:
        return await self._load_task if self._load_task else None

    async def _load(self, settings: Settings, report: Reporter) -> LoadResult:
        self.state, self.error = "loading", None
        started = time.perf_counter()
        try:
            engine = await asyncio.to_thread(self._factory, settings, report)
        except asyncio.CancelledError:
            self.state = "stopped"
            raise
        except BaseException as exc:  # SystemExit from a child, OOM, import errors...
            self.state = "failed"
            self.error = explain_failure(exc)
            log.exception("engine failed to start")
            return LoadResult(False, self.error, time.perf_counter() - started)
        if self.state != "stopped":
            report("warming up")
            try:
                await engine.warm_up()
            except Exception as exc:
                self.state, self.error = "failed", explain_failure(exc)
                await engine.shutdown()
                return LoadResult(False, self.error, time.perf_counter() - started)
        self.load_seconds = time.perf_counter() - started
        if self.state == "stopped":  # shut down while loading
            await engine.shutdown()
            return LoadResult(False, "stopped", self.load_seconds)
        self._engine, self.state = engine, "ready"
        return LoadResult(True, f"ready in {self.load_seconds:.1f} s", self.load_seconds)

    async def restart(self, settings: Settings, report: Reporter = lambda _: None) -> None:
        await self.shutdown()
        self.start(settings, report)

    async def shutdown(self) -> None:
        """Stop the engine and its child process; safe to call twice."""
        self.state = "stopped"
        # A load in progress cannot be interrupted (it runs in a thread); _load shuts the
        # engine down as soon as it returns, and exit_now() stops its processes if we leave
        # first. Waiting here would keep `shutdown` unanswered for the whole load.
        engine, self._engine = self._engine, None
        if engine is not None:
            try:
                await engine.shutdown()
            except Exception:
                log.exception("engine shutdown failed")
