"""Turn raw model text into what the editor should insert.

The rules run twice: while streaming (``stop_at``, so that generation stops as soon as
the answer is complete, freeing the engine) and once on the final text (``finalize``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lsp_copilot.context.trigger import Mode

MAX_LINES = 16


@dataclass(frozen=True)
class Cursor:
    """The text around the insertion point that the rules need."""

    line_before: str  # text of the cursor line before the cursor
    line_after: str  # text of the cursor line after the cursor
    prompt_dropped_indent: str = ""  # whitespace cut from the prompt's last line (see below)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _skip_leading_blank_lines(text: str, cursor: Cursor) -> str:
    """At the start of an empty line, a leading newline is the model saying 'blank line'."""
    if cursor.line_before.strip():
        return text
    while "\n" in text and not text.split("\n", 1)[0].strip():
        text = text.split("\n", 1)[1]
    return text


def stop_rule(mode: Mode, cursor: Cursor) -> Callable[[str], int | None]:
    """Where to cut the text generated so far, or None to keep streaming."""

    def single_line(text: str) -> int | None:
        body = _skip_leading_blank_lines(text, cursor)
        newline = body.find("\n")
        if newline < 0:
            return None
        return len(text) - len(body) + newline

    def multi_line(text: str) -> int | None:
        body = _skip_leading_blank_lines(text, cursor)
        skipped = len(text) - len(body)
        lines = body.split("\n")
        complete = lines[:-1]  # the last piece may still grow
        if not complete:
            return None
        if cursor.prompt_dropped_indent:
            first = complete[0]
            if first.strip() and _indent(first) < len(cursor.prompt_dropped_indent):
                return skipped  # the model left the cursor's block at once: nothing to add
        else:
            first = cursor.line_before + complete[0]
        base = _indent(first) if first.strip() else _indent(cursor.line_before)
        blank_run = 0
        pos = skipped + len(complete[0]) + 1
        for n, line in enumerate(complete[1:], start=1):
            if not line.strip():
                blank_run += 1
                if blank_run >= 2:
                    return pos - 1
            else:
                if _indent(line) < base or (blank_run and _indent(line) == base):
                    # Dedent: the block has ended. A blank line then a sibling: a new item.
                    return pos - 1
                blank_run = 0
            if n >= MAX_LINES:
                return pos - 1
            pos += len(line) + 1
        return None

    return single_line if mode == "single-line" else multi_line


def finalize(text: str, mode: Mode, cursor: Cursor) -> str:
    """Clean the final text; an empty string means 'no suggestion'."""
    if mode == "none":
        return ""
    cut = stop_rule(mode, cursor)(text + "\n")
    if cut is not None:
        text = text[:cut]
    text = _skip_leading_blank_lines(text, cursor)
    if cursor.prompt_dropped_indent:
        # The prompt ended at the line start, so the model wrote the indentation itself.
        ws = cursor.prompt_dropped_indent
        text = text[len(ws) :] if text.startswith(ws) else text.lstrip(" \t")
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    text = "\n".join(lines)
    if not text.strip():
        return ""
    after = cursor.line_after.strip()
    if after and text.strip() == after:
        return ""  # the model only repeated what is already after the cursor
    if after and text.rstrip().endswith(after):
        text = text.rstrip()[: -len(after)]  # don't insert a second copy of the suffix
    return text if text.strip() else ""
