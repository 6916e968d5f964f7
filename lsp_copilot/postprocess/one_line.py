"""A statement the model spread over lines only for its brackets, offered on one line.

Small models copy the layout they saw last: after a call laid out one argument per line,
``self.items.append(`` comes back as an opener, the arguments on a line of their own and
the closer on a third, though the whole call fits on one line. Formatters (black, ruff,
prettier) put such a statement on one line whenever it fits the width, so that is where
the user would have written it, and it is the form a typing pause can show: the line being
typed ends whole. A statement that does not fit the file's width keeps the model's
layout. A docstring with one line of text comes as a one-line docstring for the same
reason (PEP 257's form for it).
"""

from __future__ import annotations

from lsp_copilot.postprocess.brackets import open_brackets, open_triple_quote
from lsp_copilot.postprocess.cursor_text import Cursor


def _joined(typed: str, lines: list[str], openers: str, closers: str) -> str:
    """``typed`` and ``lines`` as one line: no space inside brackets, one space elsewhere,
    and no trailing comma before a closer unless it makes a one-element tuple (``(x,)``).
    The typed part stays as it is."""
    out = typed + lines[0].rstrip() if lines[0].strip() else typed
    for piece in (line.strip() for line in lines[1:]):
        if not piece:
            continue
        if piece[0] in closers and out.endswith(","):
            out = _without_trailing_comma(out, openers, closers)
        glue = "" if out[-1:] in openers or out[-1:] in " \t" or piece[0] in closers else " "
        out += glue + piece
    return out


def _without_trailing_comma(text: str, openers: str, closers: str) -> str:
    """``text`` ends with a comma about to be closed: drop it, but keep ``(x,)``, a tuple
    of one (a ``(`` that no name or closer precedes, with no other item in it)."""
    depth = 0
    for pos in range(len(text) - 2, -1, -1):
        ch = text[pos]
        if ch in closers:
            depth += 1
        elif ch in openers:
            if depth == 0:
                before = text[:pos].rstrip()[-1:]
                call = before.isalnum() or before in ("_", *closers)
                return text[:-1] if ch != "(" or call else text
            depth -= 1
        elif ch == "," and depth == 0:
            return text[:-1]  # another item: the comma before the closer is layout
    return text


def join_spread_statement(text: str, cursor: Cursor) -> str:
    """``text`` with its first statement on one line where it fits ``cursor.line_width``
    (the cursor line's typed part included); the lines after that statement unchanged.
    Left as it is: a statement without brackets across lines, one with a comment, a
    string over lines or a backslash in it, and braces over lines in a language whose
    blocks are braces."""
    rules = cursor.rules
    if not rules.brackets or cursor.line_after.strip():
        return text
    start, lead = cursor.line_before, 0
    stripped = text.lstrip(" \t")
    if stripped.startswith("\n") and start.strip() and not open_brackets(start, rules):
        # The typed line is finished: the answer's statement is the next line.
        lead = len(text) - len(stripped) + 1
        start = ""
    lines = text[lead:].split("\n")
    logical = start + lines[0]
    if len(lines) < 2 or not open_brackets(logical, rules):
        return text
    end = 0
    for end in range(1, len(lines)):
        logical += "\n" + lines[end]
        if not open_brackets(logical, rules):
            break
    else:
        return text  # it does not close within the answer
    part = lines[: end + 1]
    if rules.close and any(line.rstrip().endswith("{") for line in (start + part[0], *part)):
        return text  # a block's braces (or a literal: no telling them apart by text)
    if any((rules.comment and rules.comment in line) or line.rstrip().endswith("\\")
           or open_triple_quote(None, line) is not None or '"""' in line or "'''" in line
           for line in part):
        return text
    openers = "".join(b[0] for b in rules.brackets if len(b) == 2)
    closers = "".join(rules.closers)
    joined = _joined(start, part, openers, closers)
    if len(joined) > cursor.line_width:
        return text
    rest = lines[end + 1:]
    return text[:lead] + joined[len(start):] + "".join("\n" + line for line in rest)


def join_docstring(text: str, cursor: Cursor) -> str:
    """``text`` with the docstring it starts with on one line (``\"\"\"Summary.\"\"\"``)
    where its text is one line and fits the file's width. PEP 257 writes a one-line
    docstring so, and a typing pause can only show it so: an opening quote alone on its
    line is never whole. A docstring with more lines of text keeps its layout."""
    start, lead = cursor.line_before, 0
    stripped = text.lstrip(" \t")
    if stripped.startswith("\n") and start.strip():
        lead, start = len(text) - len(stripped) + 1, ""  # the next line after a finished one
    elif start.strip():
        return text  # only a docstring that starts a line of its own
    lines = text[lead:].split("\n")
    first = start + lines[0]
    quote = first.strip()[:3]
    if quote not in ('"""', "'''") or open_triple_quote(None, first) != quote:
        return text
    words = [first.strip()[3:].strip()]
    for end in range(1, len(lines)):
        line = lines[end]
        if quote in line:
            if line.strip() != quote and not line.strip().endswith(quote):
                return text  # text after the closing quote
            words.append(line.strip()[:-3].strip())
            break
        words.append(line.strip())
    else:
        return text  # it does not close within the answer
    said = [w for w in words if w]
    if len(said) != 1 or quote in said[0]:
        return text
    joined = first[: len(first) - len(first.lstrip(" \t"))] + quote + said[0] + quote
    if len(joined) > cursor.line_width:
        return text
    rest = lines[end + 1:]
    return text[:lead] + joined[len(start):] + "".join("\n" + line for line in rest)
