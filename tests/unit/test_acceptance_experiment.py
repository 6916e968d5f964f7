"""`experiment` arms: what an arm may set, and the engines an arm names (fake engines)."""

from __future__ import annotations

from lsp_copilot.acceptance import experiment
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.engine.routes import MAIN, Routes, arm_chains, chains
from lsp_copilot.pipeline.completer import Completer
from lsp_copilot.settings.arms import experiment_arms
from lsp_copilot.settings.core import Settings, camel, parse_settings, setting_docs
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.settings.layers import EngineSetup
from lsp_copilot.telemetry import Telemetry
from tests.support.fakes import FakeEngine
from tests.support.pipeline import snap


def _build(arms: dict[str, dict[str, object]], **base: object) -> tuple[
        experiment.Experiment, list[str]]:
    settings, errors = parse_settings({"experiment": arms, **base})
    assert errors == []
    arms, problems = experiment_arms(settings)
    exp = experiment.build(arms, settings.engine)
    assert exp is not None
    return exp, problems


def test_an_arm_may_set_per_request_settings_a_model_or_routes() -> None:
    exp, problems = _build({"qwen": {"model": "qwen2.5-coder-0.5b", "deadlineMs": 900},
                            "smol": {"routes": {"singleLine": "smollm2-135m"}}})
    assert problems == []
    assert exp.settings[0].engine.model == "qwen2.5-coder-0.5b"
    assert exp.settings[0].completion.deadline_ms == 900
    assert set(exp.engines()) == {"qwen", "smol"}
    same, _ = _build({"a": {}, "b": {"temperature": 0.2}})
    assert same.engines() == {}


def test_every_other_setting_is_refused_by_name() -> None:
    wire = {camel(name) for name, _, _ in setting_docs()}
    refused = wire - experiment.PER_REQUEST - experiment.ENGINE_CHOICE
    assert {"prefetch", "warmUp", "secretFilePatterns", "cacheDir", "dtype", "logFile",
            "acceptanceFile", "maxQueue"} <= refused
    for key in sorted(refused - {"experiment"}):
        default = next(d for n, d, _ in setting_docs() if camel(n) == key)
        settings, _ = parse_settings({"experiment": {"a": {key: default}, "b": {}}})
        _, problems = experiment_arms(settings)
        assert len(problems) == 1 and f"{key!r} refused" in problems[0], (key, problems)
    _, problems = _build({"a": {"nonsense": 1}, "b": {}})
    assert problems == ["experiment arm 'a': unknown setting 'nonsense' ignored"]


def test_the_cluster_is_the_line_and_names_no_path() -> None:
    exp, _ = _build({"a": {}, "b": {}})
    one = exp.cluster("file:///home/me/secret.py", 3)
    assert one == exp.cluster("file:///home/me/secret.py", 3) != exp.cluster(
        "file:///home/me/secret.py", 4)
    assert len(one) == 12 and "secret" not in one


def test_an_arms_model_replaces_the_main_one_and_main_stays_the_fallback() -> None:
    base = Settings(routes=())
    got = arm_chains(base, Settings(routes=(), model="smollm2-135m"), "cpu")
    assert set(got.values()) == {("smollm2-135m", MAIN)}
    assert arm_chains(base, base, "cpu") == chains(base, "cpu")
    # naming the main model is the main engine; routes as the setting says
    assert set(arm_chains(base, Settings(routes=(), model="qwen2.5-coder-0.5b"), "cpu")
               .values()) == {(MAIN,)}
    typing, _ = parse_settings({"routes": {"singleLine": "smollm2-135m"}})
    got = arm_chains(base, typing, "cpu")
    assert got["singleLine"] == ("smollm2-135m", MAIN) and got["explicit"] == (MAIN,)


async def test_an_arm_with_another_model_loads_its_engine_and_answers_from_it() -> None:
    main = EngineManager(factory=lambda s, r: FakeEngine(" main\n", 0.001, "main-model"))
    assert (await main.start(Settings().engine_setup)).ok
    loaded: list[str] = []

    def factory(settings: EngineSetup, report: object) -> FakeEngine:
        loaded.append(settings.engine.model)
        return FakeEngine(" small\n", 0.001, settings.engine.model)

    routes = Routes(main, lambda: EngineManager(factory=factory))
    base, _ = parse_settings({"experiment": {"big": {}, "small": {"model": "smollm2-135m"}},
                              "routes": {}, "debounceMode": "off", "deadlineMs": 0})
    exp = experiment.build(experiment_arms(base)[0], base.engine)
    assert exp is not None
    routes.arms = exp.engines()
    await routes.start(base.engine_setup, "cpu", lambda _: None)
    manager = routes.manager_named("smollm2-135m")
    assert manager is not None
    await manager.wait_ready()
    assert loaded == ["smollm2-135m"]  # one more engine, the arm's
    completer = Completer(main, Telemetry(), SettingsHub(base), routes=routes)
    completer.experiment = exp
    seen: dict[str, set[str | None]] = {}
    for line in range(12):
        text = "\n" * line + "def add(a, b):\n    return"
        out = await completer.complete(snap(text), len(text))
        seen.setdefault(out.arm, set()).add(out.route)
        assert out.text == (" small" if out.arm == "small" else " main"), out
    assert seen == {"big": {MAIN}, "small": {"smollm2-135m"}}
    routes.arms = {}  # the experiment is gone: its engine stops
    await routes.start(base.engine_setup, "cpu", lambda _: None)
    assert routes.manager_named("smollm2-135m") is None
    await routes.shutdown()
