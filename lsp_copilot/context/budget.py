"""Token counting with the model's own tokenizer, so budgets are exact for the model."""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


class HFTokenCounter:
    """``tokenizers`` on the model folder's tokenizer.json (no transformers import)."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(path))
        self.name = f"tokenizers:{path.parent.name}"
        self._count = functools.lru_cache(maxsize=4096)(self._count_uncached)

    def _count_uncached(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count(self, text: str) -> int:
        return self._count(text)


class ApproxTokenCounter:
    """Last resort when no tokenizer file is at hand (a hub id not yet downloaded)."""

    name = "approx:chars/3"

    def count(self, text: str) -> int:
        return (len(text) + 2) // 3


@functools.lru_cache(maxsize=8)
def token_counter(model_path: str) -> TokenCounter:
    path = Path(model_path) / "tokenizer.json"
    if path.is_file():
        try:
            return HFTokenCounter(path)
        except Exception:
            log.exception("cannot load %s; counting tokens approximately", path)
    return ApproxTokenCounter()
