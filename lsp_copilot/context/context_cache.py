"""What context builds keep for the next ones: the prompt bases, the same-file symbols
(with the thread that refreshes them) and the layers' reads of the index. The workspace
owns one, so it lives and dies with the workspace, and each test gets a fresh one."""

from __future__ import annotations

from collections import OrderedDict

from lsp_copilot.context.index.same_file import SameFileSymbols
from lsp_copilot.context.layers.layer_cache import LayerCache
from lsp_copilot.context.result import Context

MAX_BASES = 8

Base = tuple[int, bytes, bytes, Context]
"""(start, text before it, text after the cursor line when it was decided, context)."""


class ContextCache:
    def __init__(self) -> None:
        self.symbols = SameFileSymbols()
        self.layers = LayerCache()
        self._bases: OrderedDict[tuple[object, ...], Base] = OrderedDict()

    def base(self, key: tuple[object, ...]) -> Base | None:
        """The last base decided for a document and the build's parameters."""
        return self._bases.get(key)

    def keep_base(self, key: tuple[object, ...], base: Base) -> None:
        self._bases[key] = base
        while len(self._bases) > MAX_BASES:
            self._bases.pop(next(iter(self._bases)))
