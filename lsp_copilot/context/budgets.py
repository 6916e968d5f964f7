"""The prompt's token budget for a request: by what the request asks and where it runs.

A line typed at the keyboard wants an answer before the next key, a block (multi-line)
can use more of the code around it, and an explicit request (the user asked and waits)
more still. A GPU prefills thousands of tokens in a few milliseconds; two CPU cores take
about a second per 300-500 tokens that miss the prefix cache (FACTS.md), so CPU budgets
stay at the one measured for typing. ``contextBudgets`` overrides any of them; every
budget is kept within ``maxModelLen`` minus the tokens the mode may generate.

How much of the cursor window's budget goes to the code after the cursor (for
fill-in-the-middle templates) is decided here too, by device, unless ``suffixShare`` says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsp_copilot.settings.context import BUDGET_KEYS
from lsp_copilot.settings.layers import RequestSettings

GPU_DEFAULTS = {"singleLine": 2048, "multiLine": 6144, "explicit": 8192}
"""Seed 004's sizes: about 2K tokens for a line, more for a block, most when asked."""

SUFFIX_SHARES = {"cpu": 0.0, "gpu": 0.25}
"""The cursor window's share for the code after the cursor when ``suffixShare`` is null.
On CPU the main model is Qwen2.5-Coder-0.5B: it copies lines of the code below the cursor
into its answer (the next function's ``return``), and without a suffix it answered
explicit requests better, single lines and blocks alike (``bench quality --split tune``,
docs/benchmarks.md). The GPU's larger models keep the suffix."""


def device_class(device: str) -> str:
    """``gpu`` for CUDA and remote deployments (vLLM servers run on GPUs), else ``cpu``."""
    return "gpu" if device.startswith(("cuda", "remote")) else "cpu"


@dataclass(frozen=True)
class Budgets:
    device: str  # "cpu" or "gpu"
    single_line: int
    multi_line: int
    explicit: int
    suffix_share: float = SUFFIX_SHARES["gpu"]  # of the cursor window, for FIM templates

    def for_request(self, mode: str, explicit: bool = False) -> int:
        if explicit:
            return self.explicit
        return self.multi_line if mode == "multi-line" else self.single_line

    def as_dict(self) -> dict[str, Any]:
        """What ``context --json`` and ``complete --json`` report under ``budgets``."""
        return {"device": self.device, "singleLine": self.single_line,
                "multiLine": self.multi_line, "explicit": self.explicit}


def budgets_for(settings: RequestSettings, device: str) -> Budgets:
    """The budgets per mode for ``settings`` on ``device`` (an engine's device string)."""
    kind = device_class(device)
    if kind == "gpu":
        chosen = dict(GPU_DEFAULTS)
    else:
        # Two cores: every kind keeps maxPromptTokens, the budget typing and the quality
        # benchmark were measured with (an explicit request is not debounced or cut, and
        # 450 more tokens would cost it about a second and a half of uncached prefill).
        chosen = dict.fromkeys(BUDGET_KEYS, settings.context.max_prompt_tokens)
    chosen.update(dict(settings.context.context_budgets or ()))
    # A single line at the end of its line may generate as much as a block (a header that
    # would stand alone gets its body), so every kind leaves room for the larger limit.
    completion = settings.completion
    longest = max(completion.max_tokens_single_line, completion.max_tokens_multi_line)
    room = settings.engine.model_len("cpu" if kind == "cpu" else "cuda") - longest
    single_line, multi_line, explicit = (max(64, min(chosen[key], room)) for key in BUDGET_KEYS)
    share = settings.context.suffix_share
    return Budgets(kind, single_line, multi_line, explicit,
                   SUFFIX_SHARES[kind] if share is None else share)

