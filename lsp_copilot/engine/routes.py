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

from lsp_copilot.engine.base import Engine, EngineUnavailable
from lsp_copilot.engine.defaults import typing_model
from lsp_copilot.engine.device import cpu_class, cpu_flags
from lsp_copilot.engine.manager import EngineManager, Reporter
from lsp_copilot.engine.remote.config import shown_url
from lsp_copilot.models.presets import default_preset
from lsp_copilot.settings.engine import ROUTE_KINDS, EngineSettings
from lsp_copilot.settings.layers import EngineSetup

log = logging.getLogger(__name__)

MAIN = "main"


def route_kind(mode: str, explicit: bool, prefetch: bool) -> str:
    """The route a request takes: ``explicit`` and ``prefetch`` before its mode."""
    if explicit:
        return "explicit"
    if prefetch:
        return "prefetch"
    return "multiLine" if mode == "multi-line" else "singleLine"


def chains(settings: EngineSettings, device: str, remote: bool = False
           ) -> dict[str, tuple[str, ...]]:
    """Each kind's engines in the order they are tried: ``main`` or the model (preset name
    or folder) of another one; ``main`` is in every chain (last, unless named earlier).
    ``remote``: the main engine is the remote backend (no default typing model then)."""
    if settings.routes is not None:
        chosen = dict(settings.routes)
        given = {kind: chosen.get(kind, MAIN) for kind in ROUTE_KINDS}
        out = {kind: (names,) if isinstance(names, str) else tuple(names)
               for kind, names in given.items()}
    else:
        out = {kind: (MAIN,) for kind in ROUTE_KINDS}
        typing = typing_model(device).value
        if typing is not None and not settings.model and not remote:
            out.update(singleLine=(typing.name,), multiLine=(typing.name,),
                       prefetch=(typing.name,))
    main = settings.model or default_preset(device).name  # named again: not a second engine
    named = {kind: tuple(dict.fromkeys(MAIN if m in (MAIN, main, "") else m for m in names))
             for kind, names in out.items()}
    return {kind: names if MAIN in names else (*names, MAIN) for kind, names in named.items()}


def cpu_report(device: str) -> dict[str, Any]:
    """What stats and doctor say of a CPU: its class (engine/device.py), its vector flags,
    and the model the class gives typing when `routes` is null (``main``: the code model)."""
    flags = cpu_flags()
    typing = typing_model(device, lambda: flags)
    return {"cpu_class": cpu_class(flags),
            "flags": sorted(f for f in flags if f.startswith(("avx", "amx"))),
            "typing": typing.value.name if typing.value else MAIN, "why": typing.why}


def arm_chains(base: EngineSettings, arm: EngineSettings, device: str, remote: bool = False
               ) -> dict[str, tuple[str, ...]]:
    """An `experiment` arm's chains: its ``routes``, its ``model`` in place of the main
    one; the main engine stays the last fallback of every chain."""
    main = base.model or default_preset(device).name
    own = arm.model or main
    out: dict[str, tuple[str, ...]] = {}
    for kind, names in chains(arm, device, remote).items():  # (MAIN there: the arm's model)
        named = tuple(dict.fromkeys(
            MAIN if m == main else m for m in (own if n == MAIN else n for n in names)))
        out[kind] = named if MAIN in named else (*named, MAIN)
    return out


def plan(settings: EngineSetup, device: str) -> dict[str, str]:
    """Each kind's first engine: ``main`` or the model of another one."""
    remote = settings.remote.engine_backend == "remote"
    return {kind: names[0] for kind, names in chains(settings.engine, device, remote).items()}


def _for_model(settings: EngineSetup, model: str) -> EngineSetup:
    """The settings of another route's engine: the main engine's, with its model, embedded
    (a remote main engine's fallback runs here); a draft model (or EAGLE head) belongs to
    the main model, so this one speculates by n-grams."""
    engine = dataclasses.replace(settings.engine, model=model)
    if engine.speculative_method in ("draft_model", "eagle", "eagle3", "mtp"):
        engine = dataclasses.replace(engine, speculative_method="ngram")
    return dataclasses.replace(settings, engine=engine, remote=dataclasses.replace(
        settings.remote, engine_backend="embedded"))


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
        self._chains: dict[str, tuple[str, ...]] = {kind: (MAIN,) for kind in ROUTE_KINDS}
        # `experiment` arms that name their own engine (the server sets them), and their
        # chains: their engines load with the others.
        self.arms: dict[str, EngineSettings] = {}
        self._arm_chains: dict[str, dict[str, tuple[str, ...]]] = {}
        self._extras: dict[str, _Extra] = {}
        self._answered: dict[tuple[str, str], int] = {}  # (kind, route) -> requests
        self._away: dict[str, str] = {}  # first route of a chain -> where its requests went
        self.cpu: dict[str, Any] | None = None  # on a CPU: its class and the typing model

    @property
    def _plan(self) -> dict[str, str]:
        return {kind: names[0] for kind, names in self._chains.items()}

    def expect(self, settings: EngineSetup, device: str) -> None:
        """Take the plan now, before its engines load: stats then say they are loading."""
        remote = settings.remote.engine_backend == "remote"
        self._chains = chains(settings.engine, device, remote)
        self.cpu = cpu_report(device) if device == "cpu" and not remote else None
        self._arm_chains = {name: arm_chains(settings.engine, arm, device, remote)
                            for name, arm in self.arms.items()}

    async def start(self, settings: EngineSetup, device: str, report: Reporter) -> None:
        """Load the engines the plan names that are not running; stop those it no longer
        names. The main engine is the caller's (it loads first and is never stopped here)."""
        self.expect(settings, device)
        every = [self._chains, *self._arm_chains.values()]
        wanted = {m for c in every for names in c.values() for m in names if m != MAIN}
        for model in [m for m in self._extras if m not in wanted]:
            await self._extras.pop(model).manager.shutdown()
        for model in sorted(wanted - set(self._extras)):
            manager = self._make_manager()
            manager.telemetry, manager.notify = self.main.telemetry, self.main.notify
            manager.retry_hint = self.main.retry_hint
            extra = _Extra(model, manager)
            self._extras[model] = extra
            routed = _for_model(settings, model)

            def progress(message: str, model: str = model) -> None:
                report(f"{model}: {message}")

            extra.task = manager.start(routed, progress)
        for extra in self._extras.values():
            extra.manager.use_supervision(settings.supervision)

    def typing_first(self) -> bool:
        """Whether typing (singleLine) goes first to another engine than the main one:
        that engine then loads first."""
        return self._chains.get("singleLine", (MAIN,))[0] != MAIN

    async def loaded(self) -> None:
        """Until every load under way has ended (ready or not)."""
        tasks = [e.task for e in self._extras.values() if e.task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)

    def _manager(self, route: str) -> EngineManager | None:
        extra = self._extras.get(route)
        return self.main if route == MAIN else extra.manager if extra is not None else None

    def engine_for(self, kind: str, *, count: bool = True, arm: str = "") -> tuple[Engine, str]:
        """The engine for ``kind`` and the route that answers: the first of its chain that
        is ready and whose breaker lets the request through; ``route_fallbacks`` counts
        the requests a later one took. The user hears once when a chain's first engine is
        passed over and once when it answers again. ``arm``: an `experiment` arm whose
        own chains (``model``, ``routes``) decide."""
        names = self._arm_chains.get(arm, self._chains).get(kind, (MAIN,))
        for name in names:
            manager = self._manager(name)
            if manager is None or not manager.available():
                continue
            try:
                engine = manager.engine()
            except EngineUnavailable:
                continue
            if count:
                self._answered[kind, name] = self._answered.get((kind, name), 0) + 1
                self._tell(names[0], name)
            return engine, name
        raise EngineUnavailable(self._why_none(names))

    def _tell(self, first: str, answering: str) -> None:
        if answering != first:
            self.main.count("route_fallbacks")
            manager = self._manager(first)
            if manager is None or manager.state in ("idle", "loading"):
                return  # not yet there (still loading)
            if self._away.get(first) != answering:
                self._away[first] = answering
                self.main.notify("warning", f"lsp-copilot: {self._label(first)} is not "
                                 f"answering; suggestions come from {self._label(answering)} "
                                 "until it is back.")
        elif self._away.pop(first, None) is not None:
            self.main.notify("back", f"lsp-copilot: {self._label(first)} answers again.")

    def _label(self, route: str) -> str:
        """The engine as the user knows it: the remote backend, or an embedded model."""
        manager = self._manager(route)
        info = manager.info if manager is not None else None
        if info is not None:
            kind = "remote backend" if info.backend == "remote" else "embedded engine"
            return f"the {kind} ({info.model})"
        main = self.main.settings
        if route == MAIN and main.remote.engine_backend == "remote":
            return f"the remote backend ({shown_url(main.remote.remote_url)})"
        return f"the embedded engine ({main.engine.model or 'default model'})" if (
            route == MAIN) else f"the embedded engine ({route})"

    def _why_none(self, names: tuple[str, ...]) -> str:
        """Why no engine of a chain can take a request (the answer's reason)."""
        reasons = []
        for name in names:
            manager = self._manager(name)
            if manager is None:
                reasons.append(f"{name} is not loaded")
            elif manager.state != "ready":
                reasons.append(manager.error or f"{name} is {manager.state}")
            else:
                reasons.append(f"{name} failed {manager.breaker.failures} times in a row; "
                               "trying it again shortly")
        return "; ".join(reasons)

    def manager_named(self, route: str) -> EngineManager | None:
        """The manager of ``route`` (``main`` or a model another route or an arm names)."""
        return self._manager(route)

    def manager_for(self, kind: str) -> EngineManager:
        """The manager of the first engine ``kind``'s route names (loading or not)."""
        return self._manager(self._plan.get(kind, MAIN)) or self.main

    def managers(self) -> list[EngineManager]:
        return [self.main, *(e.manager for e in self._extras.values())]

    def stats(self) -> dict[str, Any]:
        """Per kind: the route its plan names, that engine's model and state, and how many
        requests each route answered (a fallback counts for the route that took it)."""
        out: dict[str, Any] = {}
        for kind, model in self._plan.items():
            extra = self._extras.get(model)
            manager = extra.manager if extra is not None else self.main
            info = manager.info if extra is not None or model == MAIN else None
            state = manager.state if extra is not None or model == MAIN else "loading"
            out[kind] = {"route": model, "model": info.model if info else None,
                         "state": state, "breaker": manager.breaker.state,
                         "fallbacks": [self._state(name) for name in self._chains[kind][1:]],
                         # a list: route names are no identifiers (clients map objects)
                         "answered": [{"route": route, "requests": n}
                                      for (k, route), n in sorted(self._answered.items())
                                      if k == kind]}
        return out

    def arm_stats(self) -> dict[str, dict[str, Any]]:
        """Per `experiment` arm that names its own engine: each kind's first route and the
        state of its engine (the main engine answers while it loads)."""
        return {arm: {kind: self._state(names[0]) for kind, names in c.items()}
                for arm, c in self._arm_chains.items()}

    def _state(self, route: str) -> dict[str, Any]:
        manager = self._manager(route)
        return {"route": route, "state": manager.state if manager else "loading",
                "breaker": manager.breaker.state if manager else "closed"}

    async def shutdown(self) -> None:
        extras, self._extras = list(self._extras.values()), {}
        await asyncio.gather(*(e.manager.shutdown() for e in extras))
