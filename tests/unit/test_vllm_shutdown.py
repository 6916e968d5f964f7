"""Shutting the embedded engine down must not make vLLM log an EngineDeadError."""

from __future__ import annotations

import asyncio

from lsp_copilot.engine.base import EngineInfo
from lsp_copilot.engine.vllm import VllmEngine
from tests.support.fakes import FakeAsyncLLM


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
