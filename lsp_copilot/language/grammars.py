"""Per-language knowledge: the compiled queries of ``grammars/<language>/``.

Queries use named captures (``@scope.function``, ``@name.definition.class``,
``@reference.call``, ``@import.module``...), so adding a language is adding a folder,
not code (``folders.py`` reads the files).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache

import tree_sitter

from lsp_copilot.language.folders import load_config, query_source
from lsp_copilot.language.ids import ts_language

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LanguageQueries:
    """Compiled queries and rendering hints for one grammar."""

    grammar: str
    language: tree_sitter.Language
    scope: tree_sitter.Query
    symbols: tree_sitter.Query
    references: tree_sitter.Query
    """``symbols`` with only the patterns that capture ``@name.reference...``: collecting
    the references near the cursor then skips matching definitions and imports."""
    comment: str
    placeholder: str
    close: str
    resolver: str


def _only_references(language: tree_sitter.Language, source: str) -> tree_sitter.Query:
    query = tree_sitter.Query(language, source)
    data = source.encode()
    for i in range(query.pattern_count):
        text = data[query.start_byte_for_pattern(i):query.end_byte_for_pattern(i)]
        if b"@name.reference" not in text:
            query.disable_pattern(i)
    return query


def compile_query(grammar: str, name: str) -> tree_sitter.Query | None:
    """Query ``name`` of ``grammar`` compiled, or None when it has none (raises on a
    broken file)."""
    language = ts_language(grammar)
    source = query_source(grammar, name) if language is not None else None
    return None if language is None or source is None else tree_sitter.Query(language, source)


@cache
def queries_for(grammar: str | None) -> LanguageQueries | None:
    """The compiled queries of ``grammar``, or None when there is no folder for it."""
    if grammar is None:
        return None
    language = ts_language(grammar)
    if language is None:
        return None
    try:
        symbols = query_source(grammar, "symbols")
        scope = query_source(grammar, "scope")
        if symbols is None or scope is None:
            return None
        config = load_config(grammar)
        return LanguageQueries(
            grammar=grammar,
            language=language,
            scope=tree_sitter.Query(language, scope),
            symbols=tree_sitter.Query(language, symbols),
            references=_only_references(language, symbols),
            comment=config.comment,
            placeholder=config.placeholder,
            close=config.close,
            resolver=config.resolver,
        )
    except Exception as exc:  # a broken query file must not stop completions
        log.warning("cannot load queries for %s: %s", grammar, exc)
        return None
