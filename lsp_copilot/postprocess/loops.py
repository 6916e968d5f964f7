"""A model looping inside the line it writes, and the line closed where the loop began.

Small models lose track in a list of items and go on until the token limit: the same
group over and over (``ch, ch, ch, ...``), a part of one word (``"env_twin_env_twin_...``)
or keys that the list already has (``"gt": gt, "lt": lt, "ch": ch, "gt": ch, ...``). A
repeated key or keyword argument is never what the user meant (Python refuses a repeated
keyword; a repeated dict or object key overwrites the first), so the items before the
repeat are the answer: the line is cut there and the brackets this line opened are closed
(a header ended, a docstring's or a string's quote closed), which makes it whole where the
loop made it nothing. The generation stops as soon as the loop shows (see
``stop.stop_rule``), so the engine is free for the next keystroke.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lsp_copilot.language.folders import LanguageConfig
from lsp_copilot.postprocess.brackets import open_brackets, open_quote, open_triple_quote, scan
from lsp_copilot.postprocess.cleanup import JOINERS, repetition_start
from lsp_copilot.postprocess.cursor_text import Cursor, indent

_KEY = re.compile(r"""\s*(?:(?P<q>["'])(?P<s>[^"'\\\n]*)(?P=q)|(?P<n>[A-Za-z_]\w*))"""
                  r"""\s*(?::(?![:=])|=(?![=>]))""")
"""An item that starts with a key: ``"k":`` (dict, object), ``k:`` (object, annotated
parameter), ``k=`` (keyword argument); not ``::``, ``:=``, ``==`` or ``=>``."""

_KEYED = "({"
"""Brackets whose items have keys that must differ (not ``[``: ``a[i:j, i:k]`` slices)."""


def _drop_joiners(kept: str) -> str:
    """``kept`` without the joiners it ends with (what joined it to the loop's next copy)."""
    while True:
        kept = kept.rstrip()
        joiner = next((j for j in JOINERS if kept.endswith(j) and not (
            j[0].isalpha() and (kept[:-len(j)][-1:].isalnum() or kept[:-len(j)][-1:] == "_"))),
            None)
        if joiner is None:
            return kept
        kept = kept[:-len(joiner)]


@dataclass(frozen=True)
class Loop:
    """Where, in the answer's text, the loop starts (the repeated item, or the second copy
    of a repeated group) and where the evidence for it ends."""

    start: int
    seen: int


def _answer_line(text: str, cursor: Cursor) -> tuple[int, str]:
    """Where the answer's line starts in ``text``, and the typed part of that line: after
    a finished line, an answer that starts with a line break writes the next line."""
    before = cursor.line_before
    stripped = text.lstrip(" \t")
    if stripped.startswith("\n") and before.strip() and not open_brackets(before, cursor.rules):
        return len(text) - len(stripped) + 1, ""
    return 0, before


def _repeated_key(typed: str, answer: str, rules: LanguageConfig) -> Loop | None:
    """The first item of ``answer`` whose key an earlier item of the same bracket (typed
    on this line or written by the model) has; positions in ``answer``. An item starts
    right after its bracket's opener or a comma (strings and comments are passed over)."""
    line = typed + answer
    frames: list[tuple[str, set[str]]] = []
    openers = {b[0] for b in rules.brackets if len(b) == 2}
    for pos, ch in scan(line, rules, also=","):
        if ch in rules.closers:
            if frames and frames[-1][0] == rules.closers[ch]:
                frames.pop()
            continue
        if ch in openers:
            frames.append((ch, set()))
        if not frames or frames[-1][0] not in _KEYED:
            continue
        m = _KEY.match(line, pos + 1)
        if m is None:
            continue
        key = m.group("s") if m.group("q") else m.group("n")
        keys = frames[-1][1]
        if key in keys and pos + 1 >= len(typed):
            start = pos + 1 + len(m.group()) - len(m.group().lstrip())
            return Loop(start - len(typed), m.end() - len(typed))
        keys.add(key)
    return None


def find_loop(text: str, cursor: Cursor) -> Loop | None:
    """The loop in the line the answer writes, positions in ``text``; None without one.
    A repeated key counts in the brackets the line opens also where the model spread
    them over lines (one item per line)."""
    start, typed = _answer_line(text, cursor)
    found = _repeated_key(typed, text[start:], cursor.rules)
    line = text[start:].split("\n", 1)[0]
    group = repetition_start(line)
    if group is not None and (found is None or group < found.start):
        found = Loop(group, len(line))
    if found is None:
        return None
    return Loop(start + found.start, start + found.seen)


def close_at_loop(text: str, cursor: Cursor) -> str:
    """``text`` cut where its line starts looping, the brackets that line opened closed
    (without a trailing comma); unchanged without a loop. Where the file goes on after the
    cursor on its line, or below it deeper or with a closer, nothing is closed: those
    lines may close the brackets themselves."""
    loop = find_loop(text, cursor)
    if loop is None:
        return text
    start, typed = _answer_line(text, cursor)
    kept = text[:loop.start].rstrip()
    if len(kept) > start:
        kept = text[:start] + _drop_joiners(kept[start:])
    rules = cursor.rules
    following = next((x for x in cursor.suffix_lines.split("\n") if x.strip()), "")
    if (cursor.line_after.strip() or (following and (
            indent(following) > indent(cursor.line_before)
            or following.lstrip()[0] in rules.closers))):
        return kept
    quote = open_triple_quote(None, typed + kept[start:])
    if quote is not None:  # a docstring's text looping (`a job, a job, a job`)
        return kept + quote
    kept += open_quote(typed + kept[start:], rules)  # a string looping (`"ab_ab_ab_...`)
    opened = open_brackets(typed + kept[start:], rules)
    closer_of = {b[0]: b[1] for b in rules.brackets if len(b) == 2}
    closed = kept + "".join(closer_of[b] for b in reversed(opened))
    line = typed + closed[start:]
    if (rules.header_end and rules.compound_header and re.match(rules.compound_header, line)
            and not line.rstrip().endswith(rules.header_end)):
        closed += rules.header_end  # the loop was in a header (`if any(k in (a, b, b, b`)
    return closed
