"""Brackets and quotes in an answer: cut at a closer that closes nothing (or what the
suffix closes), and at what the token limit left open."""

from __future__ import annotations

import re

from lsp_copilot.language.folders import LanguageConfig
from lsp_copilot.language.trigger import BLOCK_OPENERS, Mode
from lsp_copilot.postprocess.cursor_text import Cursor


def open_triple_quote(quote: str | None, line: str) -> str | None:
    """The triple quote left open after ``line`` (Python, Kotlin, Swift docstrings and
    text blocks), given the one open before it."""
    pos = 0
    while True:
        if quote is None:
            found = [(i, q) for q in ('"""', "'''") if (i := line.find(q, pos)) >= 0]
            if not found:
                return None
            pos, quote = min(found)
        else:
            end = line.find(quote, pos)
            if end < 0:
                return quote
            pos, quote = end, None
        pos += 3


def scan(text: str, rules: LanguageConfig, also: str = "") -> list[tuple[int, str]]:
    """Bracket characters of ``text`` (and those in ``also``, such as the comma between
    items) with their positions, outside strings and comments."""
    return _scan_with_quote(text, rules, also)[0]


def _scan_with_quote(text: str, rules: LanguageConfig, also: str = ""
                     ) -> tuple[list[tuple[int, str]], str]:
    """``scan``, and the quote still open at the end of ``text``."""
    out: list[tuple[int, str]] = []
    quote = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote or ch == "\n":
                quote = ""
        elif rules.comment and text.startswith(rules.comment, i):
            end = text.find("\n", i)
            if end < 0:
                break
            i = end
            continue
        elif ch in rules.quotes:
            quote = ch
        elif ch in rules.closers or ch in also or any(b[0] == ch for b in rules.brackets):
            out.append((i, ch))
        i += 1
    return out, quote


def open_brackets(text: str, rules: LanguageConfig) -> list[str]:
    """The brackets ``text`` leaves open, innermost last (strings and comments skipped)."""
    stack: list[str] = []
    for _, ch in scan(text, rules):
        if ch in rules.closers:
            if stack and stack[-1] == rules.closers[ch]:
                stack.pop()
        else:
            stack.append(ch)
    return stack


def _unmatched_closers(text: str, rules: LanguageConfig) -> int:
    depth = closers = 0
    for _, ch in scan(text, rules):
        if ch in rules.closers:
            if depth:
                depth -= 1
            else:
                closers += 1
        else:
            depth += 1
    return closers


def balance(text: str, mode: Mode, cursor: Cursor, rules: LanguageConfig) -> str:
    """Cut at a closing bracket that closes nothing, or that the suffix already has.

    The next line after a finished one may close what lines above opened (``}`` of a
    dict): only the syntax check, which sees the whole buffer, can judge it."""
    if mode == "single-line" and text.lstrip(" \t").startswith("\n"):
        return text
    before = cursor.line_before
    if mode == "multi-line":
        before = cursor.line_above + "\n" + before
        suffix = cursor.line_after + "\n" + cursor.suffix_lines
        # The closers the following lines start with (a block's `}`, a call's `)`).
        head = re.match(r"[\s" + re.escape("".join(rules.closers)) + r"]*", suffix)
        suffix_closers = sum(1 for c in (head.group() if head else "") if c in rules.closers)
    else:
        suffix_closers = _unmatched_closers(cursor.line_after, rules)
    outer = open_brackets(before, rules)
    may_close = max(0, len(outer) - suffix_closers)
    inner: list[str] = []
    for pos, ch in scan(text, rules):
        if ch not in rules.closers:
            inner.append(ch)
        elif inner:
            if inner[-1] != rules.closers[ch]:
                return text[:pos].rstrip()  # a mismatched closer: the model lost track
            inner.pop()
        elif outer and outer[-1] == rules.closers[ch] and may_close > 0:
            outer.pop()
            may_close -= 1
        else:
            return text[:pos].rstrip()  # closes nothing, or what the suffix closes
    return text


def drop_unfinished_tail(text: str, rules: LanguageConfig) -> str:
    """A multi-line answer the token limit cut mid-statement: keep it up to the last line
    where its brackets are balanced, without a trailing line that opens an empty block."""
    depth = 0
    balanced_end = -1
    newlines = [(i, "\n") for i, ch in enumerate(text) if ch == "\n"]
    for pos, ch in sorted(scan(text, rules) + newlines):
        if ch == "\n":
            if depth == 0:
                balanced_end = pos
        elif ch in rules.closers:
            depth = max(0, depth - 1)
        else:
            depth += 1
    if depth > 0 and balanced_end > 0:
        text = text[:balanced_end]
    lines = text.split("\n")
    while len(lines) > 1 and lines[-1].rstrip().endswith(BLOCK_OPENERS):
        lines.pop()
    return "\n".join(lines) if depth > 0 else text


def drop_unfinished_answer(text: str, rules: LanguageConfig, truncated: bool) -> str:
    """A multi-line answer the token limit cut inside its first statement (an open
    bracket or string with no balanced line to keep, often a repetition run to the limit)
    is no suggestion: it would leave the file broken. A deadline's cut is not this: the
    generation goes on, and the rest comes as the user types."""
    if not truncated:
        return text
    brackets, quote = _scan_with_quote(text, rules)
    depth = 0
    for _, ch in brackets:
        depth = max(0, depth - 1) if ch in rules.closers else depth + 1
    return "" if depth or quote or open_triple_quote(None, text) else text
