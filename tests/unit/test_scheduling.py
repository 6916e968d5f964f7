"""Scheduling logic with plain coroutines (no engine): supersede and cancel."""

import asyncio

import pytest

from lsp_copilot.pipeline.scheduling import Scheduler, Superseded
from lsp_copilot.telemetry import Telemetry, percentile


async def test_newer_request_supersedes_older() -> None:
    sched = Scheduler(Telemetry())
    cancelled = asyncio.Event()
    started = asyncio.Event()

    async def slow() -> str:
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "slow"

    async def fast() -> str:
        return "fast"

    first = asyncio.ensure_future(sched.run("doc", slow))
    await started.wait()
    assert await sched.run("doc", fast) == "fast"
    with pytest.raises(Superseded):
        await first
    assert cancelled.is_set()
    assert sched.telemetry.counters["superseded"] == 1
    # Both ended: nothing is left in flight for a later request to supersede.
    assert await sched.run("doc", fast) == "fast"
    assert sched.telemetry.counters["superseded"] == 1


async def test_caller_cancel_propagates() -> None:
    sched = Scheduler(Telemetry())
    outer = asyncio.ensure_future(sched.run("doc", lambda: asyncio.sleep(10)))
    await asyncio.sleep(0)
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert sched.telemetry.counters["cancelled"] == 1


def test_percentiles() -> None:
    values = sorted(float(v) for v in range(1, 101))
    assert percentile(values, 0.5) in (50.0, 51.0)
    assert percentile(values, 0.99) >= 99.0
    assert percentile([], 0.5) == 0.0
