"""The engine supervisor's logic: deadlines, death and hang detection, restart with backoff,
giving up, and the user's retry.

These tests use a FAKE engine (it can die or hang on command) and a scripted clock (its
sleeps advance a counter instead of time, and take no real time): they check the logic
only. Health-check timeouts stay in real time (short ones), as the manager measures them. The same
behaviours are checked through the real engine and the real protocol in
tests/e2e/test_engine_supervisor.py.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from dataclasses import replace

import pytest

from lsp_copilot.engine.base import (
    EngineDeadline,
    EngineDown,
    EngineRequest,
    EngineResult,
    EngineUnavailable,
)
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.engine.supervisor import RestartPolicy
from lsp_copilot.server.protocol import RESTART_COMMAND
from lsp_copilot.settings.core import Settings
from tests.support.clock import ScriptedClock
from tests.support.fakes import EngineFactory, FlakyEngine
from tests.support.poll import until

SETTINGS = Settings(request_timeout_ms=60_000, health_check_interval_ms=50,
                    health_check_timeout_ms=200)


def _manager(factory: EngineFactory, clock: ScriptedClock
             ) -> tuple[EngineManager, list[tuple[str, str]]]:
    manager = EngineManager(factory, clock=clock, sleep=clock.sleep)  # type: ignore[arg-type]
    manager.retry_hint = f"Run the command `{RESTART_COMMAND}`"  # as the server says it
    notices: list[tuple[str, str]] = []
    manager.notify = lambda level, message: notices.append((level, message))
    return manager, notices


REQUEST = EngineRequest(request_id="r1", prompt="def f():", max_tokens=8)


async def test_fake_engine_death_ends_inflight_call_at_once_and_restarts_with_backoff() -> None:
    first, second = FlakyEngine("first"), FlakyEngine("second")
    clock = ScriptedClock()
    manager, notices = _manager(EngineFactory(first, second), clock)
    assert (await manager.start(SETTINGS.engine_setup)).ok
    call = asyncio.ensure_future(manager.engine().generate(REQUEST))
    await first.generating.wait()
    first.dead = True
    with pytest.raises(EngineDown):  # at once: the 60 s deadline would raise EngineDeadline
        await call
    assert first.cancelled == 1 and first.shut_down
    # The recovery tells the user after the state turns ready: wait for both.
    await until(lambda: manager.state == "ready" and len(notices) >= 2)
    assert manager.info is not None and manager.info.model == "second"
    assert clock.backoffs() == [1.0]
    counters = manager.telemetry.counters
    assert counters["engine_incidents"] == 1
    assert counters["engine_interrupted"] == 1
    assert counters["engine_restarts"] == 1
    # Told once about the incident (warning), and about the recovery (log only).
    assert [level for level, _ in notices] == ["warning", "info"]
    assert "restarting" in notices[0][1]
    await manager.shutdown()


async def test_fake_engine_stuck_fails_health_check_and_is_replaced() -> None:
    stuck, fresh = FlakyEngine("stuck"), FlakyEngine("fresh")
    clock = ScriptedClock()
    manager, notices = _manager(EngineFactory(stuck, fresh), clock)
    assert (await manager.start(SETTINGS.engine_setup)).ok
    stuck.stuck = True
    await until(lambda: manager.telemetry.counters["engine_incidents"] == 1)
    # The recovery tells the user after the state turns ready: wait for both.
    await until(lambda: manager.state == "ready" and len(notices) >= 2)
    assert "did not answer a health check" in notices[0][1]
    assert manager.info is not None and manager.info.model == "fresh"
    await manager.shutdown()


async def test_fake_engine_call_past_its_deadline_is_answered_and_checks_health() -> None:
    engine = FlakyEngine()
    manager = EngineManager(EngineFactory(engine))  # type: ignore[arg-type]  # real time
    settings = replace(SETTINGS, request_timeout_ms=100, health_check_interval_ms=3_600_000)
    probes = 0
    original = engine.check_health

    async def counting() -> None:
        nonlocal probes
        probes += 1
        await original()

    engine.check_health = counting  # type: ignore[method-assign]
    assert (await manager.start(settings.engine_setup)).ok
    with pytest.raises(EngineDeadline):  # the 30 s stream ends at the 0.1 s deadline
        await manager.engine().generate(REQUEST)
    assert manager.telemetry.counters["engine_deadline_exceeded"] == 1
    await until(lambda: probes == 1)  # a suspect call checks at once, not after an hour
    assert manager.state == "ready"  # healthy: nothing restarted
    await manager.shutdown()


async def test_fake_engine_repeated_failures_stay_down_until_retry() -> None:
    engine = FlakyEngine("dies")
    clock = ScriptedClock()
    factory = EngineFactory(engine, RuntimeError("no memory left"), RuntimeError("no memory left"),
                      RuntimeError("no memory left"), RuntimeError("no memory left"))
    manager, notices = _manager(factory, clock)
    assert (await manager.start(SETTINGS.engine_setup)).ok
    engine.dead = True
    await until(lambda: manager.state == "failed")
    assert clock.backoffs() == [1.0, 2.0, 4.0]  # 3 restarts (engineMaxRestarts), doubling
    assert factory.calls == 4
    assert RESTART_COMMAND in (manager.error or "")
    assert [level for level, _ in notices] == ["warning", "error"]  # once per incident, then why
    with pytest.raises(EngineUnavailable):
        manager.engine()
    await until(lambda: manager._recovery is not None and manager._recovery.done())
    assert factory.calls == 4  # stays down: the recovery, which alone tries again, ended

    good = FlakyEngine("good")
    factory.queue = [good]
    result = await manager.retry()
    assert result.ok and manager.state == "ready"
    assert manager.info is not None and manager.info.model == "good"
    assert manager.telemetry.counters["engine_restarts"] == 1
    await manager.shutdown()


async def test_fake_engine_max_restarts_zero_gives_up_at_once() -> None:
    engine = FlakyEngine()
    clock = ScriptedClock()
    factory = EngineFactory(engine)
    manager, notices = _manager(factory, clock)
    assert (await manager.start(replace(SETTINGS, engine_max_restarts=0).engine_setup)).ok
    engine.dead = True
    await until(lambda: manager.state == "failed")
    assert factory.calls == 1 and clock.backoffs() == []
    assert [level for level, _ in notices] == ["error"]
    assert "engineMaxRestarts = 0" in (manager.error or "")
    await manager.shutdown()


async def test_fake_engine_failures_older_than_the_window_are_forgotten() -> None:
    engines = [FlakyEngine(str(i)) for i in range(4)]
    clock = ScriptedClock()
    manager, _ = _manager(EngineFactory(*engines), clock)
    assert (await manager.start(replace(SETTINGS, engine_max_restarts=1).engine_setup)).ok
    for i in range(3):  # three deaths, each long after the previous: each one restarts
        engines[i].dead = True
        await until(lambda i=i: manager.state == "ready" and manager.info is not None
                     and manager.info.model == str(i + 1))
        clock.now += 3600
    assert manager.telemetry.counters["engine_restarts"] == 3
    await manager.shutdown()


async def test_fake_engine_shutdown_during_backoff_stays_stopped() -> None:
    engine = FlakyEngine()
    clock = ScriptedClock()
    factory = EngineFactory(engine, FlakyEngine("next"))
    manager, _ = _manager(factory, clock)
    manager.policy = RestartPolicy(backoff_s=1.0)

    backoff_over = asyncio.Event()

    async def held_sleep(seconds: float) -> None:
        """A backoff lasts until the test ends it; health-check ticks take no time."""
        clock.sleeps.append(seconds)
        if seconds >= 1:
            await backoff_over.wait()
        else:
            await asyncio.sleep(0)

    manager._sleep = held_sleep
    assert (await manager.start(SETTINGS.engine_setup)).ok
    engine.dead = True
    await until(lambda: manager.state == "restarting" and clock.backoffs() == [1.0])
    await manager.shutdown()
    backoff_over.set()
    await until(lambda: manager._recovery is not None and manager._recovery.done())
    assert manager.state == "stopped" and factory.calls == 1


async def test_fake_engine_slow_health_check_while_streaming_is_not_restarted() -> None:
    engine = FlakyEngine()
    clock = ScriptedClock()
    factory = EngineFactory(engine, FlakyEngine("replacement"))
    manager, notices = _manager(factory, clock)
    assert (await manager.start(SETTINGS.engine_setup)).ok

    async def streaming(request: EngineRequest) -> AsyncGenerator[EngineResult, None]:
        for _ in range(60):  # 0.6 s of steady output, three health-check timeouts long
            await asyncio.sleep(0.01)
            yield EngineResult(text="x")
        yield EngineResult(text="x", finish_reason="stop")

    async def overloaded() -> None:
        await asyncio.Event().wait()  # the round trip waits behind busy engine steps

    engine.stream = streaming  # type: ignore[method-assign]
    engine.check_health = overloaded  # type: ignore[method-assign]
    manager._monitor.cancel()  # type: ignore[union-attr]  # re-arm with the patched probe
    manager._arm(engine)
    result = await manager.engine().generate(REQUEST)
    assert result.text == "x"
    assert manager.state == "ready" and factory.calls == 1 and notices == []
    await manager.shutdown()


async def test_fake_engine_slow_health_check_while_computing_is_not_restarted() -> None:
    engine = FlakyEngine()
    clock = ScriptedClock()
    factory = EngineFactory(engine, FlakyEngine("replacement"))
    manager, notices = _manager(factory, clock)
    started = time.monotonic()
    engine.busy_seconds = lambda: time.monotonic() - started  # type: ignore[attr-defined]

    probes = 0

    async def overloaded() -> None:
        nonlocal probes
        probes += 1
        await asyncio.Event().wait()  # a long engine step: no answer, but CPU in use

    engine.check_health = overloaded  # type: ignore[method-assign]
    assert (await manager.start(SETTINGS.engine_setup)).ok
    # A probe starts only once the one before timed out and was judged: four judged.
    await until(lambda: probes >= 5)
    assert manager.state == "ready" and factory.calls == 1 and notices == []
    await manager.shutdown()


def test_restart_policy_doubles_up_to_a_cap() -> None:
    policy = RestartPolicy(backoff_s=1.0, backoff_max_s=10.0)
    assert [policy.delay(n) for n in range(1, 7)] == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


async def test_a_remote_backend_out_of_reach_is_tried_again_until_it_is_back() -> None:
    """Refused or silent (not a wrong key): tried again past engineMaxRestarts, every
    breakerCooldownMs at most, from the first load on; a wrong key stays failed."""
    from lsp_copilot.engine.remote.backend import RemoteError, RemoteRetryable

    clock = ScriptedClock()
    refused = RemoteRetryable("cannot connect to http://gpu-box:8000")
    good = FlakyEngine("remote")
    factory = EngineFactory(*[refused] * 6, good)
    manager, notices = _manager(factory, clock)
    remote = replace(SETTINGS, engine_backend="remote", breaker_cooldown_ms=4_000)
    result = await manager.start(remote.engine_setup)
    assert not result.ok and manager.state == "restarting"
    # The recovery tells the user after the state turns ready: wait for both.
    await until(lambda: manager.state == "ready" and len(notices) >= 2)
    assert factory.calls == 7  # more than engineMaxRestarts (3) allows a local engine
    assert clock.backoffs() == [1.0, 2.0, 4.0, 4.0, 4.0, 4.0]  # capped at the cooldown
    assert [level for level, _ in notices] == ["warning", "info"]
    assert "could not start: remote backend: cannot connect" in notices[0][1]
    await manager.shutdown()

    manager, _ = _manager(EngineFactory(RemoteError("refused the API key")), ScriptedClock())
    assert not (await manager.start(remote.engine_setup)).ok
    assert manager.state == "failed"
    assert manager._recovery is None  # nothing will try it again


async def test_the_supervised_engine_forwards_what_the_protocol_declares_only() -> None:
    engine = FlakyEngine()
    manager, _ = _manager(EngineFactory(engine), ScriptedClock())
    assert (await manager.start(SETTINGS.engine_setup)).ok
    supervised = manager.engine()
    assert supervised.encoder is None and supervised.busy_seconds() is None  # the defaults
    engine.busy_seconds = lambda: 1.5  # type: ignore[method-assign]
    assert supervised.busy_seconds() == 1.5
    assert not hasattr(supervised, "dead")  # what else the engine has stays its own
    await manager.shutdown()
