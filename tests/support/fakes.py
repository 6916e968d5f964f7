"""Fake engines for unit tests of scheduling logic (never reachable by a user)."""

from __future__ import annotations

import asyncio

from lsp_copilot.engine.base import EngineInfo, EngineRequest, EngineResult


class CharCounter:
    name = "chars/3 (test)"

    def count(self, text: str) -> int:
        return (len(text) + 2) // 3


class FakeEngine:
    """Streams ``reply`` a few characters at a time; records every prompt it gets."""

    def __init__(self, reply: str = " a + b\n", step_s: float = 0.01) -> None:
        self.info = EngineInfo("fake", "fake-model", "cpu", True, None)
        self.counter = CharCounter()
        self.reply = reply
        self.step_s = step_s
        self.prompts: list[str] = []
        self.started = asyncio.Event()  # set when a generation begins
        self.aborted = 0
        self.aborts = asyncio.Event()  # set at each abort
        self.sent = ""  # the text streamed so far by the latest generation
        self.progress = asyncio.Event()  # set whenever ``sent`` grows

    async def streamed(self, chars: int) -> None:
        """Wait until the latest generation has streamed at least ``chars`` characters."""
        while len(self.sent) < chars:
            self.progress.clear()
            await self.progress.wait()

    async def generate(self, request: EngineRequest) -> EngineResult:
        self.prompts.append(request.prompt)
        self.started.set()
        text = self.sent = ""
        try:
            for i in range(0, len(self.reply), 2):
                await asyncio.sleep(self.step_s)
                text = self.sent = self.reply[: i + 2]
                self.progress.set()
                if request.stop_at is not None:
                    cut = request.stop_at(text)
                    if cut is not None:
                        return EngineResult(text=text[:cut], stopped_early=True)
        except asyncio.CancelledError:
            self.aborted += 1
            self.aborts.set()
            raise
        return EngineResult(text=text)

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
