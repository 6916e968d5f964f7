"""`bench engine --weights`: every format's engine is started with its weights and no
speculation, each takes every hole in turn, and the figures compare with the first."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from lsp_copilot.settings.core import Settings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot_bench import weights as bench
from lsp_copilot_bench.corpus import default_corpus
from tests.support.fakes import FakeEngine


class _Manager:
    def __init__(self) -> None:
        self.stopped = False

    async def shutdown(self) -> None:
        self.stopped = True


def test_formats_are_parsed_and_checked() -> None:
    assert bench.parse_weights(" bf16, int8 ") == ["bf16", "int8"]
    assert bench.parse_weights("bf16,bf16+compiled") == ["bf16", "bf16+compiled"]
    assert bench.parse_weights("bf16+bfloat16,bf16+compiled+float32") == [
        "bf16+bfloat16", "bf16+compiled+float32"]
    with pytest.raises(ValueError, match="unknown weights 'bf16\\+float32\\+bfloat16'"):
        bench.parse_weights("bf16,bf16+float32+bfloat16")
    with pytest.raises(ValueError, match="unknown weights 'bf16\\+fast'"):
        bench.parse_weights("bf16,bf16+fast")
    with pytest.raises(ValueError, match="unknown weights 'fp4'"):
        bench.parse_weights("bf16,fp4")
    with pytest.raises(ValueError, match="two or more"):
        bench.parse_weights("int8")
    with pytest.raises(ValueError, match="two or more"):
        bench.parse_weights("int8,int8")


def test_each_format_runs_every_hole_and_is_compared_with_the_first(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    replies = {"bf16": " a + b\n", "int8": " a + b\n", "int4": " a - b\n"}
    started: list[Settings] = []  # what each engine was started with
    managers: list[_Manager] = []
    engines: dict[str, FakeEngine] = {}

    async def start(hub: SettingsHub) -> tuple[Any, FakeEngine, float, None]:
        settings = hub.settings
        started.append(settings)
        engine = engines[settings.weights] = FakeEngine(replies[settings.weights], 0.0)
        managers.append(_Manager())
        return managers[-1], engine, 1.0, None

    monkeypatch.setattr(bench, "start_engine", start)
    monkeypatch.setattr(bench, "SETTLE_S", 0.0)
    corpus: Path = default_corpus()
    out = asyncio.run(bench.bench_weights(corpus, 3, SettingsHub.of(model="m"),
                                        ["bf16", "int8", "int4"]))
    assert [s.weights for s in started] == ["bf16", "int8", "int4"]
    assert {s.speculative_method for s in started} == {"none"} and started[0].model == "m"
    assert all(m.stopped for m in managers)
    for engine in engines.values():  # one decode and one single-line fill per hole
        assert len(engine.requests) == 2 * out["weights"]["bf16"]["holes"]
    figures = out["weights"]
    assert figures["bf16"]["holes"] == 3
    assert figures["int8"]["same_as_first"] == 1.0
    assert figures["int4"]["same_as_first"] == 0.0


@pytest.mark.parametrize(("formats", "started_with", "compiled"), [
    (["bf16", "bf16+compiled"], [("bf16", None, "auto"), ("bf16", False, "auto")],
     [False, True]),
    # A format may name the dtype it computes in (bf16 against float32 on one CPU).
    (["bf16+bfloat16", "bf16+compiled+float32"],
     [("bf16", None, "bfloat16"), ("bf16", False, "float32")], [False, True]),
])
def test_a_format_loads_compiled_or_in_a_dtype_as_its_suffixes_say(
        monkeypatch: pytest.MonkeyPatch, formats: list[str],
        started_with: list[tuple[str, bool | None, str]], compiled: list[bool]) -> None:
    started: list[Settings] = []

    async def start(hub: SettingsHub) -> tuple[Any, FakeEngine, float, None]:
        started.append(hub.settings)
        return _Manager(), FakeEngine(" a + b\n", 0.0), 1.0, None

    monkeypatch.setattr(bench, "start_engine", start)
    monkeypatch.setattr(bench, "SETTLE_S", 0.0)
    out = asyncio.run(bench.bench_weights(default_corpus(), 2, SettingsHub.of(model="m"),
                                        formats))
    assert [(s.weights, s.enforce_eager, s.dtype) for s in started] == started_with
    assert [out["weights"][w]["compiled"] for w in formats] == compiled
