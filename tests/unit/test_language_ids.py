"""Which grammar parses a document, from its LSP languageId or its path (language/ids.py)."""

from __future__ import annotations

import pytest

from lsp_copilot.language.ids import (
    available_grammars,
    language_for,
    language_id_for_path,
    parser_for,
)


@pytest.mark.parametrize(
    ("language_id", "grammar"),
    [
        ("python", "python"),
        ("javascript", "javascript"),
        ("javascriptreact", "javascript"),
        ("typescript", "typescript"),
        ("typescriptreact", "tsx"),
        ("go", "go"),
        ("rust", "rust"),
        ("java", "java"),
        ("c", "c"),
        ("cpp", "cpp"),
        ("csharp", "csharp"),
        ("ruby", "ruby"),
        ("php", "php"),
        ("shellscript", "bash"),
        ("lua", "lua"),
        ("kotlin", "kotlin"),
        ("json", "json"),
        ("jsonc", "json"),
        ("yaml", "yaml"),
        ("markdown", "markdown"),
        ("cobol", None),
        ("no-such-language", None),
    ],
)
def test_language_for_ids(language_id: str, grammar: str | None) -> None:
    assert language_for(language_id, None) == grammar


@pytest.mark.parametrize(
    ("path", "grammar"),
    [
        ("/x/a.py", "python"),
        ("/x/a.TSX", "tsx"),
        ("/x/a.ts", "typescript"),
        ("/x/a.hpp", "cpp"),
        ("/x/a.cs", "csharp"),
        ("/x/Dockerfile", "dockerfile"),
        ("/x/a.cob", None),
        ("/x/README", None),
    ],
)
def test_language_for_paths(path: str, grammar: str | None) -> None:
    assert language_for(None, path) == grammar


def test_language_id_for_path() -> None:
    assert language_id_for_path("a/b.py") == "python"
    assert language_id_for_path("a/b.tsx") == "typescriptreact"
    assert language_id_for_path("a/b.sh") == "shellscript"
    assert language_id_for_path("a/Makefile") == "makefile"
    assert language_id_for_path("a/b.unknownext") == "plaintext"
    assert language_id_for_path("a/noext") == "plaintext"


def test_parsers() -> None:
    p = parser_for("python")
    assert p is not None
    assert p.parse(b"x = 1\n").root_node.type == "module"
    assert parser_for("python") is not p  # a parser holds state: each caller gets its own
    assert parser_for("no-such-grammar") is None
    assert parser_for("cobol") is None
    grammars = available_grammars()
    assert "python" in grammars
    assert "tsx" in grammars
    assert "cobol" not in grammars
