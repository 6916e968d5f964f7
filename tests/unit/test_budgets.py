"""contextBudgets: the prompt budget follows the request (single-line, multi-line, explicit)
and the device; it never leaves too little of maxModelLen for the answer."""

from __future__ import annotations

import asyncio
from typing import Any

from lsp_copilot.context.budgets import budgets_for, device_class
from lsp_copilot.context.builder import build_context as real_build_context
from lsp_copilot.context.result import Context
from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.pipeline.completer import Completer
from lsp_copilot.settings.core import Settings, parse_settings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.telemetry import Telemetry
from tests.support.fakes import FakeEngine


def test_cpu_defaults_keep_todays_budget_for_typing() -> None:
    b = budgets_for(Settings().request, "cpu")
    assert (b.single_line, b.multi_line, b.explicit) == (1536, 1536, 1536)
    # A larger maxPromptTokens is kept within maxModelLen (2,048) minus 64 generated tokens.
    big, problems = parse_settings({"maxPromptTokens": 4000})
    assert not problems and budgets_for(big.request, "cpu").explicit == 2048 - 64
    custom, _ = parse_settings({"contextBudgets": {"explicit": 1900}})
    b = budgets_for(custom.request, "cpu")
    assert b.for_request("multi-line") == 1536 and b.for_request("single-line", True) == 1900


def test_gpu_defaults_grow_with_the_task_within_the_model_length() -> None:
    settings, problems = parse_settings({"maxModelLen": 16384})
    assert not problems
    b = budgets_for(settings.request, "cuda")
    assert (b.single_line, b.multi_line, b.explicit) == (2048, 6144, 8192)
    assert device_class("remote:vllm.example:8000") == "gpu"
    default = budgets_for(Settings().request, "cuda")  # maxModelLen's CUDA default has the room
    assert (default.single_line, default.multi_line, default.explicit) == (2048, 6144, 8192)
    assert Settings().model_len("cuda") >= 8192 + 64 and Settings().model_len("cpu") == 2048
    # a set length holds them back
    small = budgets_for(Settings(max_model_len=2048).request, "cuda")
    assert small.multi_line == small.single_line == 2048 - 64


def test_setting_overrides_some_keys_and_bad_values_are_reported() -> None:
    settings, problems = parse_settings(
        {"lspCopilot": {"contextBudgets": {"multiLine": 1800}, "maxModelLen": 4096}})
    assert not problems
    assert settings.context_budgets == (("multiLine", 1800),)
    b = budgets_for(settings.request, "cpu")
    assert (b.single_line, b.multi_line, b.explicit) == (1536, 1800, 1536)
    assert b.as_dict() == {"device": "cpu", "singleLine": 1536, "multiLine": 1800,
                           "explicit": 1536}
    for bad in ({"singleline": 1000}, {"explicit": 10}, {"explicit": True}, [1, 2]):
        settings, problems = parse_settings({"contextBudgets": bad})
        assert len(problems) == 1 and "contextBudgets" in problems[0]
        assert settings.context_budgets is None


def test_an_explicit_request_gets_the_explicit_budget() -> None:
    async def run() -> list[int]:
        engine = FakeEngine(" a + b\n", step_s=0)
        manager = EngineManager(factory=lambda s, report: engine)
        assert (await manager.start(Settings().engine_setup)).ok
        settings = Settings(debounce_mode="off", deadline_ms=0, cache=False,
                            context_budgets=(("explicit", 1900), ("singleLine", 900)))
        seen: list[int] = []

        def spy(*args: Any, **kwargs: Any) -> Context:
            seen.append(args[4])
            return real_build_context(*args, **kwargs)

        completer = Completer(manager, Telemetry(), SettingsHub(settings), context_builder=spy)
        store = DocumentStore()
        store.open("file:///w/a.py", "python", 1, "def add(a, b):\n    return ")
        snap = store.snapshot("file:///w/a.py")
        await completer.complete(snap, len(snap.data))
        await completer.complete(snap, len(snap.data), explicit=True)
        context = completer.telemetry.snapshot()["context"]
        assert context["prompts"] == 2 and context["layers"]["P0 cursor window"]["present"] == 2
        return seen

    assert asyncio.run(run()) == [900, 1900]
