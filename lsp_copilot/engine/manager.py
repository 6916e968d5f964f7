"""Engine lifecycle: load in the background, report progress, fail without dying, and
keep the engine alive.

The server must answer from the first keystroke, so requests never wait for a load:
until the engine is ready they get ``EngineUnavailable`` and the handler answers empty.
Once ready, a supervisor asks the engine to prove it is alive (a health check with a
timeout, and at once when a call fails or overruns its deadline). A dead or stuck engine
ends every call in flight at once (they answer empty), the user is told, and the engine is
restarted with backoff; after too many failures it stays down until the user retries.
"""

from __future__ import annotations

import asyncio
import dataclasses
import faulthandler
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from lsp_copilot.engine.base import Engine, EngineInfo, EngineUnavailable
from lsp_copilot.engine.breaker import OPEN, Breaker
from lsp_copilot.engine.factory import EngineFactory, Reporter, log_streams
from lsp_copilot.engine.failures import LoadStalled, explain_failure, unreachable
from lsp_copilot.engine.supervisor import RestartPolicy, SupervisedEngine
from lsp_copilot.settings.layers import EngineSetup
from lsp_copilot.settings.supervision import SupervisionSettings
from lsp_copilot.telemetry import Telemetry

log = logging.getLogger(__name__)

Notifier = Callable[[str, str], None]
"""(level: info | back | warning | error, message): how the user is told about the engine
(back: an engine that was passed over answers again)."""

DISPOSE_TIMEOUT_S = 15.0
BUSY_SHARE = 0.05
"""An engine that used this share of a core during a timed-out health check is busy, not
stuck (a stopped or deadlocked process uses none)."""
WARM_UP_TIMEOUT_S = 120.0
LOAD_POLL_S = 5.0
"""How often a load's progress is looked at (engineLoadTimeoutS is minutes)."""


def _log_notice(level: str, message: str) -> None:
    log.log(logging.ERROR if level == "error" else logging.WARNING, message)


def _log_progress(message: str) -> None:
    log.info("engine: %s", message)


def _reason(exc: BaseException) -> str:
    """Why a health check failed, in words; vLLM's EngineDeadError says only 'see above'."""
    if "EngineDead" in type(exc).__name__:
        return "its process died"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@dataclass
class LoadResult:
    ok: bool
    message: str
    seconds: float


class EngineManager:
    """Owns at most one engine and keeps it alive.

    States: idle, loading, ready, restarting (found dead or stuck; waiting out the backoff),
    failed (could not start, or failed too often: down until ``retry``), stopped.
    """

    def __init__(
        self,
        factory: Callable[[EngineSetup, Reporter], Engine] | None = None,
        *,
        policy: RestartPolicy | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._factory = factory or EngineFactory()
        self._engine: Engine | None = None
        self.state = "idle"
        self.error: str | None = None
        self.load_seconds: float | None = None
        self._load_task: asyncio.Task[LoadResult] | None = None
        self.settings = EngineSetup()  # the last start's; supervision follows changes
        self.telemetry = Telemetry()  # the server puts its own here
        self.notify: Notifier = _log_notice  # the server tells the user (showMessage)
        self.policy = policy or RestartPolicy()
        self._clock, self._sleep = clock, sleep
        self.report: Reporter = _log_progress  # progress of a retry (the command sets it)
        # What the user does to start an engine that stays down (the server names its
        # command), as the start of a sentence.
        self.retry_hint = "Restart lsp-copilot"
        self._epoch = 0  # one per life of an engine; stale monitors and calls see it change
        self._down: asyncio.Future[str] | None = None  # resolves when this life ends
        self._suspect: asyncio.Event | None = None
        self._monitor: asyncio.Task[None] | None = None
        self._recovery: asyncio.Task[None] | None = None
        self._failures: deque[float] = deque()
        self._last_progress = 0.0  # when a generation last streamed text (monotonic)
        self.breaker = Breaker(clock=clock)
        self.load_poll_s = LOAD_POLL_S
        self._unreachable = False  # the last load failed for want of a connection

    @property
    def info(self) -> EngineInfo | None:
        return self._engine.info if self._engine else None

    def engine(self) -> Engine:
        """The ready engine, wrapped so that every call has a deadline and ends at once
        when the engine goes down."""
        if self._engine is None or self.state != "ready" or self._down is None:
            raise EngineUnavailable(self.error or f"engine is {self.state}")
        return SupervisedEngine(self._engine, self._down, self)

    def stats(self) -> dict[str, int]:
        return self._engine.stats() if self._engine else {}

    # -- what supervised calls report (the Guard protocol) -------------------------------

    def deadline_s(self) -> float:
        return self.settings.supervision.request_timeout_ms / 1000

    def suspect(self) -> None:
        """A call failed or overran: check the engine's health now, not at the next tick."""
        if self._suspect is not None:
            self._suspect.set()

    def count(self, name: str) -> None:
        self.telemetry.count(name)

    def progress(self) -> None:
        self._last_progress = time.monotonic()

    def outcome(self, ok: bool | None) -> None:
        if self.breaker.record(ok) == OPEN:
            self.count("breaker_opened")
            log.warning("%d engine calls failed within %g s: no requests for %g s",
                        self.breaker.failures, self.breaker.window_s, self.breaker.cooldown_s)

    def available(self) -> bool:
        """Ready, and its breaker lets a request through (see engine/breaker.py)."""
        s = self.settings.supervision
        self.breaker.failures = s.breaker_failures
        self.breaker.window_s = s.breaker_window_ms / 1000
        self.breaker.cooldown_s = s.breaker_cooldown_ms / 1000
        return self.state == "ready" and self.breaker.allow()

    # -- loading ----------------------------------------------------------------------

    def use_supervision(self, supervision: SupervisionSettings) -> None:
        """The supervision settings changed: timeouts, health checks and breakers follow
        at once (the engine itself keeps running)."""
        self.settings = dataclasses.replace(self.settings, supervision=supervision)

    def start(self, settings: EngineSetup, report: Reporter = lambda _: None) -> asyncio.Task[Any]:
        """Begin loading in a worker thread; the returned task resolves to a LoadResult."""
        self.settings = settings
        self._load_task = asyncio.ensure_future(self._first_load(settings, report))
        return self._load_task

    async def _first_load(self, settings: EngineSetup, report: Reporter) -> LoadResult:
        """The first load; a remote backend that cannot be reached yet (refused, or no
        answer) is tried again until it is, meanwhile its requests take the next engine of
        their route. A wrong key or model is no reason to try again."""
        self._unreachable = False
        result = await self._load(settings, report)
        if not result.ok and self.state == "failed" and self._unreachable:
            self.state = "restarting"
            self.notify("warning", f"lsp-copilot: the engine could not start: {result.message} "
                        "Trying it again until it answers; meanwhile suggestions come from "
                        "the next engine of their route (`routes`), if there is one.")
            self._recovery = asyncio.ensure_future(
                self._recover(None, result.message, told=True))
        return result

    async def wait_ready(self) -> LoadResult | None:
        """The load's result; a waiter that is cancelled (a document's warm-up when it is
        closed) leaves the load going (awaiting the task itself would cancel it too)."""
        return await asyncio.shield(self._load_task) if self._load_task else None

    async def _load(
        self, settings: EngineSetup, report: Reporter, failed: str = "failed"
    ) -> LoadResult:
        """Load and warm up; on failure the state becomes ``failed`` (``restarting`` while
        the supervisor still has attempts left, so nobody sees a transient failure)."""
        self.state, self.error = "loading", None
        started = time.perf_counter()
        try:
            engine = await self._start_watched(settings, report)
        except asyncio.CancelledError:
            self.state = "stopped"
            raise
        except BaseException as exc:  # SystemExit from a child, OOM, import errors...
            self.state = failed
            self.error = explain_failure(exc)
            self._unreachable = unreachable(exc)
            if self._unreachable:  # tried again and again: one line each, no traceback
                log.warning("engine failed to start: %s", self.error)
            else:
                log.exception("engine failed to start")
            return LoadResult(False, self.error, time.perf_counter() - started)
        if self.state != "stopped":
            report("warming up")
            try:
                await asyncio.wait_for(engine.warm_up(), WARM_UP_TIMEOUT_S)
            except Exception as exc:
                error = explain_failure(exc)
                await self._dispose(engine)
                self.state, self.error = failed, error
                return LoadResult(False, error, time.perf_counter() - started)
        self.load_seconds = time.perf_counter() - started
        if self.state == "stopped":  # shut down while loading
            await engine.shutdown()
            return LoadResult(False, "stopped", self.load_seconds)
        self._engine, self.state = engine, "ready"
        self._arm(engine)
        return LoadResult(True, f"ready in {self.load_seconds:.1f} s", self.load_seconds)

    async def _start_watched(self, settings: EngineSetup, report: Reporter) -> Engine:
        """The factory, under a watchdog: a start that hangs is killed (its stacks go to
        the log) and tried once more; a second hang is a failure with its reason."""
        for attempt in (1, 2):
            try:
                return await self._watch_load(settings, report)
            except LoadStalled as exc:
                if attempt == 2:
                    raise
                self.count("engine_load_stalls")
                self.notify("warning", f"lsp-copilot: {exc}; it was stopped (stacks in the "
                            "log) and is starting once more.")
        raise AssertionError("unreachable")

    async def _watch_load(self, settings: EngineSetup, report: Reporter) -> Engine:
        moved = self._clock()

        def reporter(message: str) -> None:  # from the loading thread; "": it moves
            nonlocal moved
            moved = self._clock()
            if message:
                report(message)

        busy = getattr(self._factory, "busy_seconds", None)
        stalled = getattr(self._factory, "stalled", None)
        limit = self._load_timeout(settings)
        task = asyncio.ensure_future(asyncio.to_thread(self._factory, settings, reporter))
        cpu = busy(settings) if busy is not None else None
        while True:
            try:
                return await asyncio.wait_for(asyncio.shield(task), self.load_poll_s)
            except TimeoutError:
                pass
            now_cpu = busy(settings) if busy is not None else None
            if cpu is not None and now_cpu is not None and (
                    now_cpu - cpu >= BUSY_SHARE * self.load_poll_s):
                moved = self._clock()
            cpu = now_cpu
            if limit is None or self._clock() - moved < limit:
                continue
            log.error("the engine start made no progress for %g s: stopping it", limit)
            for stream in log_streams():
                faulthandler.dump_traceback(stream, all_threads=True)
            if stalled is not None:
                await asyncio.to_thread(stalled, settings)
            task.add_done_callback(lambda t: None if t.cancelled() else t.exception())
            raise LoadStalled(f"the engine start made no progress for {limit:g} s "
                              "(no load step, no log line, no CPU)")

    @staticmethod
    def _load_timeout(settings: EngineSetup) -> float | None:
        """engineLoadTimeoutS for this device; None for a remote backend (its own
        timeouts bound every try)."""
        if settings.remote.engine_backend == "remote":
            return None
        from lsp_copilot.engine.device import detect

        return settings.supervision.load_timeout_s(detect(settings.engine.device).device)

    def retry(self, report: Reporter | None = None) -> asyncio.Task[LoadResult]:
        """The user's ``lspCopilot.restartEngine``: forget past failures, (re)load now."""
        if self.state == "loading" and self._load_task is not None:
            return self._load_task
        self._failures.clear()
        if self._recovery is not None and not self._recovery.done():
            self._recovery.cancel()  # it is waiting out a backoff (loading is handled above)
        old = self._end_life("restarted by the user")
        if report is not None:
            self.report = report
        self.state, self.error = "loading", None  # now: a client asking next sees it
        self._load_task = asyncio.ensure_future(self._reload(old))
        return self._load_task

    async def _reload(self, old: Engine | None) -> LoadResult:
        self.state = "loading"
        if old is not None:
            await self._dispose(old)
        result = await self._load(self.settings, lambda m: self.report(m))
        if result.ok:
            self.count("engine_restarts")
        return result

    # -- supervision ------------------------------------------------------------------

    def _arm(self, engine: Engine) -> None:
        """A new life: a fresh 'down' future for its calls, and a monitor for it."""
        self._epoch += 1
        self.breaker.reset()
        self._down = asyncio.get_running_loop().create_future()
        self._suspect = asyncio.Event()
        self._monitor = asyncio.ensure_future(self._watch(engine, self._epoch, self._suspect))

    def _end_life(self, reason: str) -> Engine | None:
        """End the current life: calls in flight fail at once; return the engine to dispose."""
        self._epoch += 1
        if self._down is not None and not self._down.done():
            self._down.set_result(reason)
        if self._monitor is not None and self._monitor is not asyncio.current_task():
            self._monitor.cancel()
        engine, self._engine = self._engine, None
        return engine

    async def _watch(self, engine: Engine, epoch: int, suspect: asyncio.Event) -> None:
        while True:
            waiter = asyncio.ensure_future(suspect.wait())
            sleeper = asyncio.ensure_future(
                self._sleep(self.settings.supervision.health_check_interval_ms / 1000))
            try:
                await asyncio.wait({waiter, sleeper}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                waiter.cancel()
                sleeper.cancel()
            if self._epoch != epoch or self.state != "ready":
                return
            suspect.clear()
            timeout = self.settings.supervision.health_check_timeout_ms / 1000
            cpu_before = engine.busy_seconds()
            try:
                await asyncio.wait_for(engine.check_health(), timeout)
                continue
            except TimeoutError:
                # Slow is not stuck: on a starved machine one engine step can outlast the
                # timeout. An engine that streamed text or kept using CPU meanwhile is alive.
                if time.monotonic() - self._last_progress < timeout:
                    log.warning("slow health check, but the engine is streaming: keep it")
                    continue
                cpu_after = engine.busy_seconds()
                if cpu_before is not None and cpu_after is not None and (
                        cpu_after - cpu_before >= BUSY_SHARE * timeout):
                    log.warning("slow health check, but the engine is computing: keep it")
                    continue
                reason = f"it did not answer a health check within {timeout:g} s"
            except Exception as exc:
                reason = _reason(exc)
            if self._epoch == epoch and self.state == "ready":
                self._incident(reason)
            return

    def _incident(self, reason: str) -> None:
        """The engine is dead or stuck: end its calls now, then restart it (or give up)."""
        log.error("the engine stopped: %s", reason)
        self.count("engine_incidents")
        old = self._end_life(reason)
        self.state, self.error = "restarting", f"the engine stopped: {reason}"
        self._recovery = asyncio.ensure_future(self._recover(old, reason))

    async def _recover(self, old: Engine | None, reason: str, told: bool = False) -> None:
        """Restart with backoff until the engine is back or too many restarts failed;
        ``told``: the user already heard why (the first notice is not repeated)."""
        if old is not None:
            await self._dispose(old)
        attempt = 0
        while self.state == "restarting":
            now = self._clock()
            self._failures.append(now)
            while self._failures and now - self._failures[0] > self.policy.window_s:
                self._failures.popleft()
            allowed = self.settings.supervision.engine_max_restarts
            # A remote backend is not ours to restart: we wait for it to be back, however
            # long that takes, trying again at most every breakerCooldownMs.
            remote = self.settings.remote.engine_backend == "remote"
            if len(self._failures) > allowed and not remote:
                self.state = "failed"
                self.error = (
                    f"the engine stopped ({reason}) and {len(self._failures) - 1} restart(s) "
                    f"in the last {self.policy.window_s / 60:g} minutes did not keep it up; "
                    f"it stays down. {self.retry_hint} to try again."
                    if allowed else
                    f"the engine stopped ({reason}); automatic restarts are off "
                    f"(engineMaxRestarts = 0). {self.retry_hint} to start it again."
                )
                self.notify("error", f"lsp-copilot: {self.error}")
                return
            attempt += 1
            delay = self.policy.delay(attempt)
            if remote:
                delay = min(delay, self.settings.supervision.breaker_cooldown_ms / 1000)
            if attempt == 1 and not told:  # once per incident
                self.notify("warning", f"lsp-copilot: the engine stopped ({reason}); "
                            f"{'trying it again' if remote else 'restarting it'} in "
                            f"{delay:g} s. Until it is back, suggestions come from the next "
                            "engine of their route (`routes`), if there is one.")
            await self._sleep(delay)
            if self.state != "restarting":  # shut down or retried meanwhile
                return
            self._load_task = asyncio.ensure_future(
                self._load(self.settings, _log_progress, failed="restarting"))
            result = await self._load_task
            if result.ok:
                self.count("engine_restarts")
                self.notify("info", f"lsp-copilot: the engine is back ({result.message}).")
                return
            if self.state == "stopped":
                return
            reason = f"the restart failed: {result.message}"
            self.state, self.error = "restarting", reason

    async def _dispose(self, engine: Engine) -> None:
        """Shut a dead or stuck engine down without ever waiting on it for long (a shared
        one is ended for every server: they reattach to the one that replaces it)."""
        condemn = getattr(engine, "condemn", None)
        if condemn is not None:
            await asyncio.to_thread(condemn)
        try:
            await asyncio.wait_for(engine.shutdown(), DISPOSE_TIMEOUT_S)
        except Exception:
            log.exception("shutting down the old engine failed")

    async def shutdown(self) -> None:
        """Stop the engine and its child process; safe to call twice."""
        restarting = self.state == "restarting"
        self.state = "stopped"
        # A load in progress cannot be interrupted (it runs in a thread); _load shuts the
        # engine down as soon as it returns, and exit_now() stops its processes if we leave
        # first. Waiting here would keep `shutdown` unanswered for the whole load.
        if restarting and self._recovery is not None:
            self._recovery.cancel()  # waiting out a backoff or disposing: nothing to lose
        engine = self._end_life("the server is shutting down")
        if engine is not None:
            try:
                await engine.shutdown()
            except Exception:
                log.exception("engine shutdown failed")
