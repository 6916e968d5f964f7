"""Token counting by pieces must equal counting the whole text, for every tokenizer we cut."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_copilot.models.engine_tokenizer import engine_counter
from lsp_copilot.tokens import (
    HFTokenCounter,
    TiktokenCounter,
    TokenCounter,
    TokenCounters,
    count_by_pieces,
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


@pytest.fixture(scope="module")
def model_counter() -> TokenCounter:
    """The default model's tokenizer, when its folder is prepared."""
    counter = engine_counter(None)
    if not isinstance(counter, HFTokenCounter):
        pytest.skip("the default model is not prepared (lsp-copilot model prepare)")
    return counter


@pytest.fixture(params=["cl100k", "model"])
def counter(request: pytest.FixtureRequest) -> TokenCounter:
    """Each tokenizer we count by pieces: the fallback, and the default model's."""
    counter: TokenCounter = request.getfixturevalue(
        "cl100k" if request.param == "cl100k" else "model_counter")
    return counter


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # (counter: no state)
@given(parts=st.lists(st.sampled_from(PIECES), min_size=0, max_size=400))
def test_count_by_pieces_equals_whole_count(counter: TokenCounter, parts: list[str]) -> None:
    text = "".join(parts)
    assert count_by_pieces(lambda piece: _whole(counter, piece), text, 0) == _whole(counter, text)


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


def test_the_fallback_is_loaded_once_per_owner_not_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """TokenCounters loads cl100k on first use and shares it (a folder without a readable
    tokenizer gets it too); another owner (another server) loads its own."""
    from lsp_copilot import tokens

    built: list[object] = []

    class Counted(TiktokenCounter):
        def __init__(self) -> None:
            built.append(self)

    monkeypatch.setattr(tokens, "TiktokenCounter", Counted)
    counters = TokenCounters()
    assert built == []  # nothing loaded until asked
    first = counters.fallback()
    assert counters.fallback() is first and counters.for_model(str(tmp_path)) is first
    assert built == [first]
    assert TokenCounters().fallback() is not first and len(built) == 2


def test_the_server_engines_count_with_the_servers_counters() -> None:
    from lsp_copilot.server.app import create_server

    ls, other = create_server(), create_server()
    factories = [ls.main_engine._factory, ls._engine_manager()._factory]  # a route's too
    assert all(f.counters is ls.token_counters for f in factories)  # type: ignore[attr-defined]
    assert other.token_counters is not ls.token_counters
