"""P2's first blocks: the call sites of the function being written.

Writing a function's header or body, the user knows how the rest of the code calls it;
the model does not, unless the prompt shows it: the callers' arguments (their keywords
above all) name the parameters, in their order. Found by name through the index (which
files call a name), read from the open buffer or from disk, at most one per file.
"""

from __future__ import annotations

import re

from lsp_copilot.context.index.workspace_index import FAMILIES
from lsp_copilot.context.layers.blocks import Block
from lsp_copilot.context.layers.layer_inputs import LayerInputs
from lsp_copilot.language.folders import language_config

MAX_SITES = 3
MAX_FILES = 8  # files read looking for them
MAX_CALL_LINES = 8
HEADER_LOOKBACK = 80
"""Lines above the cursor searched for the header of the function being written."""
CLOSERS = (")", "]", "}")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def function_being_written(text_before: str, header: re.Pattern[str]) -> tuple[str, int] | None:
    """The name of the function whose header or body holds the end of ``text_before``
    (the document up to the cursor), and its header's row; None outside a function.

    Walks up from the cursor line: a header less indented than everything met so far is
    the one; a less indented line of another kind is an enclosing block (the search goes
    on from its indentation), and one at the left margin ends the search. At a line's
    start, the nearest line with code above stands for the cursor's. Works on a header
    still being typed, which the parser does not yet see as a definition."""
    rows = text_before.split("\n")
    last = len(rows) - 1
    cursor_line = rows[last]
    if header.match(cursor_line):
        match = header.match(cursor_line)
        assert match is not None
        return match.group(1), last
    limit = _indent(cursor_line) if cursor_line.strip() else len(cursor_line)
    for row in range(last - 1, max(-1, last - HEADER_LOOKBACK), -1):
        line = rows[row]
        if not line.strip():
            continue
        if not limit:  # at a line's start (where a prompt's base is cut): the line above
            limit = _indent(line) + 1  # says where the cursor is
        if _indent(line) >= limit:
            continue
        match = header.match(line)
        if match:
            return match.group(1), row
        if line.lstrip().startswith(CLOSERS):
            continue  # the end of a signature over lines (``) -> None:``)
        limit = _indent(line)
        if limit == 0:
            return None
    return None


def _call_at(lines: list[str], row: int) -> str:
    """The call that starts on ``row``: its lines up to the one that closes its brackets."""
    depth, out = 0, []
    for line in lines[row:row + MAX_CALL_LINES]:
        out.append(line)
        depth += sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")
        if depth <= 0:
            break
    return "\n".join(out) + "\n"


def _site(text: str, call: re.Pattern[str], header: re.Pattern[str],
          skip: range) -> tuple[int, str] | None:
    """The first call in ``text`` outside the rows of ``skip``: its row and its lines."""
    if call.search(text) is None:
        return None
    lines = text.split("\n")
    for row, line in enumerate(lines):
        if row in skip or not call.search(line) or header.match(line):
            continue
        return row, _call_at(lines, row)
    return None


def _callers(r: LayerInputs, name: str) -> list[str]:
    """Other files of this language family that call ``name`` (a call in another language
    is not one of this function)."""
    if r.index is None:
        return []
    family = FAMILIES.get(r.q.grammar, r.q.grammar)
    out = []
    for rel in r.index.callers(name):
        entry = r.index.file(rel)
        if rel != r.rel and entry is not None and FAMILIES.get(
                entry.grammar, entry.grammar) == family:
            out.append(rel)
    return out


def candidates(r: LayerInputs, first_line: int) -> list[Block]:
    """Up to ``MAX_SITES`` call sites of the function at the cursor: other files first
    (they call it from outside, with keywords), then this file out of the window."""
    pattern = language_config(r.q.grammar).function_header
    if not pattern:
        return []
    header = re.compile(pattern)
    # Up to the prompt's base (a line start): the layers stay the same while a line is
    # typed (the engine's prefix cache), so a header typed on this line counts from the
    # next one.
    found = function_being_written(r.data[:r.offset].decode("utf-8", "replace"), header)
    if found is None:
        return []
    name, header_row = found
    # A function at the left margin is called by its name alone; a method (or a nested
    # function) also as ``obj.name(``. Calls of a method of the same name elsewhere
    # (``seen.add(x)`` for a function ``add``) are not this function's.
    at_margin = not r.data.split(b"\n", header_row + 1)[header_row][:1].isspace()
    before = r"(?<![\w$.])" if at_margin else r"(?<![\w$])"
    call = re.compile(before + re.escape(name) + r"\s*\(")
    sources: list[tuple[str, str, range]] = []
    if r.index is not None:
        open_texts: dict[str, str] = {}
        if r.workspace is not None:
            for uri, buffer in r.documents():
                rel = r.workspace.relative(uri)
                if rel is not None:
                    open_texts[rel] = buffer
        for rel in _callers(r, name)[:MAX_FILES]:
            text = open_texts.get(rel) or r.cache.layers.disk_windows(r.index, rel)[0]
            sources.append((rel, text, range(0)))
    own = r.data.decode("utf-8", "replace")
    sources.append((r.path, own, range(min(first_line, header_row), r.cursor_row + 1)))
    blocks: list[Block] = []
    for rel, text, skip in sources[:MAX_FILES + 1]:
        site = _site(text, call, header, skip)
        if site is not None:
            blocks.append(Block(rel, site[0], site[1]))
            if len(blocks) == MAX_SITES:
                break
    return blocks
