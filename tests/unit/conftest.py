"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest

from lsp_copilot.tokens import TiktokenCounter, TokenCounters


@pytest.fixture(scope="session")
def token_counters() -> TokenCounters:
    """The session's token counters, as a server owns its own: the cl100k fallback's BPE
    ranks take a moment to load, so the tests share one."""
    return TokenCounters()


@pytest.fixture(scope="session")
def cl100k(token_counters: TokenCounters) -> TiktokenCounter:
    """The cl100k counter (the fallback for a tokenizer we cannot read)."""
    return token_counters.fallback()
