"""One real server with the real vLLM engine and default model, shared by the e2e tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import psutil
import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.support.lsp import SERVER, initialize, wait_for_engine


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


@pytest.fixture(autouse=True)
def nothing_left_loaded() -> Iterator[None]:
    """What a test started goes when it ends, also when it failed half-way: its servers
    (with the engines inside them), then the shared engines no server uses (the session's
    servers keep theirs). Left running, they would hold the memory the next tests load
    their engines into."""
    before = {p.pid for p in _children()}
    yield
    from lsp_copilot.engine.shared.control import ask, wait_gone
    from lsp_copilot.engine.shared.runtime import places, runtime_dir

    left = [p for p in _children() if p.pid not in before and _is_server(p)]
    for server in left:
        with contextlib.suppress(psutil.Error):
            tree = [server, *server.children(recursive=True)]
            for proc in tree:
                proc.kill()
            psutil.wait_procs(tree, timeout=30)
    for place in places(runtime_dir()):
        status = ask(place, {"op": "status", "id": "status"})
        if status is not None and status.get("clients") == 0 and \
                ask(place, {"op": "stop", "id": "stop"}) is not None:
            wait_gone(status.get("pid"))


def _children() -> list[psutil.Process]:
    return psutil.Process().children()


def _is_server(proc: psutil.Process) -> bool:
    try:
        command = proc.cmdline()
    except psutil.Error:
        return False
    return "lsp_copilot" in command and "serve" in command
