"""A shared engine hands its socket over to its compiled copy: servers finish their calls on
the old engine and move to the copy without an error; a copy whose engine is gone steps
aside. Fake engines over real Unix sockets (the real compiled copy:
tests/e2e/test_shared_engine.py)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lsp_copilot.cli.engine import compiled_copy
from lsp_copilot.engine import defaults
from lsp_copilot.engine.base import EngineRequest
from lsp_copilot.engine.shared import handoff
from lsp_copilot.engine.shared import host as host_mod
from lsp_copilot.engine.shared.client import SharedEngine
from lsp_copilot.engine.shared.host import EngineHost, bind
from lsp_copilot.engine.shared.runtime import EnginePlace, private_dir
from lsp_copilot.models.presets import default_preset, typing_preset
from lsp_copilot.settings.core import Settings, parse_settings
from lsp_copilot.settings.engine import EngineSettings
from lsp_copilot.tokens import TokenCounters
from tests.support.fakes import FakeEngine
from tests.support.poll import until


async def _host(place: EnginePlace, path: Path, engine: FakeEngine, *,
                linger: bool = True) -> tuple[EngineHost, asyncio.AbstractServer]:
    host = EngineHost(place, Settings().engine_setup, "fake", 1.0, lambda s, r: engine,
                      linger=linger)
    server = await asyncio.start_unix_server(host.handle, sock=bind(place, path))
    host.socket_path, host.socket_inode = path, path.stat().st_ino
    await host.load()
    return host, server


@pytest.fixture
async def place(tmp_path: Path) -> AsyncIterator[EnginePlace]:
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"lc-handoff-{os.getpid()}-{id(tmp_path)}"
    yield EnginePlace(private_dir(folder), "fake-0123456789")
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


async def test_servers_finish_their_calls_then_move_to_the_compiled_copy(
        place: EnginePlace, monkeypatch: Any) -> None:
    monkeypatch.setattr(host_mod, "HANDOFF_CHECK_S", 0.01)
    monkeypatch.setattr(host_mod, "IDLE_CHECK_S", 0.01)
    eager, compiled = FakeEngine(reply="eager answer", step_s=0.05), FakeEngine(reply="copy")
    old, old_server = await _host(place, place.socket, eager)
    client = SharedEngine(place, old._state_message(), TokenCounters())
    await client.warm_up()
    running = asyncio.ensure_future(old.run_until_done())
    call = asyncio.ensure_future(client.generate(EngineRequest("a", "x", 16)))
    await asyncio.wait_for(eager.started.wait(), 5)

    new, new_server = await _host(place, place.next_socket, compiled, linger=False)
    new.take_over(old.socket_inode or 0)
    assert place.socket.stat().st_ino == new.socket_inode and not place.next_socket.exists()
    assert new.owns_socket() and not old.owns_socket()
    old.successor_started = True  # (as compile_later sets it): the bench still waits
    assert old.status()["successor_pending"] and not new.status()["successor_pending"]

    assert (await asyncio.wait_for(call, 5)).text == "eager answer"  # not cut by the move
    await asyncio.wait_for(running, 5)  # its server left when idle: the old engine exits
    # ... and joined the copy before its next call (the copy does not idle out meanwhile).
    await until(lambda: new.status()["clients"] == 1 and client.pid == os.getpid(), 5,
                "the server joined the copy")  # (client.pid: the copy's)
    assert not compiled.requests
    assert (await client.generate(EngineRequest("b", "y", 16))).text == "copy"
    assert [r.request_id[-1] for r in compiled.requests] == ["b"]
    assert new.status()["clients"] == 1
    await client.shutdown()
    for host, server in ((old, old_server), (new, new_server)):
        server.close()
        await host.close()


async def test_a_call_racing_the_move_shares_one_connection_to_the_copy(
        place: EnginePlace) -> None:
    """The server's own move to the copy and a call made at that moment open one
    connection between them, not two (the copy would count a client that never leaves)."""
    old, old_server = await _host(place, place.socket, FakeEngine(reply="eager"))
    client = SharedEngine(place, old._state_message(), TokenCounters())
    await client.warm_up()
    new, new_server = await _host(place, place.next_socket, FakeEngine(reply="copy"),
                                  linger=False)
    new.take_over(old.socket_inode or 0)
    client._moved = True  # as the old engine's `moved` sets it, at a known moment
    client._move_if_idle()  # the move is scheduled; the call below comes first
    assert (await client.generate(EngineRequest("a", "x", 16))).text == "copy"
    await until(lambda: client._reconnect is None, 5, "the move to the copy ended")
    assert new.status()["clients"] == 1
    await client.shutdown()
    for host, server in ((old, old_server), (new, new_server)):
        server.close()
        await host.close()


async def test_a_copy_whose_engine_is_gone_steps_aside(place: EnginePlace) -> None:
    old, old_server = await _host(place, place.socket, FakeEngine())
    new, new_server = await _host(place, place.next_socket, FakeEngine(), linger=False)
    inode = old.socket_inode or 0
    old_server.close()
    await old.close()
    place.socket.unlink()  # the engine stopped before its copy was ready
    new.take_over(inode)
    assert new._done.is_set() and not place.socket.exists()
    new_server.close()
    await new.close()
    place.next_socket.unlink()


async def test_an_engine_stopped_before_its_copy_took_over_stops_the_copy(
        place: EnginePlace) -> None:
    old, old_server = await _host(place, place.socket, FakeEngine())
    copy, copy_server = await _host(place, place.next_socket, FakeEngine(), linger=False)
    assert not old.status()["successor_pending"]
    old.successor_started = True
    status = old.status()
    assert status["successor"] == "compiling a faster copy" and status["successor_pending"]
    old_server.close()
    await old.close()
    await asyncio.wait_for(copy._done.wait(), 5)  # told to stop: nobody would reach it
    copy_server.close()
    await copy.close()
    place.next_socket.unlink()
    status = old.status()
    assert "exited" in status["successor"] and not status["successor_pending"]


async def test_the_copy_waits_for_a_quiet_cpu_and_not_for_a_stopping_engine(
        monkeypatch: Any) -> None:
    import psutil

    shares = [0.0, 10.0, 10.0, 95.0, 10.0, 10.0, 10.0, 99.0]  # (the first starts a count)
    monkeypatch.setattr(psutil, "cpu_percent", lambda interval: shares.pop(0))
    assert await handoff.quiet_cpu(asyncio.Event(), tick_s=0.001)
    assert shares == [99.0]  # three quiet ticks in a row, not three in all
    done = asyncio.Event()
    done.set()
    assert not await handoff.quiet_cpu(done, tick_s=0.001)


def test_only_the_cpu_typing_model_left_to_its_default_compiles_later() -> None:
    typing, code = typing_preset("cpu"), default_preset("cpu")
    assert typing is not None
    assert defaults.compile_later(EngineSettings(model=typing.name), "cpu").value is True
    assert defaults.compile_later(EngineSettings(model=code.name), "cpu").value is False
    assert defaults.compile_later(EngineSettings(model=typing.name, enforce_eager=True),
                                  "cpu").value is False
    assert defaults.compile_later(EngineSettings(model=typing.name), "cuda").value is False


def test_the_copy_is_the_same_engine_compiled() -> None:
    args = argparse.Namespace(name="smollm2-135m-0123456789", label="smollm2-135m",
                              idle_minutes=15.0)
    fields = {"model": "smollm2-135m", "speculativeTokens": 4}
    command = compiled_copy(args, fields)(1234)
    given = json.loads(command[command.index("--settings") + 1])
    assert given == fields | {"enforceEager": False}
    assert command[command.index("--replaces") + 1] == "1234"
    assert command[command.index("--name") + 1] == args.name  # the same socket's name
    settings, problems = parse_settings(given)
    assert not problems and settings.engine_setup.engine.enforce_eager is False


async def test_engine_status_tells_a_compiled_engine_and_a_copy_under_way(
        place: EnginePlace, monkeypatch: Any, capsys: Any) -> None:
    from lsp_copilot.cli.engine import cmd_status

    monkeypatch.setenv("LSP_COPILOT_RUNTIME_DIR", str(place.folder))
    old, server = await _host(place, place.socket, FakeEngine())
    old.successor_planned = True
    await asyncio.to_thread(cmd_status, argparse.Namespace(json=False))
    line = capsys.readouterr().out
    assert "ready, model fake" in line and "waiting for a quiet CPU" in line, line
    old.settings = parse_settings({"enforceEager": False})[0].engine_setup
    old.successor_planned = False
    await asyncio.to_thread(cmd_status, argparse.Namespace(json=False))
    line = capsys.readouterr().out
    assert "ready, compiled, model fake" in line and "quiet" not in line, line
    server.close()
    await old.close()


async def test_a_copy_that_never_takes_over_is_stopped_and_the_engine_serves_on(
        place: EnginePlace, monkeypatch: Any) -> None:
    monkeypatch.setattr(handoff, "COPY_LIMIT_S", 0.05)
    monkeypatch.setattr(host_mod, "HANDOFF_CHECK_S", 0.01)

    async def quiet(done: asyncio.Event) -> bool:
        return True

    monkeypatch.setattr(handoff, "quiet_cpu", quiet)
    monkeypatch.setattr(handoff, "start", lambda place, command: True)
    old, old_server = await _host(place, place.socket, FakeEngine())
    copy, copy_server = await _host(place, place.next_socket, FakeEngine(), linger=False)
    commands: list[int] = []
    await asyncio.wait_for(old.compile_later(lambda inode: commands.append(inode) or []), 5)
    assert commands == [old.socket_inode]
    await asyncio.wait_for(copy._done.wait(), 5)  # stuck (never took over): stopped
    assert old.owns_socket() and not old._done.is_set()
    for host, server in ((copy, copy_server), (old, old_server)):
        server.close()
        await host.close()
    place.next_socket.unlink()
