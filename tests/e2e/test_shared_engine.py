"""One engine per model for every server of the user: real servers, the real engine.

Two servers in two workspaces attach to one engine per routed model; a restarted server
finds it warm; killed with both servers attached (and its socket left behind, as after
`kill -9`), it is started again by one of them and both answer again; another user cannot
reach its socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient as PlainClient

from tests.support.lsp import (
    ON_CUDA,
    ROOT,
    SERVER,
    plain,
    serve,
    shared_engines,
    stats,
    wait_loaded,
)

pytestmark = pytest.mark.engine

SOURCE = "def area(width, height):\n    return "
# Explicit requests to the small model: timings measure attaching, not a slow model.
FAST = {"routes": {"explicit": "smollm2-135m"}, "cache": False, "maxSuggestions": 1}


async def _suggest(client: PlainClient, folder: Path, name: str = "shapes.py") -> str:
    uri = (folder / name).as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri, "python", 1, SOURCE)))
    result = await client.text_document_inline_completion_async(types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(1, len("    return ")),
        context=types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Invoked)))
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        types.TextDocumentIdentifier(uri)))
    items = result.items if isinstance(result, types.InlineCompletionList) else result or []
    return items[0].insert_text if items and isinstance(items[0].insert_text, str) else ""


def _engine_cores(engines: list[dict[str, Any]]) -> dict[str, int]:
    """EngineCore child processes under each shared engine."""
    out = {}
    for engine in engines:
        procs = psutil.Process(engine["pid"]).children(recursive=True)
        out[engine["name"]] = sum("EngineCore" in " ".join(p.cmdline()) for p in procs)
    return out


def _own_cores(client: PlainClient) -> int:
    server = client._server
    assert server is not None
    return sum("EngineCore" in " ".join(p.cmdline())
               for p in psutil.Process(server.pid).children(recursive=True))


async def _routes_ready(client: PlainClient) -> None:
    """Until the engine of every route is loaded (they load one after the other)."""
    deadline = time.monotonic() + 600
    while not all(r["state"] == "ready" for r in (await stats(client))["routes"].values()):
        assert time.monotonic() < deadline, "the routes' engines never loaded"
        await asyncio.sleep(0.5)


async def _stop(client: PlainClient) -> None:
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


async def test_two_servers_share_one_engine_per_model_and_a_restart_finds_it_warm(
        tmp_path: Path) -> None:
    first_ws, second_ws = tmp_path / "one", tmp_path / "two"
    first_ws.mkdir()
    second_ws.mkdir()
    first = await serve(FAST, root=first_ws)
    await _routes_ready(first)
    assert await _suggest(first, first_ws)
    started = time.monotonic()
    second = await serve(FAST, root=second_ws)
    text = await _suggest(second, second_ws)
    second_s = time.monotonic() - started
    assert text, "the second window gets a suggestion"
    engines = shared_engines()
    models = {e["model"] for e in engines}
    assert {"smollm2-135m"} <= models and len(engines) == len(models), engines
    # One EngineCore each: on a CPU in the host's own process (no second import of vLLM
    # in a spawned child, a quarter of a cold start), on a GPU in one child.
    cores = _engine_cores(engines)
    assert all(n == (1 if ON_CUDA else 0) for n in cores.values()), cores
    assert _own_cores(first) == _own_cores(second) == 0  # no copy inside a server
    for engine in engines:
        assert {first._server.pid, second._server.pid} <= set(engine["client_pids"])  # type: ignore[union-attr]
    assert second_s < 10, f"the second window's first suggestion took {second_s:.1f} s"

    await _stop(second)
    started = time.monotonic()
    third = await serve(FAST, root=second_ws)
    assert await _suggest(third, second_ws)
    restart_s = time.monotonic() - started
    # Attached, not loaded (a load takes 25 s or more here); the 5 s target is measured by
    # `lsp-copilot bench coldstart` (its warm restart), not asserted on a busy CI machine.
    assert restart_s < 10, f"a restart with a warm engine took {restart_s:.1f} s"
    print(f"second window {second_s:.1f} s, restart {restart_s:.1f} s")
    await _stop(third)
    await _stop(first)


async def test_a_killed_shared_engine_comes_back_for_both_servers(tmp_path: Path) -> None:
    # An engine of its own (another niceness: other settings, another engine), so that the
    # other tests' engines stay up.
    options = {**FAST, "routes": {}, "model": "smollm2-135m", "engineNiceness": 7,
               "healthCheckIntervalMs": 1000, "healthCheckTimeoutMs": 5000}
    one, two = await serve(options, root=tmp_path), await serve(options, root=ROOT)
    await _routes_ready(one)
    mine = [e for e in shared_engines() if one._server.pid in e["client_pids"]]  # type: ignore[union-attr]
    assert len(mine) == 1 and two._server.pid in mine[0]["client_pids"]  # type: ignore[union-attr]
    host = mine[0]["pid"]
    socket_path = Path(os.environ["LSP_COPILOT_RUNTIME_DIR"]) / f"{mine[0]['name']}.sock"
    os.killpg(os.getpgid(host), signal.SIGKILL)  # everything, at once: no clean-up runs
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(host).wait(30)
    assert socket_path.exists(), "kill -9 leaves the socket behind (stale)"
    killed = time.monotonic()
    back: dict[int, float] = {}
    while len(back) < 2:
        if time.monotonic() - killed > 180:
            states = [{k: v for k, v in (await stats(c)).items() if k.startswith("engine")}
                      for c in (one, two)]
            raise AssertionError(f"not back: {back}; {states}")
        for number, client in enumerate((one, two)):
            if number in back:
                continue
            # No request hangs: each answers (empty while the engine restarts).
            text = await asyncio.wait_for(_suggest(client, tmp_path, f"k{number}.py"), 60)
            if text:
                back[number] = time.monotonic() - killed
        await asyncio.sleep(0.5)
    after = [e for e in shared_engines() if e["name"] == mine[0]["name"]]
    assert len(after) == 1 and after[0]["pid"] != host and after[0]["clients"] == 2, after
    restarts = [plain(await stats(c))["engine_restarts"] for c in (one, two)]
    print(f"back after {back} s; restarts {restarts}")
    assert max(back.values()) < 60, back
    await _stop(one)
    await _stop(two)
    subprocess.run([sys.executable, "-m", "lsp_copilot", "engine", "stop", mine[0]["name"]],
                   check=True, timeout=120)


async def test_the_typing_engine_hands_over_to_its_compiled_copy_without_losing_a_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a CPU the typing model loads eager, then a torch.compile'd copy of it loads in
    the background and takes its socket over: the server's calls keep answering through
    the move, no engine restarts, and the eager engine exits."""
    if ON_CUDA:
        pytest.skip("a CUDA engine is compiled from the start")
    monkeypatch.setenv("LSP_COPILOT_COMPILE_LATER", "1")
    options = {**FAST, "routes": {}, "model": "smollm2-135m", "engineNiceness": 6}
    client = await serve(options, root=tmp_path)
    mine = [e for e in shared_engines() if client._server.pid in e["client_pids"]]  # type: ignore[union-attr]
    assert len(mine) == 1 and mine[0]["compiled"] is False, mine
    eager = mine[0]
    answers, moved = 0, None
    deadline = time.monotonic() + 900
    while moved is None:
        assert time.monotonic() < deadline, f"no compiled copy took over: {shared_engines()}"
        now = [e for e in shared_engines() if e["name"] == eager["name"]]
        if now and now[0]["compiled"]:
            moved = now[0]
        elif now and now[0]["successor"].startswith("compiling"):
            # Calls while the copy compiles and when it takes over: each answered.
            assert await asyncio.wait_for(_suggest(client, tmp_path, f"c{answers}.py"), 120)
            answers += 1
        else:  # waiting for a quiet CPU: calls now would keep it busy
            assert "exited" not in now[0]["successor"], now
            await asyncio.sleep(1)
    assert await _suggest(client, tmp_path, "after.py"), "the copy answers"
    assert moved["pid"] != eager["pid"]
    with contextlib.suppress(psutil.NoSuchProcess):
        psutil.Process(eager["pid"]).wait(120)  # its server moved: the eager engine left
    after: list[dict[str, Any]] = []
    joined_by = time.monotonic() + 60
    while not (len(after) == 1 and after[0]["clients"] == 1):  # it joined the copy
        assert time.monotonic() < joined_by, after
        await asyncio.sleep(0.5)
        after = [e for e in shared_engines() if e["name"] == eager["name"]]
    assert after[0]["compiled"] and after[0]["pid"] == moved["pid"], after
    # It compiled at the lowest priority (engine/shared/handoff.py) and serves at its
    # parent's again, on every thread: SCHED_OTHER at the eager engine's niceness.
    threads = [int(t.name) for t in Path(f"/proc/{moved['pid']}/task").iterdir()]
    assert {(os.sched_getscheduler(t), os.getpriority(os.PRIO_PROCESS, t))
            for t in threads} == {(os.SCHED_OTHER, 6)}, "the copy serves at normal priority"
    s = plain(await stats(client))
    assert s["engine_state"] == "ready" and not s.get("engine_restarts"), s
    print(f"{answers} calls answered while the copy compiled")
    await _stop(client)
    subprocess.run([sys.executable, "-m", "lsp_copilot", "engine", "stop", eager["name"]],
                   check=True, timeout=120)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as a second user")
async def test_another_user_cannot_reach_the_engine(tmp_path: Path) -> None:
    client = await serve(FAST, root=tmp_path)
    folder = Path(os.environ["LSP_COPILOT_RUNTIME_DIR"])
    sockets = list(folder.glob("*.sock"))
    assert sockets and (folder.stat().st_mode & 0o777) == 0o700
    assert all((s.stat().st_mode & 0o777) == 0o600 for s in sockets)
    code = ("import socket, sys\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n    sys.exit(3)\n")
    out = subprocess.run(["/usr/bin/python3", "-c", code, str(sockets[0])], timeout=30,
                         preexec_fn=lambda: os.setuid(65534), check=False)
    assert out.returncode == 3, "another user reached the engine's socket"
    await _stop(client)


SHADOWS = ("calendar", "textwrap", "random", "types", "queue", "token", "socket",
           "threading", "pickle", "json", "typing")


def _poisoned_workspace(folder: Path) -> Path:
    """A project whose root has files named like standard modules, each of which stops
    whatever imports it (or does not even compile)."""
    folder.mkdir()
    for number, name in enumerate(SHADOWS):
        body = ("raise SystemExit('imported from the workspace')\n" if number % 2 == 0
                else "def broken(:\n    pass\n")
        (folder / f"{name}.py").write_text(body)
    return folder


@pytest.mark.parametrize("shared", [True, False], ids=["shared-engine", "in-process"])
async def test_files_named_like_standard_modules_in_the_workspace_break_nothing(
        tmp_path: Path, shared: bool) -> None:
    """The editor starts the server in the project's folder (as `lsp-copilot serve`); the
    engine it starts (shared host, or its own) still loads and completes."""
    workspace = _poisoned_workspace(tmp_path / "project")
    runtime = tempfile.mkdtemp(prefix="lc-rt-")  # a fresh engine: this test starts it
    os.chmod(runtime, 0o700)
    script = Path(sys.executable).parent / "lsp-copilot"
    command = [str(script), "serve"] if script.exists() else SERVER
    env = dict(os.environ, LSP_COPILOT_RUNTIME_DIR=runtime)
    client = PlainClient("test", "1")
    await client.start_io(*command, cwd=str(workspace), env=env)
    server = client._server
    assert server is not None and server.stderr is not None
    client._stderr_drain = asyncio.ensure_future(server.stderr.read())  # type: ignore[attr-defined]
    try:
        await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=workspace.as_uri(),
            initialization_options={**FAST, "routes": {}, "model": "smollm2-135m",
                                    "engineShared": shared}))
        client.initialized(types.InitializedParams())
        await wait_loaded(client)
        assert await _suggest(client, workspace), "no suggestion"
        assert psutil.Process(server.pid).cwd() == runtime  # the server left the project
        out = subprocess.run([sys.executable, "-m", "lsp_copilot", "engine", "status",
                              "--json"], env=env, capture_output=True, text=True,
                             timeout=60, check=True)
        engines = [psutil.Process(e["pid"]) for e in json.loads(out.stdout)]
        assert len(engines) == (1 if shared else 0), engines
        for engine in engines:  # started in the runtime folder, without it on sys.path
            assert engine.cwd() == runtime
            if sys.version_info >= (3, 11):
                assert "-P" in engine.cmdline()
        await _stop(client)
    finally:
        if client._server is not None and client._server.returncode is None:
            client._server.kill()
        subprocess.run([sys.executable, "-m", "lsp_copilot", "engine", "stop"], env=env,
                       cwd=str(ROOT), capture_output=True, timeout=120, check=False)
        shutil.rmtree(runtime, ignore_errors=True)

