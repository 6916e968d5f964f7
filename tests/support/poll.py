"""Waiting on a state change instead of sleeping: the test goes on as soon as it shows."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def until(predicate: Callable[[], object], timeout: float = 10.0,
                what: str = "condition") -> None:
    """Poll ``predicate`` until it is true; fail after ``timeout`` seconds (a bound for a
    hung test, not a measurement: a loaded machine only makes the wait longer)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} not reached within {timeout:g} s"
        await asyncio.sleep(0.005)
