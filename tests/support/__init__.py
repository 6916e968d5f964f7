"""Helpers shared by the tests (and only here): fakes and clocks, LSP client helpers,
pollers, pipeline set-up, small local model files, the fake and real vLLM servers."""
