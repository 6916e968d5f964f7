"""Open documents: text as UTF-8 bytes, LSP position conversion, incremental syntax trees."""

from __future__ import annotations

from lsp_copilot.documents.buffer import Buffer, ByteEdit, Encoding, PositionError
from lsp_copilot.documents.store import DocumentError, DocumentStore, Snapshot
from lsp_copilot.documents.tree import SyntaxTree
from lsp_copilot.language.ids import (
    available_grammars,
    language_for,
    language_id_for_path,
    parser_for,
    ts_language,
)

__all__ = [
    "Buffer",
    "ByteEdit",
    "DocumentError",
    "DocumentStore",
    "Encoding",
    "PositionError",
    "Snapshot",
    "SyntaxTree",
    "available_grammars",
    "language_for",
    "language_id_for_path",
    "parser_for",
    "ts_language",
]
