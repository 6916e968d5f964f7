"""Turn a stream of requests into few engine calls.

The spine's rule: one request in flight per document. A newer request for the same
document supersedes the older one, whose engine request is aborted at once; the older
LSP request is answered with an empty result (its client has moved on).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from lsp_copilot.telemetry import Telemetry

T = TypeVar("T")


class Superseded(Exception):
    """A newer request for the same document took this one's place."""


class Scheduler:
    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry
        self._inflight: dict[str, asyncio.Future[Any]] = {}

    @property
    def queue_depth(self) -> int:
        return sum(1 for task in self._inflight.values() if not task.done())

    async def run(self, key: str, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` as the only request in flight for ``key``.

        Raises ``Superseded`` if a newer request replaced it, and ``CancelledError`` if
        the caller itself was cancelled (``$/cancelRequest``); both abort the engine call.
        """
        previous = self._inflight.get(key)
        if previous is not None and not previous.done():
            previous.cancel()
            self.telemetry.count("superseded")
        task: asyncio.Task[T] = asyncio.ensure_future(work())
        self._inflight[key] = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                self.telemetry.count("cancelled")
                raise
            raise Superseded() from None
        finally:
            if self._inflight.get(key) is task:
                del self._inflight[key]

    def cancel_all(self) -> None:
        for task in self._inflight.values():
            task.cancel()
