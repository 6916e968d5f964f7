"""P1-P4 for one build: each layer's candidates are made once, then filled (and filled
again with more room) without showing a line another layer already shows."""

from __future__ import annotations

from lsp_copilot.context.layers import definitions, imported, snippets
from lsp_copilot.context.layers.blocks import Block, Filled, fill
from lsp_copilot.context.layers.layer_inputs import LayerInputs
from lsp_copilot.context.layers.scopes import enclosing_scopes, render_scopes

KEYS = ("P1", "P2", "P3", "P4")


class Layers:
    """The extra layers of one build and what they already show."""

    def __init__(self, inputs: LayerInputs) -> None:
        self.inputs = inputs
        self.chain = enclosing_scopes(inputs.q, inputs.tree, inputs.data, inputs.offset)
        self.used: set[tuple[str, int]] = set()
        self._candidates: dict[object, list[Block]] = {}  # per layer: a refill reuses them

    def fill(self, key: str, first_line: int, first_byte: int, allowance: int) -> Filled:
        """Layer ``key`` within ``allowance`` tokens, for a window starting at
        ``first_line`` (byte ``first_byte``)."""
        if key == "P1":
            return self._p1(first_line, first_byte, allowance)
        # P2 depends on the window (what it shows is left out); P3 and P4 on the cursor.
        memo = (key, first_line) if key == "P2" else key
        if memo not in self._candidates:
            r = self.inputs
            self._candidates[memo] = (
                definitions.candidates(r, first_line) if key == "P2"
                else imported.candidates(r) if key == "P3"
                else snippets.candidates(r, first_line))
        fresh = [b for b in self._candidates[memo] if (b.path, b.line) not in self.used]
        filled = fill(self.inputs.q, self.inputs.counter, fresh, allowance)
        self.used.update((b.path, b.line) for b in filled.blocks)
        return filled

    def release(self, filled: Filled) -> None:
        """Let the blocks of ``filled`` be shown again (the layer is filled anew)."""
        for b in filled.blocks:
            self.used.discard((b.path, b.line))

    def release_own_file(self) -> None:
        """Forget what this file's own lines showed (the window moved)."""
        self.used = {u for u in self.used if u[0] != self.inputs.path}

    def _p1(self, first_line: int, first_byte: int, allowance: int) -> Filled:
        """The chain of enclosing scopes (layers/scopes.py), as one block."""
        r = self.inputs
        header = r.counter.count(f"{r.q.comment} {r.path}\n")
        rendered = render_scopes(r.q, r.counter, r.data, self.chain, r.symbols, r.offset,
                                 first_line, first_byte, allowance - header)
        if rendered is None:
            return Filled()
        filled = fill(r.q, r.counter, [Block(r.path, rendered.first_row, rendered.text)],
                      allowance)
        filled.truncated = filled.truncated or rendered.truncated
        if filled.blocks:
            self.used.update((r.path, row) for row in rendered.starts)
        return filled
