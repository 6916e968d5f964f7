"""The shared engine's host and a server's client over a real Unix socket, with a fake
engine inside (the real one: tests/e2e/test_shared_engine.py); its folder's privacy; and
the watchdog of a start that hangs."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from lsp_copilot.engine.base import EngineDown, EngineRequest
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.engine.shared import host as host_mod
from lsp_copilot.engine.shared.client import SharedEngine
from lsp_copilot.engine.shared.host import EngineHost, bind
from lsp_copilot.engine.shared.runtime import (
    EnginePlace,
    RuntimeDirError,
    engine_fields,
    engine_name,
    peer_uid,
    private_dir,
)
from lsp_copilot.settings.core import Settings
from lsp_copilot.tokens import TokenCounters
from tests.support.fakes import FakeEngine


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[EngineHost, FakeEngine, EnginePlace]]:
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"lc-unit-{os.getpid()}-{id(tmp_path)}"
    place = EnginePlace(private_dir(folder), "fake-0123456789")
    engine = FakeEngine(reply="return a + b\n\nmore", step_s=0.02)
    host = EngineHost(place, Settings().engine_setup, "fake", 1.0, lambda s, r: engine)
    server = await asyncio.start_unix_server(host.handle, sock=bind(place))
    await host.load()
    assert host.state == "ready"
    yield host, engine, place
    server.close()
    await host.close()
    place.socket.unlink(missing_ok=True)
    folder.rmdir() if not any(folder.iterdir()) else None


def _client(host: EngineHost, place: EnginePlace) -> SharedEngine:
    return SharedEngine(place, host._state_message(), TokenCounters())


async def test_generation_streams_and_the_servers_cut_aborts_it(served: Any) -> None:
    host, engine, place = served
    engine.stats = lambda: {"spec_draft_tokens": 7}  # type: ignore[method-assign]
    client = _client(host, place)

    def cut_at_blank(text: str) -> int | None:
        return text.find("\n\n") if "\n\n" in text else None

    result = await client.generate(EngineRequest("r1", "def add(a, b):\n", 16,
                                                 stop_at=cut_at_blank))
    assert result.text == "return a + b" and result.stopped_early
    await asyncio.wait_for(engine.aborts.wait(), 5)  # the host's generation ended too
    assert engine.requests[0].request_id.endswith("-r1")  # unique across servers
    await asyncio.wait_for(_counted(client), 5)  # the engine's counters, with no "done"
    await client.shutdown()


async def _counted(client: SharedEngine) -> None:
    while client.stats() != {"spec_draft_tokens": 7}:
        await asyncio.sleep(0.01)


async def test_cancel_frees_the_engine_and_a_second_server_shares_it(served: Any) -> None:
    host, engine, place = served
    first, second = _client(host, place), _client(host, place)
    await first.warm_up()
    await second.warm_up()
    await asyncio.wait_for(_attached(host, 2), 5)
    engine.step_s = 0.5
    call = asyncio.ensure_future(first.generate(EngineRequest("a", "x", 8)))
    await asyncio.wait_for(engine.started.wait(), 5)
    call.cancel()
    await asyncio.wait_for(engine.aborts.wait(), 5)
    engine.step_s = 0.001
    assert (await second.generate(EngineRequest("a", "y", 8))).text.startswith("return")
    await first.shutdown()
    await asyncio.wait_for(_attached(host, 1), 5)
    assert host.status()["clients"] == 1
    await second.check_health()
    await second.shutdown()


async def _attached(host: EngineHost, count: int) -> None:
    while host.status()["clients"] != count:
        await asyncio.sleep(0.01)


async def test_a_host_that_goes_away_ends_the_calls_at_once(served: Any) -> None:
    host, engine, place = served
    client = _client(host, place)
    engine.step_s = 5.0
    call = asyncio.ensure_future(client.generate(EngineRequest("r", "x", 8)))
    await asyncio.wait_for(engine.started.wait(), 5)
    await host.close()  # what a killed host looks like from here: the connection ends
    with pytest.raises(EngineDown):
        await asyncio.wait_for(call, 5)
    with pytest.raises(EngineDown):
        await client.check_health()


async def test_another_users_connection_is_refused(served: Any, monkeypatch: Any) -> None:
    host, _engine, place = served
    monkeypatch.setattr(host_mod, "same_user", lambda sock: False)
    client = _client(host, place)
    with pytest.raises(EngineDown):
        await asyncio.wait_for(client.generate(EngineRequest("r", "x", 8)), 5)
    assert host.status()["clients"] == 0


def test_peer_uid_is_the_connecting_process_user() -> None:
    left, right = socket.socketpair(socket.AF_UNIX)
    with left, right:
        assert peer_uid(left) == os.getuid()


def test_runtime_folder_must_be_private(tmp_path: Path) -> None:
    folder = tmp_path / "rt"
    assert private_dir(folder) == folder
    assert (folder.stat().st_mode & 0o777) == 0o700
    folder.chmod(0o755)
    with pytest.raises(RuntimeDirError, match="chmod 700"):
        private_dir(folder)


def test_socket_is_only_the_users(tmp_path: Path) -> None:
    place = EnginePlace(private_dir(tmp_path / "rt"), "m-1")
    with bind(place):
        assert (place.socket.stat().st_mode & 0o777) == 0o600


def test_engine_name_follows_the_settings_that_shape_the_engine() -> None:
    base = Settings().engine_setup

    def name(**settings: Any) -> str:
        return engine_name(Settings(**settings).engine_setup, "qwen")

    assert engine_name(base, "qwen") == name(engine_idle_minutes=3)
    assert engine_name(base, "qwen") == name(engine_shared=False)
    assert engine_name(base, "qwen") != name(speculative_method="none")
    assert engine_name(base, "qwen") != engine_name(base, "smollm2")
    assert "engineShared" not in engine_fields(base)


class HangingFactory:
    """A start that never returns until it is killed (as a hung vLLM start)."""

    def __init__(self) -> None:
        self.calls = 0
        self.killed = 0
        self._release = threading.Event()

    def __call__(self, settings: Settings, report: Any) -> Any:
        self.calls += 1
        self._release.wait(30)
        raise RuntimeError("killed")

    def busy_seconds(self, settings: Settings) -> float:
        return 0.0  # no CPU: stuck, not slow

    def stalled(self, settings: Settings) -> None:
        self.killed += 1
        self._release.set()
        self._release = threading.Event()


async def test_a_start_that_hangs_is_killed_retried_once_then_reported() -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 100.0  # every look at the clock: 100 s later
        return now[0]

    factory = HangingFactory()
    manager = EngineManager(factory, clock=clock)  # type: ignore[arg-type]
    manager.load_poll_s = 0.01
    notices: list[tuple[str, str]] = []
    manager.notify = lambda level, message: notices.append((level, message))
    result = await manager.start(Settings(engine_load_timeout_s=120).engine_setup)
    assert not result.ok and manager.state == "failed"
    assert factory.calls == 2 and factory.killed == 2
    assert "no progress for 120 s" in result.message and "twice" in result.message
    assert [level for level, _ in notices] == ["warning"]  # told at the first kill


async def test_a_cancelled_waiter_leaves_the_load_going() -> None:
    """A document's warm-up waits for the engine and is cancelled when the document
    closes; the load it waited on must go on (it once ended as 'stopped')."""
    release = threading.Event()
    engine = FakeEngine()

    def slow_factory(settings: Settings, report: Any) -> Any:
        release.wait(10)
        return engine

    manager = EngineManager(slow_factory)  # type: ignore[arg-type]
    load = manager.start(Settings(engine_shared=False).engine_setup)
    waiter = asyncio.ensure_future(manager.wait_ready())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    release.set()
    assert (await load).ok and manager.state == "ready"


def test_a_failure_the_engine_explained_reaches_the_user_as_it_is() -> None:
    from lsp_copilot.engine.failures import explain_failure
    from lsp_copilot.engine.shared.client import SharedEngineError

    said = "invalid engine settings: tensorParallelSize 64 needs 64 GPUs."
    assert explain_failure(SharedEngineError(said)) == said


async def test_a_new_engine_stops_only_the_engines_no_server_uses(served: Any,
                                                                  monkeypatch: Any) -> None:
    from lsp_copilot.engine.shared import control

    host, _engine, place = served
    gone: list[Any] = []
    monkeypatch.setattr(control, "wait_gone", gone.append)  # the host is this process
    client = _client(host, place)
    await client.warm_up()
    await asyncio.wait_for(_attached(host, 1), 5)
    stop = asyncio.to_thread(control.stop_unused, place.folder, "other-engine")
    assert await stop == [] and not host._done.is_set()  # a server uses it
    await client.shutdown()
    await asyncio.wait_for(_attached(host, 0), 5)
    assert await asyncio.to_thread(control.stop_unused, place.folder, "other-engine") == []
    assert not host._done.is_set()  # left a moment ago: the server may be reconnecting
    assert await asyncio.to_thread(control.stop_unused, place.folder, place.name) == []
    monkeypatch.setattr(host_mod, "UNUSED_AFTER_S", 0.0)
    stopped = await asyncio.to_thread(control.stop_unused, place.folder, "other-engine")
    assert stopped == [place.name] and host._done.is_set() and gone == [os.getpid()]


async def test_an_engine_whose_socket_was_taken_exits_once_its_servers_left(
        served: Any, monkeypatch: Any) -> None:
    host, engine, place = served
    monkeypatch.setattr(host_mod, "IDLE_CHECK_S", 0.01)
    host.socket_inode = place.socket.stat().st_ino
    client = _client(host, place)
    engine.step_s = 0.1
    call = asyncio.ensure_future(client.generate(EngineRequest("r", "x", 8)))
    await asyncio.wait_for(engine.started.wait(), 5)
    place.socket.unlink()
    bind(place).close()  # another engine's socket at the same path
    assert not host.owns_socket()
    run = asyncio.ensure_future(host.run_until_done())
    await asyncio.sleep(0.05)
    assert not run.done()  # a server still has a call here: told to move after it
    assert (await asyncio.wait_for(call, 5)).text.startswith("return")
    await asyncio.wait_for(run, 5)
    await client.shutdown()


async def test_a_start_that_fails_at_once_waits_for_its_server_to_read_why(
        tmp_path: Path) -> None:
    from lsp_copilot.engine.shared.client import SharedEngineError, SharedStarter

    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"lc-unit-fail-{os.getpid()}"
    place = EnginePlace(private_dir(folder), "broken-0123456789")

    def broken(settings: Settings, report: Callable[[str], None]) -> Any:
        raise ValueError("no such model")

    host = EngineHost(place, Settings().engine_setup, "broken", 1.0, broken)
    server = await asyncio.start_unix_server(host.handle, sock=bind(place))
    try:
        load = asyncio.ensure_future(host.load())
        await asyncio.wait_for(_state(host, "failed"), 5)
        assert not host._done.is_set()  # nobody has read why yet
        import socket as socket_mod

        sock = socket_mod.socket(socket_mod.AF_UNIX, socket_mod.SOCK_STREAM)
        sock.connect(str(place.socket))
        with pytest.raises(SharedEngineError, match="no such model"):
            await asyncio.to_thread(SharedStarter()._wait_ready, sock, lambda m: None, place)
        sock.close()
        await asyncio.wait_for(load, 5)
        assert host._done.is_set()
    finally:
        server.close()
        await host.close()
        place.socket.unlink(missing_ok=True)


async def _state(host: EngineHost, state: str) -> None:
    while host.state != state:
        await asyncio.sleep(0.01)
