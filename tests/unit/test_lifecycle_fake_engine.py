"""Engine loading around `initialized` (a FAKE engine: the scheduling of loads only)."""

from __future__ import annotations

from lsprotocol import types

from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.server.app import create_server
from lsp_copilot.server.handlers import lifecycle
from lsp_copilot.settings.core import parse_settings
from lsp_copilot.settings.layers import EngineSetup
from tests.support.fakes import FakeEngine


async def test_a_settings_change_right_after_initialized_loads_the_engine_once() -> None:
    """Neovim sends didChangeConfiguration at once: seen loading two engines side by side."""
    loads: list[str] = []

    def factory(settings: EngineSetup, report: object) -> FakeEngine:
        loads.append(settings.engine.model)
        return FakeEngine()

    ls = create_server(EngineManager(factory=factory))
    ls.protocol.client_capabilities = types.ClientCapabilities()
    lifecycle._spawn(ls)  # what `initialized` does
    await lifecycle.did_change_configuration(ls, types.DidChangeConfigurationParams(
        settings={"lspCopilot": {"maxTokensSingleLine": 20, "routes": {}}}))
    assert ls.engine_load is not None
    await ls.engine_load
    assert loads == [""] and ls.main_engine.state == "ready"
    await ls.main_engine.shutdown()


async def _load_order(**settings: object) -> list[str]:
    loads: list[str] = []

    def factory(s: EngineSetup, report: object) -> FakeEngine:
        loads.append(s.engine.model or "main")
        return FakeEngine()

    ls = create_server(EngineManager(factory=factory))
    ls.routes._make_manager = lambda: EngineManager(factory=factory)
    ls.protocol.client_capabilities = types.ClientCapabilities()
    ls.hub.update(parse_settings({"routes": {"singleLine": "smollm2-135m"}, **settings})[0])
    lifecycle._spawn(ls)
    assert ls.engine_load is not None
    await ls.engine_load
    await ls.routes.loaded()
    await ls.main_engine.shutdown()
    await ls.routes.shutdown()
    return loads


async def test_the_engine_that_answers_typing_loads_first_unless_told_otherwise() -> None:
    """A cold start suggests as soon as the small typing engine is up."""
    assert await _load_order() == ["smollm2-135m", "main"]
    assert await _load_order(engineLoadOrder="main-first") == ["main", "smollm2-135m"]
