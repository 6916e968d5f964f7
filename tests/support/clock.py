"""Clocks that tests move by hand: time-dependent logic checked without waiting."""

from __future__ import annotations

import asyncio


class ManualClock:
    """``now`` stays where the test puts it."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class ScriptedClock(ManualClock):
    """``sleep`` records the delay and moves ``now`` forward at once: no real time passes."""

    def __init__(self) -> None:
        super().__init__(0.0)
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)  # let others run

    def backoffs(self) -> list[float]:
        """The sleeps of a second or more: restart backoffs, not health-check ticks."""
        return [s for s in self.sleeps if s >= 1.0]
