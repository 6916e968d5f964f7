"""Token counting by pieces must equal counting the whole text, for every tokenizer we cut."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_copilot.cli.audit import engine_counter
from lsp_copilot.tokens import (
    HFTokenCounter,
    TokenCounter,
    count_by_pieces,
    fallback_counter,
)

# Characters that decide pre-token boundaries: newlines, spaces, tabs, CR, letters (ASCII
# and not), digits, quotes (contractions), punctuation, a special token's text.
PIECES = ["\n", "\n\n", " ", "  ", "\t", "\r\n", "\r", "a", "Z", "é", "中", "7", "123",
          "'s", "'", "(", ")", ":", "#", "{", "}", ".", "<file_sep>", "def", " x", "\u2028",
          "\x0c", "\xa0"]


def _whole(counter: TokenCounter, text: str) -> int:
    if isinstance(counter, HFTokenCounter):
        return len(counter._tok.encode(text, add_special_tokens=False).ids)
    return len(counter._enc.encode(text, disallowed_special=()))  # type: ignore[attr-defined]


def _counters() -> list[TokenCounter]:
    out: list[TokenCounter] = [fallback_counter()]
    model = engine_counter(None)
    if isinstance(model, HFTokenCounter):
        out.append(model)
    return out


@pytest.mark.parametrize("counter", _counters(), ids=lambda c: c.name)
@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(PIECES), min_size=0, max_size=400))
def test_count_by_pieces_equals_whole_count(counter: TokenCounter, parts: list[str]) -> None:
    text = "".join(parts)
    assert count_by_pieces(lambda piece: _whole(counter, piece), text, 0) == _whole(counter, text)


@pytest.mark.parametrize("counter", _counters(), ids=lambda c: c.name)
def test_count_by_pieces_on_real_code(counter: TokenCounter) -> None:
    source = Path(__file__).read_text("utf-8") + Path(json.__file__).read_text("utf-8")
    for start in range(0, len(source) - 3000, 997):
        text = source[start:start + 3000]
        assert counter.count(text) == _whole(counter, text)


def test_tokenizers_not_cut_unless_their_shape_is_known(tmp_path: Path) -> None:
    """A Metaspace (sentencepiece-style) tokenizer prepends a space to each piece: cutting
    would miscount, so it is counted whole."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    assert HFTokenCounter(path).segmented is False
