"""One real server with the real vLLM engine and default model, shared by the e2e tests."""

from __future__ import annotations

from collections.abc import Iterator

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
def no_unused_engines() -> Iterator[None]:
    """A test's own shared engines go when it ends (the session's server keeps its own):
    engines left idle for engineIdleMinutes would hold the memory the next tests load into."""
    yield
    from lsp_copilot.engine.shared.control import ask, wait_gone
    from lsp_copilot.engine.shared.runtime import places, runtime_dir

    for place in places(runtime_dir()):
        status = ask(place, {"op": "status", "id": "status"})
        if status is not None and status.get("clients") == 0 and \
                ask(place, {"op": "stop", "id": "stop"}) is not None:
            wait_gone(status.get("pid"))
