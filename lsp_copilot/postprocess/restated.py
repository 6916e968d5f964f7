"""The answer starts by writing again what the user typed on the line.

The prompt ends before the space the user typed last (``prompt_dropped_indent``: a BPE
model carries a word's leading space in its token), and a small model sometimes reads the
typed keyword there as the end of the line above and writes the whole line afresh:
``let `` typed, `` let file = open(path)?;`` answered (``const ``, ``if ``, ``return ``
alike, measured on 2026 Rust and TypeScript with ``bench quality``). Inserted as it is,
the keyword stands twice and the line is broken, so the answer is shown from after its
copy. Only a copy of everything typed on the line, followed by a space, counts: code
never writes that twice in a row (``return return``, ``let let``).
"""

from __future__ import annotations

from lsp_copilot.postprocess.cursor_text import Cursor


def drop_restated_typing(text: str, cursor: Cursor) -> str:
    """``text`` without a leading copy of the line's typed part (its own leading
    whitespace kept, for the rules after it that read it); "" when the copy is all
    its first line holds."""
    typed = cursor.line_before.strip()
    if not typed or not cursor.prompt_dropped_indent:
        return text
    body = text.lstrip(" \t")
    rest = body[len(typed):]
    if not body.startswith(typed) or rest[:1] not in (" ", "\t", "\n", ""):
        return text
    if not rest.split("\n", 1)[0].strip():
        return ""  # the copy and nothing after it on the line
    return text[: len(text) - len(body)] + rest.lstrip(" \t")
