"""Context settings: the prompt's format and its token budget, split between the context
layers P0..P4 (lsp_copilot/context)."""

from __future__ import annotations

from dataclasses import dataclass

from lsp_copilot.settings.checks import (
    float_range,
    int_range,
    keyed,
    one_of,
    optional,
    setting,
    shares,
)

TEMPLATE_NAMES = ("prefix-only", "starcoder-fim", "starcoder2", "qwen2.5-coder",
                  "deepseek-coder", "codellama", "codestral", "mellum")
"""The prompt families the ``template`` setting accepts, in the order of the prompts
package's TEMPLATES (settings sit below prompts and cannot import them; a unit test fails
when the two lists disagree)."""

BUDGET_KEYS = ("singleLine", "multiLine", "explicit")
"""``contextBudgets``' keys: automatic single-line, automatic multi-line, explicit request."""

CONTEXT_SHARES = (0.7, 0.1, 0.1, 0.05, 0.05)
"""Default budget shares of the context layers P0..P4 (the ``contextShares`` setting).
The cursor window takes most of it: on code newer than the models, a small model answers
a line from the code just above it far more often than from definitions found elsewhere
(``bench quality`` on the tune split, docs/benchmarks.md)."""

BUDGETS = keyed(BUDGET_KEYS,
                lambda v: isinstance(v, int) and not isinstance(v, bool) and 64 <= v <= 1_000_000,
                "(token counts from 64 to 1000000)",
                {"type": "integer", "minimum": 64, "maximum": 1_000_000})


@dataclass(frozen=True)
class ContextSettings:
    """Context: the prompt's format and its budget."""

    template: str = setting(
        "auto",
        "Prompt format: auto (detected from the model's config and tokenizer) or a family: "
        + ", ".join(TEMPLATE_NAMES) + ".",
        one_of("auto", *TEMPLATE_NAMES),
    )
    max_prompt_tokens: int = setting(
        1536, "Token budget of the prompt (counted with the model's tokenizer) on CPU; "
        "contextBudgets sets it per request kind and device.",
        int_range(64, 1_000_000)
    )
    context_budgets: tuple[tuple[str, int], ...] | None = setting(
        None,
        "Prompt budget per request kind, e.g. {\"singleLine\": 1536, \"multiLine\": 4096, "
        "\"explicit\": 8192}; null or a missing key: by device (CPU: maxPromptTokens for each; "
        "GPU: 2048, 6144, 8192), always within maxModelLen minus the tokens generated.",
        BUDGETS,
    )
    context_shares: tuple[float, ...] = setting(
        CONTEXT_SHARES,
        "Budget shares of the context layers P0 cursor window, P1 enclosing scope, P2 "
        "referenced definitions, P3 imported symbols, P4 recent edits and similar snippets "
        "(what a layer leaves flows to the next).",
        shares(len(CONTEXT_SHARES)),
    )
    suffix_share: float | None = setting(
        None,
        "Share of the cursor window's budget given to the code after the cursor "
        "(fill-in-the-middle templates; a single line gets 0.6 of it); 0 sends no suffix; "
        "null: by device (CPU 0, GPU 0.25).",
        optional(float_range(0.0, 0.9)),
    )
