"""Which engine answers which kind of request.

The main engine is the one the `model` (or remote backend) settings describe. A route
may name another model for a kind of request (single-line automatic, multi-line,
explicit, prefetch); each such model gets its own embedded engine and its own
``EngineManager`` (restarts, health), and a kind whose engine is not ready falls back to
the main one. On a CPU with no model chosen, typing goes to a small fast model and the
requests the user asks for to the code model: on two cores the code model cannot finish a
line inside a typing pause (see docs/benchmarks.md), and the small one cannot match its
answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lsp_copilot.config import ROUTE_KINDS, Settings
from lsp_copilot.engine.base import Engine, EngineUnavailable
from lsp_copilot.engine.manager import EngineManager, Reporter
from lsp_copilot.models.presets import default_preset, typing_preset

log = logging.getLogger(__name__)

MAIN = "main"


def route_kind(mode: str, explicit: bool, prefetch: bool) -> str:
    """The route a request takes: ``explicit`` and ``prefetch`` before its mode."""
    if explicit:
        return "explicit"
    if prefetch:
        return "prefetch"
    return "multiLine" if mode == "multi-line" else "singleLine"


def plan(settings: Settings, device: str) -> dict[str, str]:
    """Each kind's engine: ``main`` or the model (preset name or folder) of another one."""
    if settings.routes is not None:
        chosen = dict(settings.routes)
        out = {kind: chosen.get(kind, MAIN) or MAIN for kind in ROUTE_KINDS}
    else:
        out = dict.fromkeys(ROUTE_KINDS, MAIN)
        typing = typing_preset(device)
        if typing is not None and not settings.model and settings.engine_backend == "embedded":
            out.update(singleLine=typing.name, multiLine=typing.name, prefetch=typing.name)
    main = settings.model or default_preset(device).name  # named again: not a second engine
    return {kind: MAIN if model in (MAIN, main) else model for kind, model in out.items()}


def _for_model(settings: Settings, model: str) -> Settings:
    """The settings of another route's engine: the main engine's, with its model; a draft
    model (or EAGLE head) belongs to the main model, so this one speculates by n-grams."""
    routed = dataclasses.replace(settings, model=model)
    if settings.speculative_method in ("draft_model", "eagle", "eagle3", "mtp"):
        routed = dataclasses.replace(routed, speculative_method="ngram")
    return routed


@dataclass
class _Extra:
    model: str
    manager: EngineManager
    task: asyncio.Task[Any] | None = field(default=None, repr=False)  # its load, kept alive


class Routes:
    """The main engine plus one embedded engine per other model a route names."""

    def __init__(self, main: EngineManager,
                 make_manager: Callable[[], EngineManager] = EngineManager) -> None:
        self.main = main
        self._make_manager = make_manager
        self._plan: dict[str, str] = dict.fromkeys(ROUTE_KINDS, MAIN)
        self._extras: dict[str, _Extra] = {}
        self._answered: dict[tuple[str, str], int] = {}  # (kind, route) -> requests

    def expect(self, settings: Settings, device: str) -> None:
        """Take the plan now, before its engines load: stats then say they are loading."""
        self._plan = plan(settings, device)

    async def start(self, settings: Settings, device: str, report: Reporter) -> None:
        """Load the engines the plan names that are not running; stop those it no longer
        names. The main engine is the caller's (it loads first and is never stopped here)."""
        self._plan = plan(settings, device)
        wanted = {m for m in self._plan.values() if m != MAIN}
        for model in [m for m in self._extras if m not in wanted]:
            await self._extras.pop(model).manager.shutdown()
        for model in sorted(wanted - set(self._extras)):
            manager = self._make_manager()
            manager.telemetry, manager.notify = self.main.telemetry, self.main.notify
            extra = _Extra(model, manager)
            self._extras[model] = extra
            routed = _for_model(settings, model)

            def progress(message: str, model: str = model) -> None:
                report(f"{model}: {message}")

            extra.task = manager.start(routed, progress)
        for extra in self._extras.values():
            extra.manager.settings = _for_model(settings, extra.model)

    def engine_for(self, kind: str, *, count: bool = True) -> tuple[Engine, str]:
        """The engine for ``kind`` and the route that answers: its own if that engine is
        ready, else the main engine (``route_fallbacks`` counts those)."""
        model = self._plan.get(kind, MAIN)
        extra = self._extras.get(model)
        engine: Engine | None = None
        if extra is not None:
            try:
                engine = extra.manager.engine()
            except EngineUnavailable:
                if count:
                    self.main.count("route_fallbacks")
                model = MAIN
        if engine is None:
            model = MAIN
            engine = self.main.engine()
        if count:
            self._answered[kind, model] = self._answered.get((kind, model), 0) + 1
        return engine, model

    def manager_for(self, kind: str) -> EngineManager:
        """The manager of the engine ``kind``'s route names (loading or not)."""
        extra = self._extras.get(self._plan.get(kind, MAIN))
        return extra.manager if extra is not None else self.main

    def managers(self) -> list[EngineManager]:
        return [self.main, *(e.manager for e in self._extras.values())]

    def stats(self) -> dict[str, Any]:
        """Per kind: the route its plan names, that engine's model and state, and how many
        requests each route answered (``main`` also counts fallbacks)."""
        out: dict[str, Any] = {}
        for kind, model in self._plan.items():
            extra = self._extras.get(model)
            manager = extra.manager if extra is not None else self.main
            info = manager.info if extra is not None or model == MAIN else None
            state = manager.state if extra is not None or model == MAIN else "loading"
            out[kind] = {"route": model, "model": info.model if info else None,
                         "state": state,
                         # a list: route names are no identifiers (clients map objects)
                         "answered": [{"route": route, "requests": n}
                                      for (k, route), n in sorted(self._answered.items())
                                      if k == kind]}
        return out

    async def shutdown(self) -> None:
        extras, self._extras = list(self._extras.values()), {}
        await asyncio.gather(*(e.manager.shutdown() for e in extras))
