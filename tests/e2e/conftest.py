"""One real server with the real vLLM engine and default model, shared by the e2e tests."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

SERVER = [sys.executable, "-m", "lsp_copilot", "serve"]
ROOT = Path(__file__).resolve().parents[2]


async def stats(client: LanguageClient) -> dict[str, Any]:
    result = await client.protocol.send_request_async("lspCopilot/stats", {})
    return result if isinstance(result, dict) else dict(result._asdict()) if hasattr(
        result, "_asdict") else vars(result)


async def wait_for_engine(client: LanguageClient, timeout: float = 600) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = await stats(client)
        if s["engine_state"] in ("ready", "failed"):
            return s
        await asyncio.sleep(0.5)
    raise TimeoutError("engine did not become ready")


async def initialize(
    client: LanguageClient, spec: str, options: dict[str, Any] | None
) -> types.InitializeResult:
    """Initialize; the result is kept on the client as ``init_result`` for the tests."""
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
async def engine_client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    """Client of a server with the real engine loaded (VS Code's capabilities)."""
    await initialize(lsp_client, "visual-studio-code", {"lspCopilot": {}})
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
