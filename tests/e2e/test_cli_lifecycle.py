"""The command line and the server's lifecycle, through real processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from lsp_copilot.engine.device import BF16_CAPABLE, cpu_flags
from lsp_copilot.models.presets import default_preset
from tests.support.lsp import ROOT, engine_core_pids, expected_device, plain, serve

CLI = [sys.executable, "-m", "lsp_copilot"]


def test_version() -> None:
    out = subprocess.run([*CLI, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("lsp-copilot ")


def _env(log_file: object) -> dict[str, str]:
    return {**os.environ, "LSP_COPILOT_LOG_FILE": str(log_file)}


def test_doctor_finds_engine_model_and_grammars(tmp_path) -> None:  # type: ignore[no-untyped-def]
    log_file = tmp_path / "cli.log"
    out = subprocess.run([*CLI, "doctor", "--json"], capture_output=True, text=True,
                         env=_env(log_file))
    report = json.loads(out.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["engine (vLLM)"]["ok"], checks
    assert checks["default model"]["ok"], checks
    assert checks["grammars"]["ok"] and "grammars" in checks["grammars"]["detail"]
    assert checks["grammar queries"]["ok"], checks
    assert report["log_file"] == str(log_file) and str(log_file) in checks["log"]["detail"]
    assert out.returncode == (0 if report["ok"] else 1)
    assert out.stderr == ""  # libraries' warnings (torch's) went to the log file


def test_context_prints_its_result_alone_unless_verbose(tmp_path) -> None:  # type: ignore[no-untyped-def]
    where = "tests/fixtures/demo/geometry.py:13:12"
    quiet = subprocess.run([*CLI, "context", where], capture_output=True, text=True,
                           cwd=ROOT, env=_env(tmp_path / "cli.log"))
    assert quiet.returncode == 0 and "P0 cursor window" in quiet.stdout
    assert quiet.stderr == ""
    assert "indexed" in (tmp_path / "cli.log").read_text()  # the log line went to the file
    verbose = subprocess.run([*CLI, "context", where, "--verbose"], capture_output=True,
                             text=True, cwd=ROOT, env=_env(tmp_path / "cli.log"))
    assert "P0 cursor window" in verbose.stdout and "indexed" in verbose.stderr


def test_complete_bad_location_is_a_clear_error() -> None:
    out = subprocess.run([*CLI, "complete", "README.md:99999:1"], capture_output=True, text=True)
    assert out.returncode != 0
    assert "past the end" in out.stderr


@pytest.mark.engine
def test_complete_json_with_the_real_default_model() -> None:
    out = subprocess.run(
        [*CLI, "complete", "tests/fixtures/demo/geometry.py:13:12", "--json"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)  # stdout holds the JSON alone: vLLM logs go to the file
    assert out.stderr == ""  # no log, and no traceback at exit
    assert result["mode"] == "single-line"
    # The CPU default is a code model: it knows the area of a circle (greedy: the same
    # answer every time), and the answer is a whole expression.
    assert "math.pi" in result["completion"] and "radius" in result["completion"], result
    assert set(result["timings_ms"]) >= {"context", "engine", "total"}
    assert result["engine"] == {
        # The device's default preset: a code model on either (0.5B on CPU, 1.5B on CUDA).
        "backend": "vllm", "model": default_preset(expected_device()).name,
        "device": expected_device(),
        "prefix_caching": True, "speculative": "ngram", "template": "qwen2.5-coder",
        "quantization": None,
        # What this CPU computes fast: float32 where it has neither AVX-512 nor AMX.
        "dtype": "auto" if expected_device() == "cuda" else (
            "bfloat16" if cpu_flags() & BF16_CAPABLE or not cpu_flags() else "float32"),
    }


@pytest.mark.engine
def test_complete_with_int8_weights_loads_the_repacked_preset() -> None:
    """`--weights int8` (the `weights` setting): the default preset is re-packed beside its
    bf16 folder on first use and vLLM loads it as compressed-tensors; same answer."""
    out = subprocess.run(
        [*CLI, "complete", "tests/fixtures/demo/geometry.py:13:12", "--json",
         "--weights", "int8"],
        capture_output=True, text=True, cwd=ROOT, timeout=900,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    assert result["engine"]["quantization"] == "compressed-tensors", result["engine"]
    # Packed weights keep bf16 activations, their kernels' type, on every CPU.
    assert result["engine"]["dtype"] == ("auto" if expected_device() == "cuda" else "bfloat16")
    assert "math.pi" in result["completion"] and "radius" in result["completion"], result


async def _complete_once(client: LanguageClient) -> dict[str, object]:
    uri = (ROOT / "tests" / "fixtures" / "restart.py").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri, "python", 1, "def area(width, height):\n    return ")))
    result = await client.text_document_inline_completion_async(types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(1, len("    return ")),
        context=types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Invoked)))
    assert result is not None and result.items
    s = plain(await client.protocol.send_request_async("lspCopilot/stats", {}))
    s["text"] = result.items[0].insert_text
    return s  # type: ignore[no-any-return]


async def _stop(client: LanguageClient) -> None:
    """shutdown + exit, then check that no process of the server is left behind."""
    server = client._server
    assert server is not None
    children = psutil.Process(server.pid).children(recursive=True)
    assert children, "vLLM's EngineCore should run in a child process"
    await client.shutdown_async(None)
    client.exit(None)
    await asyncio.wait_for(server.wait(), timeout=60)
    assert server.returncode == 0
    _, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, f"orphaned: {alive}"
    await client.stop()


@pytest.mark.engine
async def test_shutdown_leaves_no_process_and_disk_cache_survives_restart(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # No deadline: an answer cut short on a busy machine is (rightly) not cached. One
    # suggestion: sampled alternatives are engine calls the cache does not answer.
    options = {"cacheDir": str(tmp_path / "cache"), "deadlineMs": 0, "maxSuggestions": 1,
               "engineShared": False,  # its own engine, which must go with it
               "routes": {}}  # one engine (the typing one would double the memory)
    first = await serve(options)
    s1 = await _complete_once(first)
    assert s1["engine_requests"] == 1 and s1["cache_hits"] == 0
    await _stop(first)

    second = await serve(options)  # a new process: only the disk layer can answer
    s2 = await _complete_once(second)
    assert s2["cache_hits"] == 1 and s2["engine_requests"] == 0
    assert s2["text"] == s1["text"]
    await _stop(second)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_serve_tcp_binds_loopback() -> None:
    port = _free_port()
    proc = subprocess.Popen([*CLI, "serve", "--tcp", str(port)], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                await asyncio.sleep(0.2)
        conns = [c for c in psutil.Process(proc.pid).net_connections("tcp")
                 if c.status == psutil.CONN_LISTEN]
        assert conns and all(c.laddr.ip == "127.0.0.1" for c in conns)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "capabilities": {}, "initializationOptions": {"enable": False}}}).encode()
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        header = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        length = int(header.split(b":")[1].split(b"\r\n")[0])
        reply = json.loads(await reader.readexactly(length))
        assert reply["id"] == 1 and "inlineCompletionProvider" in reply["result"]["capabilities"]
        writer.close()
    finally:
        proc.kill()
        proc.wait()


def _session_processes(sid: int) -> list[psutil.Process]:
    out = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == sid:
                out.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            pass
    return out


def _frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _start_loading_server() -> subprocess.Popen[bytes]:
    """A server whose engine is loading (the real default model) when the test acts."""
    proc = subprocess.Popen([*CLI, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    assert proc.stdin is not None
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "capabilities": {}, "initializationOptions": {"engineShared": False}}}))
    proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    proc.stdin.flush()
    # Loading for sure: vLLM has started its EngineCore (and must not leave it behind).
    # The bound only ends a hung test (a model prepared on first use comes first).
    deadline = time.monotonic() + 600
    while not engine_core_pids(proc.pid):
        assert time.monotonic() < deadline and proc.poll() is None, "no EngineCore started"
        time.sleep(0.1)
    return proc


def _no_process_left(sid: int) -> None:
    """Every process of the server's session ends (an orphan would stay: the bound only
    ends a failing test)."""
    deadline = time.monotonic() + 30
    while left := _session_processes(sid):
        assert time.monotonic() < deadline, f"left behind: {left}"
        time.sleep(0.1)


@pytest.mark.engine
def test_sigterm_while_loading_exits_at_once_with_no_process_left() -> None:
    proc = _start_loading_server()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)  # a bound for a hang, not a measurement
    _no_process_left(proc.pid)


@pytest.mark.engine
def test_shutdown_and_exit_while_loading_are_prompt() -> None:
    proc = _start_loading_server()
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))  # no params
    proc.stdin.write(_frame({"jsonrpc": "2.0", "method": "exit"}))
    proc.stdin.flush()
    proc.wait(timeout=30)  # a bound for a hang, not a measurement
    assert proc.returncode == 0
    _no_process_left(proc.pid)
