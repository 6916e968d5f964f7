"""`bench typing --ablate`: each mechanism can be turned off, and only that one.

The switches without a setting (supersede, continuation) are checked here with plain
coroutines and the FAKE engine (scheduling logic only); the bench runs them through the
real engine and protocol.
"""

from __future__ import annotations

import asyncio

import pytest

from lsp_copilot.pipeline.scheduling import Scheduler
from lsp_copilot.server.app import ablated, create_server
from lsp_copilot.settings.core import Settings, parse_settings
from lsp_copilot.telemetry import Telemetry
from lsp_copilot_bench import ablation
from tests.support.fakes import FakeEngine
from tests.support.pipeline import completer_for, snap


def test_every_setting_an_ablation_names_exists_and_turns_something_off() -> None:
    default = Settings()
    for name, mechanism in ablation.MECHANISMS.items():
        assert bool(mechanism.settings) != bool(mechanism.server), name
        if mechanism.settings:
            parsed, errors = parse_settings(mechanism.settings)
            assert not errors, (name, errors)
            assert parsed != default, name  # the override changes a value


def test_configs_run_the_default_twice_then_each_mechanism_off() -> None:
    env = {"PATH": "/bin"}
    got = ablation.configs({"model": "m"}, env, ("merge", "supersede"))
    assert [name for name, _, _ in got] == ["default", "default-again", "no-merge",
                                            "no-supersede"]
    assert got[0][1] == got[1][1] == {"model": "m"}
    assert got[2][1] == {"model": "m", "merge": False} and got[2][2] == env
    assert got[3][1] == {"model": "m"} and got[3][2][ablation.ABLATE_ENV] == "supersede"


def test_names_are_checked() -> None:
    assert ablation.names("all") == tuple(ablation.MECHANISMS)
    assert ablation.names("cache, merge") == ("cache", "merge")
    with pytest.raises(ValueError, match="unknown nope"):
        ablation.names("cache,nope")


def test_the_server_reads_its_switches_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ablation.ABLATE_ENV, "supersede,bogus")
    assert ablated() == {"supersede"}
    server = create_server()
    assert not server.scheduler.supersede and server.completer.continuation
    monkeypatch.delenv(ablation.ABLATE_ENV)
    server = create_server()
    assert server.scheduler.supersede and server.completer.continuation


async def test_without_supersede_an_older_request_runs_on() -> None:
    sched = Scheduler(Telemetry(), supersede=False)
    release = asyncio.Event()

    async def slow() -> str:
        await release.wait()
        return "slow"

    async def fast() -> str:
        return "fast"

    first = asyncio.ensure_future(sched.run("doc", slow))
    await asyncio.sleep(0)
    assert await sched.run("doc", fast) == "fast"
    release.set()
    assert await first == "slow"
    assert sched.telemetry.counters["superseded"] == 0


async def test_without_continuation_a_generation_stops_at_its_answer() -> None:
    reply = " b)\n    return total\n"
    engine = FakeEngine(reply=reply, step_s=0.02)
    completer = await completer_for(engine, typing_through=False)
    completer.continuation = False
    line = "def add(a, b):\n    total = f(a,"
    first = await completer.complete(snap(line), len(line))
    assert first.text == " b)"
    typed = line + " b)"
    pause = await completer.complete(snap(typed), len(typed))
    assert pause.source == "engine"  # nothing under way to join: asked afresh
    assert len(engine.prompts) == 2
