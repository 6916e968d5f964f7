"""A Completer or a whole server over a fake engine, and document snapshots: the setup of
pipeline and handler tests."""

from __future__ import annotations

from typing import Any

from lsp_copilot.documents.store import DocumentStore, Snapshot
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.pipeline.completer import Completer
from lsp_copilot.pipeline.completion_cache import CompletionCache
from lsp_copilot.server.app import create_server
from lsp_copilot.server.state import CopilotServer
from lsp_copilot.settings.core import Settings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.telemetry import Telemetry

URI = "file:///w/calc.py"


async def completer_for(engine: Any, cache: CompletionCache | None = None, /,
                        **settings: Any) -> Completer:
    """A Completer whose one engine (loaded) is ``engine`` and whose completion cache is
    ``cache`` (positional: ``cache=False`` is the setting); no debounce, and no deadline
    unless a test sets one: a loaded machine must not cut these answers."""
    manager = EngineManager(factory=lambda s, report: engine)
    assert (await manager.start(Settings().engine_setup)).ok
    s = Settings(**{"debounce_mode": "off", "deadline_ms": 0, **settings})
    return Completer(manager, Telemetry(), SettingsHub(s), lambda: cache)


def snap(text: str, uri: str = URI) -> Snapshot:
    """A snapshot of a Python document holding ``text`` (version 1)."""
    store = DocumentStore()
    store.open(uri, "python", 1, text)
    return store.snapshot(uri)


async def server_for(engine: Any, cache: CompletionCache | None = None, /,
                     **settings: Any) -> CopilotServer:
    """A server built as `serve` builds it, in this process, whose one engine (loaded) is
    ``engine``: its handlers are called directly. No debounce, no warm-up (it would
    call the engine when a document opens), and no deadline unless a test sets one."""
    ls = create_server(EngineManager(factory=lambda s, report: engine))
    ls.hub.update(Settings(**{"debounce_mode": "off", "deadline_ms": 0, "warm_up": False,
                              **settings}))
    assert (await ls.main_engine.start(ls.hub.settings.engine_setup)).ok
    ls.cache = cache
    return ls
