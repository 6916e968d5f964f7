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


AVX2_FLAGS = frozenset({"fpu", "avx", "avx2", "fma", "f16c"})


@pytest.fixture(autouse=True)
def an_avx2_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every unit test sees the same CPU, whatever machine runs it: one whose class gives
    typing its own small model (AVX2 alone). Tests of the other classes set their own."""
    monkeypatch.setattr("lsp_copilot.engine.defaults.cpu_flags", lambda: set(AVX2_FLAGS))
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
