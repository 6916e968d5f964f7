"""Thin LSP handlers: take a snapshot, call the logic, convert the result."""
