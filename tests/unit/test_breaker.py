"""The circuit breaker alone, on a clock the test moves."""

from __future__ import annotations

from lsp_copilot.engine.breaker import CLOSED, HALF_OPEN, OPEN, Breaker
from tests.support.clock import ManualClock


def _breaker(**kw: float) -> tuple[Breaker, ManualClock]:
    clock = ManualClock()
    return Breaker(failures=3, window_s=30, cooldown_s=10, clock=clock, **kw), clock  # type: ignore[arg-type]


def test_failures_within_the_window_open_it_and_spread_out_ones_do_not() -> None:
    breaker, clock = _breaker()
    for step in (20, 20, 11):  # failures at 100, 120, 140, 151: never three within 30 s
        assert breaker.record(False) is None
        clock.now += step
    assert breaker.record(False) is None and breaker.state == CLOSED  # 140 and 151
    clock.now += 1
    assert breaker.record(False) == OPEN and breaker.opened == 1  # 140, 151, 152
    assert not breaker.allow()


def test_an_answer_in_between_starts_the_count_again() -> None:
    breaker, _ = _breaker()
    breaker.record(False)
    breaker.record(False)
    breaker.record(True)
    breaker.record(False)
    assert breaker.state == CLOSED and breaker.stats()["recent_failures"] == 1


def test_after_the_cooldown_one_probe_goes_through_and_its_answer_closes_it() -> None:
    breaker, clock = _breaker()
    for _ in range(3):
        breaker.record(False)
    clock.now += 9.9
    assert not breaker.allow()
    clock.now += 0.1
    assert breaker.allow() and breaker.state == HALF_OPEN
    assert not breaker.allow()  # one probe at a time
    clock.now += 10
    assert breaker.allow()  # that probe never reached the engine (a cached answer)
    assert not breaker.allow()
    assert breaker.record(True) == CLOSED
    assert breaker.allow() and breaker.allow()


def test_a_failed_probe_opens_it_for_another_cooldown_and_a_cancelled_one_lets_another() -> None:
    breaker, clock = _breaker()
    for _ in range(3):
        breaker.record(False)
    clock.now += 10
    assert breaker.allow()
    assert breaker.record(None) is None  # the user typed on: the probe said nothing
    assert breaker.allow()  # so the next request probes
    assert breaker.record(False) == OPEN and breaker.opened == 2
    clock.now += 5
    assert not breaker.allow()


def test_zero_failures_never_opens() -> None:
    breaker, _ = _breaker()
    breaker.failures = 0
    for _ in range(10):
        assert breaker.record(False) is None
    assert breaker.allow()
