"""Context: what the model sees for a cursor, ranked layers within a token budget."""

from __future__ import annotations

from dataclasses import dataclass, field

from lsp_copilot.context.budget import TokenCounter
from lsp_copilot.context.trigger import Mode, completion_mode
from lsp_copilot.context.window import cursor_window
from lsp_copilot.documents.store import Snapshot
from lsp_copilot.prompts import Template

SUFFIX_SHARE = 0.25
"""Share of the P0 budget given to the suffix (only used by fill-in-the-middle templates)."""


@dataclass(frozen=True)
class Layer:
    name: str
    source: str
    tokens: int
    truncated: bool
    text: str


@dataclass(frozen=True)
class Context:
    mode: Mode
    prompt: str
    prompt_tokens: int
    budget_tokens: int
    tokenizer: str
    prefix: str
    suffix: str
    layers: tuple[Layer, ...] = field(default_factory=tuple)


def build_context(
    snapshot: Snapshot,
    offset: int,
    counter: TokenCounter,
    template: Template,
    budget: int,
    mode: Mode | None = None,
) -> Context:
    """Assemble the prompt for the cursor at byte ``offset``; same input, same bytes out."""
    mode = mode or completion_mode(snapshot, offset)
    suffix_budget = int(budget * SUFFIX_SHARE) if template.fim else 0
    window = cursor_window(snapshot.data, offset, counter, budget - suffix_budget, suffix_budget)
    prompt = template.render(window.prefix, window.suffix)
    layer = Layer(
        name="P0 cursor window",
        source=f"{snapshot.uri}:{window.first_line + 1}",
        tokens=window.prefix_tokens + window.suffix_tokens,
        truncated=window.truncated,
        text=prompt,
    )
    return Context(
        mode=mode,
        prompt=prompt,
        prompt_tokens=counter.count(prompt),
        budget_tokens=budget,
        tokenizer=counter.name,
        prefix=window.prefix,
        suffix=window.suffix,
        layers=(layer,),
    )
