"""What post-processing needs to know about a language, from its ``language.json``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache

from lsp_copilot.language.grammars import folder_for, grammars_dir

BLOCK_HEADERS = (":", "{", " do", " then", "->")
"""Line endings that open a block whose body must follow (``(``/``[`` only continue)."""


@dataclass(frozen=True)
class LanguageRules:
    """What the rules need to know about a language (from its ``language.json``)."""

    blocks: frozenset[str] = frozenset()
    brackets: tuple[str, ...] = ("()", "[]", "{}")
    quotes: tuple[str, ...] = ('"', "'")
    comment: str = ""
    closers: dict[str, str] = field(default_factory=dict)  # closer -> opener
    placeholder: str = ""  # a statement that stands for an elided body (`...`)
    close: str = ""  # what ends a block (`}`, `end`), empty for indentation


@cache
def rules_for(grammar: str | None) -> LanguageRules:
    """The grammar's rules; languages without a folder get brackets and quotes only."""
    config: dict[str, object] = {}
    root = grammars_dir()
    if grammar is not None and root is not None:
        path = root / folder_for(grammar) / "language.json"
        try:
            config = json.loads(path.read_text())
        except (OSError, ValueError):
            config = {}
    brackets = tuple(str(b) for b in config.get("brackets", ["()", "[]", "{}"]))  # type: ignore[attr-defined]
    return LanguageRules(
        blocks=frozenset(str(b) for b in config.get("blocks", [])),  # type: ignore[attr-defined]
        brackets=brackets,
        quotes=tuple(str(q) for q in config.get("quotes", ['"', "'"])),  # type: ignore[attr-defined]
        comment=str(config.get("comment", "")),
        closers={b[1]: b[0] for b in brackets if len(b) == 2},
        placeholder=str(config.get("placeholder", "")),
        close=str(config.get("close", "")),
    )
