"""What the shared engine's host and its users trust: every malformed request gets an
answer, and nothing is read from a runtime folder or socket that is not this user's."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from lsp_copilot.cli import engine as engine_cli
from lsp_copilot.engine.base import EngineDown, EngineRequest
from lsp_copilot.engine.shared import client as client_mod
from lsp_copilot.engine.shared import runtime
from lsp_copilot.engine.shared.client import SharedEngine
from lsp_copilot.engine.shared.control import connect, stop_unused
from lsp_copilot.engine.shared.runtime import RuntimeDirError, places
from lsp_copilot.tokens import TokenCounters
from tests.unit.test_shared_engine import served  # noqa: F401 (the fixture)

GOOD = {"op": "generate", "id": "g1", "prompt": "def f():", "max_tokens": 8}
BAD = {
    "no max_tokens": {k: v for k, v in GOOD.items() if k != "max_tokens"},
    "max_tokens null": GOOD | {"max_tokens": None},
    "max_tokens a string": GOOD | {"max_tokens": "8"},
    "max_tokens zero": GOOD | {"max_tokens": 0},
    "no prompt": {k: v for k, v in GOOD.items() if k != "prompt"},
    "prompt a number": GOOD | {"prompt": 3},
    "no id": {k: v for k, v in GOOD.items() if k != "id"},
    "id a number": GOOD | {"id": 7},
    "token ids not numbers": GOOD | {"prompt_token_ids": ["a", "b"]},
    "stop_token_ids not numbers": GOOD | {"stop_token_ids": ["x"]},
    "temperature a word": GOOD | {"temperature": "hot"},
}


async def _exchange(place: Any, message: dict[str, Any]) -> dict[str, Any]:
    reader, writer = await asyncio.open_unix_connection(str(place.socket))
    try:
        writer.write(json.dumps(message).encode() + b"\n")
        line = await asyncio.wait_for(reader.readline(), 5)  # silence fails here
        reply: dict[str, Any] = json.loads(line)
        return reply
    finally:
        writer.close()


@pytest.mark.parametrize("case", sorted(BAD))
async def test_a_malformed_generate_gets_an_error_reply(served: Any, case: str) -> None:  # noqa: F811
    _host, engine, place = served
    message = BAD[case]
    reply = await _exchange(place, message)
    assert reply["op"] == "error", reply
    assert reply["id"] == message.get("id")
    assert "generate" in reply["message"]
    assert not engine.requests  # nothing reached the engine


async def test_a_well_formed_generate_still_streams(served: Any) -> None:  # noqa: F811
    _host, _engine, place = served
    reply = await _exchange(place, GOOD)
    assert reply["op"] in ("text", "done") and reply["id"] == "g1", reply


async def test_the_client_refuses_an_engine_of_another_user(
        served: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    host, engine, place = served
    monkeypatch.setattr(client_mod, "same_user", lambda sock: False)
    client = SharedEngine(place, host._state_message(), TokenCounters())
    with pytest.raises(EngineDown, match="not this user's"):
        await asyncio.wait_for(client.generate(EngineRequest("r", "secret code", 8)), 5)
    assert not engine.requests  # the prompt never left
    await client.shutdown()


async def test_connect_refuses_a_peer_of_another_uid(
        served: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    _host, _engine, place = served
    assert await asyncio.to_thread(connect, place.socket) is not None
    monkeypatch.setattr(runtime, "same_user", lambda sock: False)
    with pytest.raises(RuntimeDirError, match="not as this user"):
        await asyncio.to_thread(connect, place.socket)


def _open_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "rt"
    folder.mkdir()
    folder.chmod(0o755)
    (folder / "planted-0123456789.sock").touch()
    return folder


def test_places_refuse_a_folder_others_may_enter(tmp_path: Path) -> None:
    folder = _open_folder(tmp_path)
    with pytest.raises(RuntimeDirError, match="chmod 700"):
        places(folder)
    link = tmp_path / "link"
    link.symlink_to(folder)
    folder.chmod(0o700)
    with pytest.raises(RuntimeDirError, match="not a folder of this user"):
        places(link)
    assert places(tmp_path / "missing") == []


def test_making_room_reads_no_folder_others_may_enter(tmp_path: Path) -> None:
    with pytest.raises(RuntimeDirError):
        stop_unused(_open_folder(tmp_path), keep="mine-0123456789")


@pytest.mark.parametrize("command", [engine_cli.cmd_status, engine_cli.cmd_stop])
def test_engine_status_and_stop_refuse_a_folder_others_may_enter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: Any) -> None:
    folder = _open_folder(tmp_path)
    monkeypatch.setenv(runtime.RUNTIME_DIR_ENV, str(folder))
    with pytest.raises(SystemExit, match="chmod 700"):
        command(argparse.Namespace(json=True, name=None))
    assert (folder / "planted-0123456789.sock").exists()  # stop removed nothing
    assert os.stat(folder).st_mode & 0o777 == 0o755
