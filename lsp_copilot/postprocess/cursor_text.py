"""The text around the insertion point, as the post-processing rules read it."""

from __future__ import annotations

from dataclasses import dataclass, field

from lsp_copilot.language.folders import LanguageConfig


@dataclass(frozen=True)
class Cursor:
    """The text around the insertion point that the rules need."""

    line_before: str  # text of the cursor line before the cursor
    line_after: str  # text of the cursor line after the cursor
    prompt_dropped_indent: str = ""  # whitespace the prompt ends before (the model writes it)
    line_above: str = ""  # the nearest non-blank line above the cursor line
    suffix_lines: str = ""  # a few lines after the cursor line
    # The lines the prompt names its files with (``# pkg/mod.py``): prompt structure that a
    # small model may write back as if it were code.
    prompt_headers: frozenset[str] = frozenset()
    # The language's brackets, quotes and comment marker: where a statement that spans
    # lines (``raise E(`` then its arguments) ends.
    rules: LanguageConfig = field(default_factory=LanguageConfig)
    # The widest a line of this file may be (its longest line, 79 to 100): a statement
    # the model spread over lines is put on one line when it fits (``one_line``).
    line_width: int = 88
    # The brackets the lines above leave open at the cursor line (a call, a signature or
    # a list spread over lines, innermost last): on the line after its last item, a
    # closer (`)`, `] = None,`) closes one of them.
    open_above: tuple[str, ...] = ()


def indent(line: str) -> int:
    """The width of ``line``'s leading spaces and tabs."""
    return len(line) - len(line.lstrip(" \t"))
