"""`bench context`'s audit across requests: where the context tokens go.

One prompt's composition (``lsp-copilot context``) says little about the budget split;
over many prompts it says which layers fill their share, which are cut, and what the
summaries save: a definition too long to show whole is shown as its summary (or, in an
outline, its signature), and the saving is counted against the full definition's text.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from lsp_copilot.context.index.workspace_index import WorkspaceIndex
from lsp_copilot.context.result import Context
from lsp_copilot.tokens import TokenCounter

SUMMARY_LAYERS = ("P2", "P3")
"""Layers made of definitions from the index (P1 is the cursor's own scopes, P4 snippets)."""


@dataclass
class LayerAudit:
    """Collects over builds; ``report()`` gives the figures."""

    index: WorkspaceIndex
    counter: TokenCounter
    builds: int = 0
    tokens: dict[str, list[int]] = field(default_factory=dict)
    cut: dict[str, int] = field(default_factory=dict)
    summaries: int = 0
    summary_tokens: int = 0
    full_tokens: int = 0
    _rows: dict[str, list[str]] = field(default_factory=dict)

    def add(self, ctx: Context) -> None:
        self.builds += 1
        present = {layer.name: layer for layer in ctx.layers}
        for name in {*self.tokens, *present}:
            layer = present.get(name)
            self.tokens.setdefault(name, [0] * (self.builds - 1)).append(
                layer.tokens if layer else 0)
            self.cut[name] = self.cut.get(name, 0) + (1 if layer and layer.truncated else 0)
        for layer in ctx.layers:
            if layer.name.split(" ", 1)[0] in SUMMARY_LAYERS:
                self._summaries(layer.source, layer.text)

    def _summaries(self, sources: str, text: str) -> None:
        for source in sources.split(", "):
            path, _, line = source.rpartition(":")
            entry = self.index.file(path)
            if entry is None or not line.isdigit():
                continue
            row = int(line) - 1
            for d in entry.symbols.definitions:
                if d.start_line != row or (d.full and d.full in text):
                    continue
                shown = d.summary if d.summary in text else (
                    d.signature if d.signature in text else None)
                if shown is None:
                    continue
                lines = self._lines(path)
                full = "\n".join(lines[d.start_line:d.end_line + 1]) + "\n"
                full_tokens = self.counter.count(full)
                shown_tokens = self.counter.count(shown)
                if full_tokens > shown_tokens:
                    self.summaries += 1
                    self.summary_tokens += shown_tokens
                    self.full_tokens += full_tokens
                break

    def _lines(self, path: str) -> list[str]:
        if path not in self._rows:
            try:
                text = (self.index.root / path).read_text("utf-8", "replace")
            except OSError:
                text = ""
            self._rows[path] = text.split("\n")
        return self._rows[path]

    def report(self) -> dict[str, Any]:
        layers = {}
        for name in sorted(self.tokens):
            values = self.tokens[name] + [0] * (self.builds - len(self.tokens[name]))
            layers[name] = {
                "mean_tokens": round(statistics.mean(values), 1) if values else 0,
                "present": sum(1 for v in values if v),
                "cut": self.cut.get(name, 0),
                "cut_share": round(self.cut.get(name, 0) / self.builds, 3) if self.builds else 0,
            }
        return {
            "builds": self.builds,
            "layers": layers,
            "summaries": self.summaries,
            "summary_tokens": self.summary_tokens,
            "full_definition_tokens": self.full_tokens,
            "summary_saving": round(1 - self.summary_tokens / self.full_tokens, 3)
            if self.full_tokens else None,
        }
