"""The code after the cursor in a fill-in-the-middle prompt: none on CPU by default (the
0.5B model copies lines from it), a quarter of the window on GPU, ``suffixShare`` when set.
The prefix-only prompt of the CPU typing model never had a suffix and stays the same."""

from __future__ import annotations

from typing import Any

import pytest

from lsp_copilot.context.budgets import budgets_for
from lsp_copilot.context.builder import build_context
from lsp_copilot.context.result import Context
from lsp_copilot.documents.store import DocumentStore, Snapshot
from lsp_copilot.engine.base import EngineInfo
from lsp_copilot.engine.routes import MAIN
from lsp_copilot.pipeline.prompt import cursor_at, prompt_for
from lsp_copilot.prompts.templates import TEMPLATES
from lsp_copilot.settings.core import Settings, parse_settings
from tests.support.fakes import CharCounter, FakeEngine

URI = "file:///w/shapes.py"
SOURCE = ("import math\n\n\ndef area(r):\n    return \n\n\n"
          "def perimeter(r):\n    return 2 * math.pi * r\n")
CURSOR = SOURCE.index("return \n") + len("return ")


def _snapshot(text: str) -> Snapshot:
    store = DocumentStore()
    store.open(URI, "python", 1, text)
    return store.snapshot(URI)


def _prompt(device: str, template: str = "qwen2.5-coder", **values: Any) -> Context:
    """The context the pipeline builds for an explicit request at the cursor."""
    engine = FakeEngine()
    engine.info = EngineInfo("fake", "fake-model", device, True, None, template=template)
    snap = _snapshot(SOURCE)
    _, context = prompt_for(engine, MAIN, Settings(**values).request, snap, CURSOR,
                            cursor_at(snap, CURSOR), "single-line", explicit=True)
    return context


def test_on_cpu_a_fim_prompt_has_no_suffix_by_default() -> None:
    context = _prompt("cpu")
    assert context.suffix == ""
    assert "2 * math.pi" not in context.prompt
    assert context.prompt.endswith("<|fim_suffix|><|fim_middle|>")
    assert context.prefix.endswith("def area(r):\n    return")  # (the indent is dropped)


def test_on_gpu_a_fim_prompt_keeps_the_code_after_the_cursor() -> None:
    context = _prompt("cuda")
    assert "def perimeter(r):" in context.suffix
    assert "def perimeter(r):" in context.prompt


@pytest.mark.parametrize(("device", "share", "has_suffix"),
                         [("cpu", 0.25, True), ("cuda", 0.0, False), ("cuda", 0, False)])
def test_the_setting_decides_on_any_device(device: str, share: float,
                                           has_suffix: bool) -> None:
    assert bool(_prompt(device, suffix_share=share).suffix) is has_suffix


def test_the_prefix_only_typing_prompt_is_the_same_whatever_the_share() -> None:
    prompts = {_prompt("cpu", "prefix-only", suffix_share=share).prompt for share in (0, 0.25)}
    assert len(prompts) == 1
    assert "2 * math.pi" not in prompts.pop()


def test_without_a_suffix_the_prefix_takes_its_budget() -> None:
    """The budget the suffix would have had goes to the code above the cursor."""
    above = "".join(f"value_{i} = {i} * {i}\n" for i in range(400))
    text = above + "total = \nafter = [value_1, value_2]\n" * 40
    offset = len((above + "total =").encode())
    snap = _snapshot(text)
    template = TEMPLATES["qwen2.5-coder"]
    with_suffix = build_context(snap, offset, CharCounter(), template, 600, "multi-line")
    without = build_context(snap, offset, CharCounter(), template, 600, "multi-line",
                            suffix_share=0.0)
    assert with_suffix.suffix and not without.suffix
    assert len(without.prefix) > len(with_suffix.prefix)
    assert with_suffix.prefix.endswith(without.prefix[-200:])
    assert without.prompt_tokens <= 600


def test_suffix_share_is_read_from_the_wire_and_checked() -> None:
    settings, problems = parse_settings({"suffixShare": 0.3})
    assert settings.suffix_share == 0.3 and not problems
    assert budgets_for(settings.request, "cpu").suffix_share == 0.3
    settings, problems = parse_settings({"suffixShare": 2})
    assert settings.suffix_share is None and problems
    assert budgets_for(settings.request, "cpu").suffix_share == 0.0
    assert budgets_for(settings.request, "remote").suffix_share == 0.25
