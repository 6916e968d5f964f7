"""The baseline the context engine is judged against: the text before the cursor alone."""

from __future__ import annotations

from typing import Any

from lsp_copilot.context.builder import Context, Layer
from lsp_copilot.documents.store import Snapshot
from lsp_copilot.language.trigger import Mode
from lsp_copilot.prompts.templates import Template
from lsp_copilot.tokens import TokenCounter


def prefix_only(data: bytes, offset: int, counter: TokenCounter, budget: int) -> str:
    """As many whole lines before the cursor as fit in ``budget`` tokens."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    prompt = data[line_start:offset].decode("utf-8", "replace")
    pos = line_start
    # Grow by blocks of lines, then line by line, so counting stays cheap.
    while pos > 0:
        start = pos
        for _ in range(8):
            start = data.rfind(b"\n", 0, max(0, start - 1)) + 1
            if start == 0:
                break
        candidate = data[start:offset].decode("utf-8", "replace")
        if counter.count(candidate) <= budget:
            prompt, pos = candidate, start
            continue
        while pos > 0:
            start = data.rfind(b"\n", 0, pos - 1) + 1
            candidate = data[start:offset].decode("utf-8", "replace")
            if counter.count(candidate) > budget:
                break
            prompt, pos = candidate, start
        break
    return prompt


def prefix_only_context(snapshot: Snapshot, offset: int, counter: TokenCounter,
                        template: Template, budget: int, mode: Mode | None = None,
                        **_: Any) -> Context:
    """``build_context``'s stand-in for the baseline: the prefix-only text in the
    template, as many tokens as ``budget`` holds."""
    overhead = counter.count(template.render("", "")) if template.fim else 0
    prefix = prefix_only(snapshot.data, offset, counter, budget - overhead)
    pieces = template.pieces(prefix, "")
    prompt = "".join(pieces)
    tokens = counter.count(prompt)
    return Context(mode or "single-line", prompt, tokens, budget, counter.name, prefix, "",
                   (Layer("P0 cursor window", snapshot.uri, tokens, False, prefix),), pieces)
