"""Post-processing rules on real model output (fixtures in tests/fixtures/postprocess/).

Each fixture holds the default model's raw text at a hole in real code (its ``source``
says where it came from; ``collect.py`` there extracts them from a `bench quality` run),
the code around the hole, and the cleaned text expected. Each names the rule it shows
(``module.function`` in ``lsp_copilot/postprocess/``);
the second test checks that without that rule the result would be different, so the
fixture really exercises it.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.language.trigger import completion_mode
from lsp_copilot.pipeline.prompt import cursor_at
from lsp_copilot.postprocess.checks import finalize

FIXTURES = Path(__file__).parent.parent / "fixtures" / "postprocess"
MARK = "<|cursor|>"
CASES = sorted(p.stem for p in FIXTURES.glob("*.json"))


def _run(name: str) -> tuple[dict[str, Any], str]:
    fixture = json.loads((FIXTURES / f"{name}.json").read_text())
    document: str = fixture["document"]
    offset_chars = document.index(MARK)
    text = document.replace(MARK, "")
    store = DocumentStore()
    uri = f"file:///fixture/{name}"
    store.open(uri, fixture["language_id"], 1, text)
    snapshot = store.snapshot(uri)
    offset = len(text[:offset_chars].encode())
    mode = completion_mode(snapshot, offset)
    assert mode == fixture["mode"]
    cursor = cursor_at(snapshot, offset)
    truncated = fixture.get("finish_reason") == "length"  # the generation hit its limit
    return fixture, finalize(fixture["raw"], mode, cursor, snapshot, offset, truncated)


def test_there_are_fixtures() -> None:
    assert len(CASES) >= 3


@pytest.mark.parametrize("name", CASES)
def test_real_output_is_cleaned(name: str) -> None:
    fixture, got = _run(name)
    assert got == fixture["expected"]


@pytest.mark.parametrize("name", CASES)
def test_the_rule_is_needed(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fixture = json.loads((FIXTURES / f"{name}.json").read_text())
    rules = fixture["rule"] if isinstance(fixture["rule"], list) else [fixture["rule"]]
    for rule in rules:  # (two rules may each be enough alone: then both are named)
        module, function = rule.split(".")  # in lsp_copilot/postprocess/<module>.py
        monkeypatch.setattr(importlib.import_module(f"lsp_copilot.postprocess.{module}"),
                            function, lambda text, *_: text)
    _, got = _run(name)
    assert got != fixture["expected"]
