"""The in-process engine (engine/inproc.py) over a fake ``LLMEngine``: one thread builds
and steps it, outputs reach asyncio in order, leaving a stream early aborts it, and a
failed engine says so to every caller."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from lsp_copilot.engine.base import EngineDown, EngineInfo
from lsp_copilot.engine.inproc import InprocLLM
from lsp_copilot.engine.vllm import VllmEngine

WAIT_S = 10.0


@dataclass
class Output:
    """The fields of vLLM's ``RequestOutput`` the callers read."""

    request_id: str
    finished: bool
    token: int


@dataclass
class FakeCore:
    shut_down: bool = False

    def shutdown(self) -> None:
        self.shut_down = True


@dataclass
class FakeLLMEngine:
    """Gives each running request one token per step, ``length`` tokens in all. With
    ``permits`` each step first takes one, so a test decides how far a request has got
    when it acts on it (a free-running fake may finish a request before the test sees
    its first output)."""

    length: int = 3
    fail_at_step: int | None = None
    threads: set[int] = field(default_factory=set)
    added: list[tuple[str, int]] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    running: dict[str, int] = field(default_factory=dict)
    steps: int = 0
    permits: threading.Semaphore | None = None
    stepping: threading.Event = field(default_factory=threading.Event)
    aborted_event: threading.Event = field(default_factory=threading.Event)
    engine_core: FakeCore = field(default_factory=FakeCore)
    tokenizer: str = "tok"
    answer_when: threading.Event | None = None
    asked: threading.Event = field(default_factory=threading.Event)

    def built(self) -> FakeLLMEngine:
        self.threads.add(threading.get_ident())
        return self

    def has_unfinished_requests(self) -> bool:
        return bool(self.running)

    def add_request(self, request_id: str, prompt: Any, params: Any, *,
                    priority: int = 0) -> str:
        self.threads.add(threading.get_ident())
        self.added.append((request_id, priority))
        self.running[request_id] = 0
        return request_id + "-internal"

    def abort_request(self, request_ids: list[str], internal: bool = False) -> None:
        self.threads.add(threading.get_ident())
        for rid in request_ids:
            self.running.pop(rid, None)
            self.aborted.append(rid)
        self.aborted_event.set()

    def step(self) -> list[Output]:
        self.threads.add(threading.get_ident())
        self.stepping.set()
        if self.permits is not None:
            assert self.permits.acquire(timeout=WAIT_S)
        self.steps += 1
        if self.fail_at_step is not None and self.steps >= self.fail_at_step:
            raise RuntimeError("the model broke")
        out = []
        for rid in list(self.running):
            self.running[rid] += 1
            done = self.running[rid] >= self.length
            if done:
                del self.running[rid]
            out.append(Output(rid, done, self.running.get(rid, self.length)))
        return out

    def is_sleeping(self) -> bool:
        self.threads.add(threading.get_ident())
        self.asked.set()
        if self.answer_when is not None:
            assert self.answer_when.wait(WAIT_S)
        return False


def started(fake: FakeLLMEngine) -> InprocLLM:
    return InprocLLM(fake.built)


async def collect(llm: InprocLLM, rid: str, priority: int = 0) -> list[Output]:
    return [out async for out in llm.generate("p", None, rid, priority=priority)]


async def test_streams_every_step_from_one_thread_that_also_built_it() -> None:
    fake = FakeLLMEngine(length=3)
    llm = await asyncio.to_thread(started, fake)
    outs = await collect(llm, "a", priority=2)
    assert [o.token for o in outs] == [1, 2, 3]
    assert [o.finished for o in outs] == [False, False, True]
    assert fake.added == [("a", 2)]
    assert await llm.is_sleeping() is False
    assert llm.tokenizer == "tok"
    llm.shutdown()
    assert fake.engine_core.shut_down
    assert len(fake.threads - {threading.get_ident()}) == 1, "built and driven by one thread"
    assert threading.get_ident() not in fake.threads


async def test_requests_run_side_by_side() -> None:
    fake = FakeLLMEngine(length=4)
    llm = await asyncio.to_thread(started, fake)
    first, second = await asyncio.gather(collect(llm, "a"), collect(llm, "b", 1))
    assert [o.request_id for o in first] == ["a"] * 4
    assert [o.request_id for o in second] == ["b"] * 4
    llm.shutdown()


async def test_leaving_a_stream_early_aborts_its_request() -> None:
    permits = threading.Semaphore(1)
    fake = FakeLLMEngine(length=100, permits=permits)
    llm = await asyncio.to_thread(started, fake)
    gen = llm.generate("p", None, "a")
    async with contextlib.aclosing(gen):
        async for _ in gen:
            break
    permits.release()  # one more step, then the abort that is queued already
    assert await asyncio.to_thread(fake.aborted_event.wait, WAIT_S)
    assert fake.aborted == ["a"] and not fake.running
    llm.shutdown()


async def test_cancelling_the_consumer_aborts_its_request() -> None:
    permits = threading.Semaphore(0)  # the first step waits: the request is in flight
    fake = FakeLLMEngine(length=100, permits=permits)
    llm = await asyncio.to_thread(started, fake)
    task = asyncio.ensure_future(collect(llm, "a"))
    assert await asyncio.to_thread(fake.stepping.wait, WAIT_S)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    permits.release()  # the abort is queued: it runs after this step
    assert await asyncio.to_thread(fake.aborted_event.wait, WAIT_S)
    assert fake.aborted == ["a"]
    llm.shutdown()


async def test_abort_by_id_ends_the_stream_and_the_request() -> None:
    permits = threading.Semaphore(1)
    fake = FakeLLMEngine(length=100, permits=permits)
    llm = await asyncio.to_thread(started, fake)
    gen = llm.generate("p", None, "a")
    first = await gen.__anext__()
    assert first.request_id == "a"
    await llm.abort("a")
    permits.release()
    rest = [out async for out in gen]  # ends: no output waits forever
    assert all(not o.finished for o in rest)
    assert await asyncio.to_thread(fake.aborted_event.wait, WAIT_S)
    llm.shutdown()


async def test_a_failed_step_reaches_every_caller_and_the_health_check() -> None:
    fake = FakeLLMEngine(length=100, fail_at_step=2)
    llm = await asyncio.to_thread(started, fake)
    with pytest.raises(RuntimeError, match="the model broke"):
        await collect(llm, "a")
    with pytest.raises(EngineDown):
        await llm.check_health()
    with pytest.raises(EngineDown):
        await collect(llm, "b")
    llm.shutdown()  # the thread is gone already: returns


async def test_a_call_its_caller_gave_up_on_leaves_the_engine_running() -> None:
    """A health check that times out while the engine thread answers it (a long step on
    a loaded machine) cancels its wait; the engine must not die of the late answer."""
    fake = FakeLLMEngine(length=3, answer_when=threading.Event())
    llm = await asyncio.to_thread(started, fake)
    task = asyncio.ensure_future(llm.is_sleeping())
    assert await asyncio.to_thread(fake.asked.wait, WAIT_S)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    fake.answer_when.set()  # the engine thread answers a caller that has gone
    assert [o.token for o in await collect(llm, "a")] == [1, 2, 3]
    await llm.check_health()
    assert await llm.is_sleeping() is False
    llm.shutdown()


async def test_a_call_given_up_before_the_engine_thread_reached_it_is_skipped() -> None:
    permits = threading.Semaphore(0)  # the first step waits: calls queue behind it
    fake = FakeLLMEngine(length=2, permits=permits)
    llm = await asyncio.to_thread(started, fake)
    running = asyncio.ensure_future(collect(llm, "a"))
    assert await asyncio.to_thread(fake.stepping.wait, WAIT_S)
    task = asyncio.ensure_future(llm.is_sleeping())
    await asyncio.sleep(0)  # one turn of the loop (no wait): the task queues its call
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    permits.release()
    permits.release()
    assert [o.token for o in await running] == [1, 2]
    assert not fake.asked.is_set(), "a call nobody waits for is not run"
    await llm.check_health()
    llm.shutdown()


def test_a_failed_build_raises_from_the_constructor() -> None:
    def build() -> Any:
        raise ValueError("no such model")

    with pytest.raises(ValueError, match="no such model"):
        InprocLLM(build)


async def test_vllm_engine_counts_this_process_as_its_engine() -> None:
    """No EngineCore process to reap; this process's CPU is the engine's."""
    import os

    fake = FakeLLMEngine()
    llm = await asyncio.to_thread(started, fake)
    engine = VllmEngine(llm, EngineInfo("vllm", "fake", "cpu", True, None),
                        counter=None)  # type: ignore[arg-type]
    assert engine.pids == [] and engine.cpu_pids == [os.getpid()]
    assert engine.busy_seconds() > 0
    await engine.check_health()
    await engine.shutdown()
    assert fake.engine_core.shut_down

