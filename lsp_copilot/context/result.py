"""What a context build answers: the prompt, its layers and their token counts."""

from __future__ import annotations

from dataclasses import dataclass, field

from lsp_copilot.language.trigger import Mode

LAYER_NAMES = {
    "P0": "P0 cursor window",
    "P1": "P1 enclosing scope",
    "P2": "P2 referenced definitions",
    "P3": "P3 imported symbols",
    "P4": "P4 similar snippets",
}


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
    # The prompt as the template's pieces (text and control tokens): what the engine's
    # token ids are built from; "".join(pieces) == prompt.
    pieces: tuple[str, ...] = ()
    cursor: int = -1  # where the cursor stands in ``prompt`` (-1: at its end)
    headers: frozenset[str] = frozenset()  # the comment lines naming files (``# a/b.py``)
    redacted: tuple[str, ...] = ()  # secrets replaced by placeholders: "path:line kind"
    base_lines: int = 0  # the cursor's 0-based line where the window's prefix ends

    def at_cursor(self) -> tuple[str, str]:
        """The prompt before and after the cursor (a keystroke changes the first only)."""
        cut = len(self.prompt) if self.cursor < 0 else self.cursor
        return self.prompt[:cut], self.prompt[cut:]
