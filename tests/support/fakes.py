"""Fakes for unit tests (never reachable by a user): engines that stream scripted text,
fail or hang on command, and the parts of vLLM the embedded engine touches."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

from lsp_copilot.engine.base import Engine, EngineInfo, EngineRequest, EngineResult
from lsp_copilot.prompts.encoder import PromptEncoder


class CharCounter:
    name = "chars/3 (test)"

    def count(self, text: str) -> int:
        return (len(text) + 2) // 3


class FakeEngine(Engine):
    """Streams ``reply`` a few characters at a time, after ``delay_s`` (a prefill); records
    every request it gets; fails while ``down`` is set (a backend down or over quota)."""

    def __init__(self, reply: str = " a + b\n", step_s: float = 0.01,
                 model: str = "fake-model", delay_s: float = 0.0) -> None:
        self.info = EngineInfo("fake", model, "cpu", True, None)
        self.counter = CharCounter()
        self.reply = reply
        self.step_s = step_s
        self.delay_s = delay_s
        self.down = False
        self.requests: list[EngineRequest] = []
        self.prompts: list[str] = []
        self.started = asyncio.Event()  # set when a generation begins
        self.aborted = 0
        self.aborts = asyncio.Event()  # set at each abort
        self.sent = ""  # the text streamed so far by the latest generation
        self.seen = ""  # what its caller has taken of it
        self.progress = asyncio.Event()  # set whenever ``seen`` grows

    async def streamed(self, chars: int) -> None:
        """Wait until the caller of the latest generation has seen at least ``chars``
        characters of it."""
        while len(self.seen) < chars:
            self.progress.clear()
            await self.progress.wait()

    async def stream(self, request: EngineRequest) -> AsyncGenerator[EngineResult, None]:
        if self.down:
            raise RuntimeError("503 Service Unavailable")
        self.requests.append(request)
        self.prompts.append(request.prompt)
        self.started.set()
        self.sent = self.seen = ""
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            for i in range(0, len(self.reply), 2):
                await asyncio.sleep(self.step_s)
                text = self.sent = self.reply[: i + 2]
                done = i + 2 >= len(self.reply)
                try:
                    yield EngineResult(text=text, generated_tokens=len(text),
                                       finish_reason="stop" if done else None)
                finally:  # the caller has seen this step (and cut it, or asks for more)
                    self.seen = text
                    self.progress.set()
        except asyncio.CancelledError:  # (a cut closes the stream: not an abort here)
            self.aborted += 1
            self.aborts.set()
            raise

    async def abort(self, request_id: str) -> None:
        pass

    async def warm_up(self) -> None:
        pass

    async def check_health(self) -> None:
        pass

    def stats(self) -> dict[str, int]:
        return {}

    async def shutdown(self) -> None:
        pass


class SeededEngine(FakeEngine):
    """Replies by seed (None: the first, greedy request; a seed not given repeats it);
    records whether the greedy one had streamed text when each request came."""

    def __init__(self, replies: dict[int | None, str], step_s: float = 0.01) -> None:
        super().__init__(step_s=step_s)
        self.replies = replies
        self.greedy_text_when: list[str] = []
        self._greedy = ""
        self.three_started = asyncio.Event()  # the first request and two alternatives

    async def stream(self, request: EngineRequest) -> AsyncGenerator[EngineResult, None]:
        self.requests.append(request)
        self.greedy_text_when.append(self._greedy)
        if len(self.requests) == 3:
            self.three_started.set()
        reply = self.replies.get(request.seed, self.replies[None])
        done = False
        try:
            for i in range(0, len(reply), 2):
                await asyncio.sleep(self.step_s)
                text = reply[: i + 2]
                if request.seed is None:
                    self._greedy = text
                done = i + 2 >= len(reply)
                yield EngineResult(text=text, finish_reason="stop" if done else None)
        except (asyncio.CancelledError, GeneratorExit):
            # Cancelled while it waited for a step, or closed while it held one: either
            # way the request is aborted (vLLM aborts on both), unless it had finished.
            self.aborted += not done
            raise


class BranchingEngine(FakeEngine):
    """Lists token choices like vLLM and answers each branch by the text it was given."""

    def __init__(self, answers: dict[str, str],
                 choices: tuple[tuple[Any, ...], ...] = ()) -> None:
        super().__init__()
        self.info = EngineInfo("fake", "fake-model", "cpu", True, None, token_choices=True)
        self.answers = answers
        self.choices = choices  # what a listing request answers

    async def stream(self, request: EngineRequest) -> AsyncGenerator[EngineResult, None]:
        self.requests.append(request)
        head = request.prompt[len(self.requests[0].prompt):]
        reply = self.answers[head]
        await asyncio.sleep(0)
        if request.token_choices:
            yield EngineResult(text=reply[:4], token_choices=self.choices,
                               finish_reason="length")
        else:
            yield EngineResult(text=reply, finish_reason="stop")


class EncodingEngine(Engine):
    """Has the model's family and encoder; records the requests, answers a fixed text."""

    def __init__(self, template: str, encoder: PromptEncoder | None) -> None:
        self.info = EngineInfo("fake", "fake-model", "cpu", True, None, template)
        self.counter = type("C", (), {"name": "chars", "count": staticmethod(len)})()
        self.encoder = encoder
        self.requests: list[Any] = []

    async def stream(self, request: Any) -> AsyncGenerator[EngineResult, None]:
        self.requests.append(request)
        yield EngineResult(text="1\n", prompt_tokens=len(request.prompt_token_ids or ()),
                           finish_reason="stop")

    async def abort(self, request_id: str) -> None:
        pass

    async def warm_up(self) -> None:
        pass

    def stats(self) -> dict[str, int]:
        return {}

    async def shutdown(self) -> None:
        pass


class FlakyEngine(Engine):
    """Streams slowly; ``dead`` makes health checks fail, ``stuck`` makes everything hang."""

    def __init__(self, name: str = "fake") -> None:
        self.info = EngineInfo("fake", name, "cpu", True, None)
        self.counter = None
        self.dead = False
        self.stuck = False
        self.shut_down = False
        self.cancelled = 0
        self.generating = asyncio.Event()  # set once a call is in flight

    async def stream(self, request: EngineRequest) -> AsyncGenerator[EngineResult, None]:
        self.generating.set()
        try:
            if self.stuck:
                await asyncio.Event().wait()
            await asyncio.sleep(30)  # a long stream: only an incident or a deadline ends it
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        yield EngineResult(text="never", finish_reason="stop")

    async def abort(self, request_id: str) -> None:
        pass

    async def warm_up(self) -> None:
        pass

    async def check_health(self) -> None:
        if self.stuck:
            await asyncio.Event().wait()
        if self.dead:
            raise RuntimeError("EngineCore died")

    def stats(self) -> dict[str, int]:
        return {}

    async def shutdown(self) -> None:
        self.shut_down = True


class EngineFactory:
    """Hands out engines (or raises) in order, the last one again and again; counts calls."""

    def __init__(self, *engines: Any) -> None:
        self.queue = list(engines)
        self.calls = 0

    def __call__(self, settings: Any, report: Any) -> Any:
        self.calls += 1
        item = self.queue.pop(0) if len(self.queue) > 1 else self.queue[0]
        if isinstance(item, Exception):
            raise item
        return item


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
