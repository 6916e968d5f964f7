"""Routes: which engine answers which kind of request (fake engines: the choice only; the
real engines are exercised in tests/e2e/test_routes.py)."""

from __future__ import annotations

import contextlib
import dataclasses
import threading

from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.engine.base import EngineRequest, EngineUnavailable
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.engine.routes import MAIN, Routes, chains, plan, route_kind
from lsp_copilot.pipeline.completer import Completer
from lsp_copilot.settings.core import Settings, parse_settings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.settings.layers import EngineSetup
from lsp_copilot.telemetry import Telemetry
from tests.support.fakes import FakeEngine


def test_the_cpu_default_sends_typing_to_the_small_model_and_requests_to_the_main_one() -> None:
    cpu = plan(Settings().engine_setup, "cpu")
    assert cpu == {"singleLine": "smollm2-135m", "multiLine": "smollm2-135m",
                   "explicit": MAIN, "prefetch": "smollm2-135m"}
    assert set(plan(Settings().engine_setup, "cuda").values()) == {MAIN}
    assert set(plan(Settings(model="qwen2.5-coder-1.5b").engine_setup, "cpu").values()) == {MAIN}
    assert set(plan(Settings(engine_backend="remote").engine_setup, "cpu").values()) == {MAIN}


def test_the_routes_setting_is_checked_and_a_route_to_the_main_model_is_main() -> None:
    settings, errors = parse_settings({"routes": {"explicit": "qwen2.5-coder-1.5b"}})
    assert not errors
    assert plan(settings.engine_setup, "cpu")["explicit"] == "qwen2.5-coder-1.5b"
    # a routes object replaces the default
    assert plan(settings.engine_setup, "cpu")["singleLine"] == MAIN
    # naming the main engine's own model is no second engine: the CUDA default is 1.5b
    assert plan(settings.engine_setup, "cuda")["explicit"] == MAIN
    assert plan(dataclasses.replace(settings, model="qwen2.5-coder-1.5b").engine_setup, "cpu")[
        "explicit"] == MAIN
    for bad in ({"typing": "x"}, {"explicit": 3}, {"explicit": ""}, ["explicit"]):
        _, errors = parse_settings({"routes": bad})
        assert errors and "routes" in errors[0], bad


def test_route_kind() -> None:
    assert route_kind("single-line", True, False) == "explicit"
    assert route_kind("multi-line", False, True) == "prefetch"
    assert route_kind("multi-line", False, False) == "multiLine"
    assert route_kind("single-line", False, False) == "singleLine"


async def _routes(typing_loads: threading.Event | None = None) -> tuple[Routes, list[str]]:
    main = EngineManager(factory=lambda s, r: FakeEngine(" main\n", 0.001, "main-model"))
    assert (await main.start(Settings().engine_setup)).ok
    loaded: list[str] = []

    def factory(settings: EngineSetup, report: object) -> FakeEngine:  # runs in the load thread
        if typing_loads is not None:
            typing_loads.wait(10)
        loaded.append(settings.engine.model)
        return FakeEngine(" small\n", 0.001, settings.engine.model)

    return Routes(main, lambda: EngineManager(factory=factory)), loaded


async def test_each_kind_gets_its_engine_and_falls_back_to_main_until_it_is_ready() -> None:
    gate = threading.Event()
    routes, loaded = await _routes(typing_loads=gate)
    routes.expect(Settings().engine_setup, "cpu")  # planned, not started: reported as loading
    assert routes.stats()["singleLine"]["state"] == "loading"
    assert routes.engine_for("singleLine", count=False)[1] == MAIN
    await routes.start(Settings().engine_setup, "cpu", lambda _: None)
    engine, route = routes.engine_for("singleLine")
    assert (route, engine.info.model) == (MAIN, "main-model")  # still loading: fallback
    gate.set()
    await routes.manager_for("singleLine").wait_ready()
    engine, route = routes.engine_for("singleLine")
    assert (route, engine.info.model) == ("smollm2-135m", "smollm2-135m")
    assert routes.engine_for("explicit")[1] == MAIN
    assert loaded == ["smollm2-135m"]  # one extra engine, shared by three kinds
    stats = routes.stats()
    assert stats["singleLine"]["answered"] == [{"route": MAIN, "requests": 1},
                                               {"route": "smollm2-135m", "requests": 1}]
    assert stats["explicit"] == {"route": MAIN, "model": "main-model", "state": "ready",
                                 "breaker": "closed", "fallbacks": [],
                                 "answered": [{"route": MAIN, "requests": 1}]}
    assert routes.main.telemetry.counters["route_fallbacks"] == 1
    # the routes change: the extra engine stops, nothing new loads
    await routes.start(Settings(model="some-folder").engine_setup, "cpu", lambda _: None)
    assert routes.engine_for("singleLine")[1] == MAIN and loaded == ["smollm2-135m"]
    await routes.shutdown()


async def test_another_routes_engine_tells_the_user_as_the_main_one_does() -> None:
    """Its telemetry, its notices and the retry it names are the main engine's (the server
    sets them on the main one only)."""
    routes, _ = await _routes()
    routes.main.retry_hint = "Run the retry command"
    await routes.start(Settings().engine_setup, "cpu", lambda _: None)
    extra = routes.manager_for("singleLine")
    assert extra is not routes.main
    assert (extra.telemetry, extra.notify, extra.retry_hint) == (
        routes.main.telemetry, routes.main.notify, "Run the retry command")
    await routes.shutdown()


async def test_the_completer_asks_the_routed_engine_and_says_which_answered() -> None:
    routes, _ = await _routes()
    settings = Settings(debounce_mode="off", deadline_ms=0)
    await routes.start(settings.engine_setup, "cpu", lambda _: None)
    await routes.manager_for("singleLine").wait_ready()
    completer = Completer(routes.main, Telemetry(), SettingsHub(settings), routes=routes)
    store = DocumentStore()
    text = "def f(x):\n    return"
    store.open("file:///w/f.py", "python", 1, text)
    typed = await completer.complete(store.snapshot("file:///w/f.py"), len(text))
    asked = await completer.complete(store.snapshot("file:///w/f.py"), len(text), explicit=True)
    assert (typed.route, typed.text) == ("smollm2-135m", " small")
    assert (asked.route, asked.text) == (MAIN, " main")
    await routes.shutdown()


def test_a_route_may_list_engines_to_fall_back_through_and_main_ends_each() -> None:
    settings, errors = parse_settings({"routes": {
        "singleLine": ["smollm2-135m", "qwen2.5-coder-1.5b"], "explicit": ["main"],
        "multiLine": ["qwen2.5-coder-0.5b", "smollm2-135m"]}})
    assert not errors
    got = chains(settings, "cpu")
    assert got["singleLine"] == ("smollm2-135m", "qwen2.5-coder-1.5b", MAIN)
    assert got["explicit"] == got["prefetch"] == (MAIN,)
    assert got["multiLine"] == (MAIN, "smollm2-135m")  # the main model named: main
    for bad in ({"explicit": []}, {"explicit": ["main", ""]}, {"explicit": [3]}):
        _, errors = parse_settings({"routes": bad})
        assert errors and "routes" in errors[0], bad


async def test_a_failing_engine_opens_its_breaker_and_its_requests_fall_back_and_return(
) -> None:
    clock = [1000.0]
    remote = FakeEngine(" far\n", 0.001, "remote-model")
    main = EngineManager(factory=lambda s, r: remote, clock=lambda: clock[0])
    settings = Settings(routes=(("singleLine", (MAIN, "smollm2-135m")),), breaker_failures=2,
                        breaker_cooldown_ms=5_000, health_check_interval_ms=3_600_000)
    assert (await main.start(settings.engine_setup)).ok
    told: list[tuple[str, str]] = []
    main.notify = lambda level, message: told.append((level, message))
    routes = Routes(main, lambda: EngineManager(
        factory=lambda s, r: FakeEngine(" near\n", 0.001, s.engine.model), clock=lambda: clock[0]))
    await routes.start(settings.engine_setup, "cpu", lambda _: None)
    await routes.manager_for("explicit").wait_ready()
    fallback = routes._manager("smollm2-135m")
    assert fallback is not None
    loaded = await fallback.wait_ready()
    assert loaded is not None and loaded.ok, loaded

    def ask() -> str:
        return routes.engine_for("singleLine")[1]

    async def call() -> None:
        engine, _ = routes.engine_for("singleLine")
        with contextlib.suppress(RuntimeError):
            await engine.generate(EngineRequest(request_id="r", prompt="p", max_tokens=4))

    remote.down = True
    await call()
    await call()
    assert main.breaker.state == "open" and main.telemetry.counters["breaker_opened"] == 1
    assert ask() == "smollm2-135m" and ask() == "smollm2-135m"
    assert [level for level, _ in told] == ["warning"]  # told once
    assert told[0][1] == ("lsp-copilot: the embedded engine (remote-model) is not answering; "
                          "suggestions come from the embedded engine (smollm2-135m) until it "
                          "is back.")
    assert main.telemetry.counters["route_fallbacks"] == 2
    # Back: after the cooldown one request probes, its answer closes the breaker.
    remote.down = False
    clock[0] += 5
    await call()
    assert main.breaker.state == "closed" and ask() == MAIN
    assert [level for level, _ in told] == ["warning", "back"]
    assert "answers again" in told[1][1]
    stats = routes.stats()["singleLine"]
    assert stats["breaker"] == "closed" and stats["fallbacks"] == [
        {"route": "smollm2-135m", "state": "ready", "breaker": "closed"}]
    await routes.shutdown()
    await main.shutdown()


async def test_with_every_engine_of_a_route_out_the_answer_says_why() -> None:
    remote = FakeEngine(" far\n", 0.001, "remote-model")
    main = EngineManager(factory=lambda s, r: remote)
    settings = Settings(routes=(), breaker_failures=1, health_check_interval_ms=3_600_000)
    assert (await main.start(settings.engine_setup)).ok
    routes = Routes(main)
    await routes.start(settings.engine_setup, "cpu", lambda _: None)
    remote.down = True
    engine, _ = routes.engine_for("explicit")
    with contextlib.suppress(RuntimeError):
        await engine.generate(EngineRequest(request_id="r", prompt="p", max_tokens=4))
    try:
        routes.engine_for("explicit")
        raise AssertionError("expected EngineUnavailable")
    except EngineUnavailable as exc:
        assert "failed 1 times" in str(exc)
    await main.shutdown()
