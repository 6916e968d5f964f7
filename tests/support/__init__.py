"""Helpers shared by the tests: fakes, LSP helpers."""
