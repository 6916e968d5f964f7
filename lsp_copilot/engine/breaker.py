"""A circuit breaker per engine: after repeated failures, stop sending it requests for a
while, then let one request through to see whether it is back.

Without one, a remote backend that is down or overloaded costs every keystroke its full
timeout, and a route's next engine is never tried. States: ``closed`` (requests go
through; failures within ``window_s`` are counted), ``open`` (none go through for
``cooldown_s`` after the last failure), ``half-open`` (one probe goes through; its answer
closes the breaker, its failure opens it again). A cancelled call (the user typed on)
says nothing about the engine: a cancelled probe lets the next request probe instead.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half-open"


@dataclass
class Breaker:
    failures: int = 3  # failures within window_s that open it; 0: never opens
    window_s: float = 30.0
    cooldown_s: float = 10.0
    clock: Callable[[], float] = time.monotonic
    state: str = CLOSED
    opened: int = 0  # how many times it opened
    _recent: deque[float] = field(default_factory=deque)
    _opened_at: float = 0.0
    _probing: bool = False
    _probe_at: float = 0.0

    def allow(self) -> bool:
        """Whether a request may go to the engine now (a half-open breaker lets one)."""
        if self.state == CLOSED:
            return True
        now = self.clock()
        if self.state == OPEN and now - self._opened_at >= self.cooldown_s:
            self.state = HALF_OPEN
        # A probe that never called the engine (answered from the cache) says nothing:
        # after a cooldown another request probes.
        if self.state == HALF_OPEN and (
                not self._probing or now - self._probe_at >= self.cooldown_s):
            self._probing, self._probe_at = True, now
            return True
        return False

    def record(self, ok: bool | None) -> str | None:
        """A call ended: answered (True), failed or timed out (False), cancelled (None).
        Returns the new state when this changed it."""
        now = self.clock()
        if ok is None:
            self._probing = False
            return None
        if ok:
            self._recent.clear()
            if self.state == CLOSED:
                return None
            self.state, self._probing = CLOSED, False
            return CLOSED
        if self.state == HALF_OPEN:
            return self._open(now)
        if self.state == OPEN or self.failures <= 0:
            return None
        self._recent.append(now)
        while self._recent and now - self._recent[0] > self.window_s:
            self._recent.popleft()
        return self._open(now) if len(self._recent) >= self.failures else None

    def reset(self) -> None:
        """A new life of the engine (reloaded, or a remote backend reached again)."""
        self.state, self._probing = CLOSED, False
        self._recent.clear()

    def _open(self, now: float) -> str:
        self.state, self._opened_at, self._probing = OPEN, now, False
        self._recent.clear()
        self.opened += 1
        return OPEN

    def stats(self) -> dict[str, object]:
        return {"state": self.state, "recent_failures": len(self._recent),
                "opened": self.opened}
