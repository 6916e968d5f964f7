"""Per-language knowledge: the query files and settings in ``grammars/<language>/``.

Queries use named captures (``@scope.function``, ``@name.definition.class``,
``@reference.call``, ``@import.module``...), so adding a language is adding a folder,
not code. The folder is found next to the package in a source checkout, or under the
installed data directory (``share/lsp-copilot/grammars``) in a wheel install.
"""

from __future__ import annotations

import json
import logging
import sys
import sysconfig
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import tree_sitter

from lsp_copilot.language.ids import ts_language

log = logging.getLogger(__name__)

# tree-sitter-language-pack grammar name -> grammars/ folder, where they differ.
_FOLDER = {"csharp": "c_sharp"}


def grammars_dir() -> Path | None:
    """Where ``grammars/`` is: source checkout first, then the installed data files."""
    here = Path(__file__).resolve().parent.parent.parent / "grammars"
    candidates = [here]
    for scheme_key in ("data",):
        candidates.append(Path(sysconfig.get_path(scheme_key)) / "share/lsp-copilot/grammars")
    candidates.append(Path(sys.prefix) / "share/lsp-copilot/grammars")
    for path in candidates:
        if (path / "python" / "symbols.scm").is_file():
            return path
    return None


def folder_for(grammar: str) -> str:
    return _FOLDER.get(grammar, grammar)


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

    def line_comment(self, text: str) -> str:
        return f"{self.comment} {text}"


def _only_references(language: tree_sitter.Language, source: str) -> tree_sitter.Query:
    query = tree_sitter.Query(language, source)
    data = source.encode()
    for i in range(query.pattern_count):
        text = data[query.start_byte_for_pattern(i):query.end_byte_for_pattern(i)]
        if b"@name.reference" not in text:
            query.disable_pattern(i)
    return query


@cache
def queries_for(grammar: str | None) -> LanguageQueries | None:
    """The compiled queries of ``grammar``, or None when there is no folder for it."""
    if grammar is None:
        return None
    root = grammars_dir()
    language = ts_language(grammar)
    if root is None or language is None:
        return None
    folder = root / folder_for(grammar)
    if not (folder / "symbols.scm").is_file():
        return None
    try:
        config = json.loads((folder / "language.json").read_text())
        symbols = (folder / "symbols.scm").read_text()
        return LanguageQueries(
            grammar=grammar,
            language=language,
            scope=tree_sitter.Query(language, (folder / "scope.scm").read_text()),
            symbols=tree_sitter.Query(language, symbols),
            references=_only_references(language, symbols),
            comment=config.get("comment", "//"),
            placeholder=config.get("placeholder", "..."),
            close=config.get("close", ""),
            resolver=config.get("resolver", ""),
        )
    except Exception as exc:  # a broken query file must not stop completions
        log.warning("cannot load queries for %s: %s", grammar, exc)
        return None


def supported() -> list[str]:
    """Grammar names with a query folder (pack names, e.g. ``csharp``)."""
    root = grammars_dir()
    if root is None:
        return []
    inverse = {v: k for k, v in _FOLDER.items()}
    return sorted(inverse.get(p.name, p.name) for p in root.iterdir()
                  if (p / "symbols.scm").is_file())
