"""One engine boundary: engines stream steps, one loop above them cuts (``until_cut``).

With a FAKE engine (the loop's logic); every real backend goes through the same loop in
the e2e tests (embedded vLLM) and the remote and shared-engine tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from lsp_copilot.engine.base import EngineRequest, EngineResult, until_cut
from tests.support.fakes import FakeEngine


class Counting(FakeEngine):
    """Streams ``reply`` two characters a step and says how its stream ended."""

    def __init__(self, reply: str) -> None:
        super().__init__(reply=reply, step_s=0)
        self.closed = 0  # left early by the caller: the engine's request is aborted

    async def stream(self, request: EngineRequest) -> AsyncGenerator[EngineResult, None]:
        try:
            async for step in super().stream(request):
                yield step
        except GeneratorExit:
            self.closed += 1
            raise


async def test_the_rule_sees_each_step_once_and_a_cut_closes_the_stream() -> None:
    engine = Counting("abcdefgh\nmore")
    seen: list[str] = []

    def rule(text: str) -> int | None:
        seen.append(text)
        return text.find("\n") if "\n" in text else None

    result = await until_cut(engine, EngineRequest("r", "p", 32, stop_at=rule))
    assert result.text == "abcdefgh" and result.stopped_early
    assert result.finish_reason == "stop_at"
    assert seen == ["ab", "abcd", "abcdef", "abcdefgh", "abcdefgh\nm"]  # once per step
    assert engine.closed == 1 and engine.sent == "abcdefgh\nm"  # nothing generated after


async def test_a_stream_that_ends_is_not_closed_early() -> None:
    engine = Counting("abcd")
    result = await until_cut(engine, EngineRequest("r", "p", 32))
    assert result.text == "abcd" and not result.stopped_early
    assert result.finish_reason == "stop" and engine.closed == 0


async def test_stop_strings_cut_at_the_end_too() -> None:
    engine = Counting("ab<|end|>cd")
    result = await until_cut(engine, EngineRequest("r", "p", 32, stop=("<|end|>",)))
    assert result.text == "ab" and result.finish_reason == "stop"


async def test_a_cut_of_the_callers_own_replaces_the_requests() -> None:
    engine = Counting("abcdefgh")
    calls: list[str] = []

    def cut(step: EngineResult) -> tuple[int | None, str | None]:
        calls.append(step.text)
        return (3, "mine") if len(step.text) >= 4 else (None, None)

    result = await until_cut(engine, EngineRequest("r", "p", 32, stop_at=lambda t: 0), cut)
    assert result.text == "abc" and result.finish_reason == "mine"
    assert calls == ["ab", "abcd"] and engine.closed == 1


async def test_a_cancelled_caller_aborts_the_stream() -> None:
    engine = FakeEngine(reply="x" * 200, step_s=0.01)
    task = asyncio.ensure_future(until_cut(engine, EngineRequest("r", "p", 500)))
    await engine.streamed(4)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert engine.aborted == 1 and len(engine.sent) < 200
