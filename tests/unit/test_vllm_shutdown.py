"""Shutting the embedded engine down must not make vLLM log an EngineDeadError."""

from __future__ import annotations

import asyncio

from lsp_copilot.engine.base import EngineInfo
from lsp_copilot.engine.vllm import VllmEngine


class FakeAsyncLLM:
    """What VllmEngine.shutdown touches of vLLM's AsyncLLM: an output handler task that,
    like vLLM's, fails (and logs a traceback) once the EngineCore it reads from is gone."""

    def __init__(self) -> None:
        self.core_alive = asyncio.Event()
        self.core_alive.set()
        self.core_gone = asyncio.Event()
        self.handler_failed = False
        self.output_handler = asyncio.ensure_future(self._handle())

    async def _handle(self) -> None:
        await self.core_gone.wait()
        self.handler_failed = True  # vLLM: "AsyncLLM output_handler failed." + traceback

    def shutdown(self) -> None:  # called from a worker thread, as vLLM's is
        loop = self.output_handler.get_loop()
        loop.call_soon_threadsafe(self.core_gone.set)  # the EngineCore stops first


async def test_shutdown_stops_the_output_handler_before_the_engine_core() -> None:
    llm = FakeAsyncLLM()
    engine = VllmEngine(llm, EngineInfo("vllm", "fake", "cpu", True, None),
                        counter=None)  # type: ignore[arg-type]
    await asyncio.sleep(0)  # the handler is waiting for outputs
    await engine.shutdown()
    for _ in range(3):  # let anything the shutdown scheduled run
        await asyncio.sleep(0)
    assert llm.output_handler.cancelled()
    assert not llm.handler_failed
