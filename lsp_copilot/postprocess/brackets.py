"""Brackets and quotes in an answer: cut at a closer that closes nothing (or what the
suffix closes), and at what the token limit left open; the closers right of the cursor
that an answer writes again (``covered``)."""

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


def open_quote(text: str, rules: LanguageConfig) -> str:
    """The one-line string's quote ``text`` leaves open, or ""."""
    return _scan_with_quote(text, rules)[1]


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


ABOVE_LINES = 60
"""How far up ``open_above`` reads at most for the statement the cursor line is in."""
ABOVE_BYTES = 8192
"""... and how many bytes of it (a minified file's one line is not read on every key)."""


def open_above(above: str, rules: LanguageConfig) -> tuple[str, ...]:
    """The brackets that ``above`` (the text before the cursor line) leaves open, innermost
    last. It is read from its last line that starts at column 0 (a statement's first
    line), at most ``ABOVE_LINES`` up, docstrings passed over. A block's brace (``{`` where
    ``}`` ends blocks) is not counted: a lone closer there ends a body, not a statement.
    Text, not the tree (``whole._inside_brackets`` asks the tree only whether): the lines
    above are often a signature still being typed, which the parser turns into ERROR
    nodes, and the answer's closer must match which bracket is open."""
    lines = above.split("\n")[-ABOVE_LINES:]
    start = max((i for i, line in enumerate(lines)
                 if line[:1].strip() and line[:1] not in rules.closers), default=0)
    code: list[str] = []
    quote: str | None = None
    for line in lines[start:]:
        inside, quote = quote, open_triple_quote(quote, line)
        if inside is None and quote is None:
            code.append(line)
    stack = open_brackets("\n".join(code), rules)
    if rules.close == "}":
        stack = [b for b in stack if b != "{"]
    return tuple(stack)


def _leading_closers(text: str, rules: LanguageConfig, skip: str = "") -> int:
    """The closers ``text`` starts with (but those in ``skip``), whitespace between them
    passed over."""
    head = re.match(r"[\s" + re.escape("".join(rules.closers)) + r"]*", text)
    return sum(1 for c in (head.group() if head else "") if c in rules.closers and c not in skip)


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


def _unpaired(text: str, quote: str, rules: LanguageConfig) -> str:
    """The closers and the closing quote in ``text`` that close what was open before it
    (``quote``: the string the cursor is in), in order."""
    out = ""
    if quote:
        i = 0
        while i < len(text) and text[i] not in (quote, "\n"):
            i += 2 if text[i] == "\\" else 1
        if i >= len(text) or text[i] != quote:
            return ""
        out, text = quote, text[i + 1:]
    depth = 0
    for _, ch in scan(text, rules):
        if ch not in rules.closers:
            depth += 1
        elif depth:
            depth -= 1
        else:
            out += ch
    return out


def covered(text: str, cursor: Cursor, rules: LanguageConfig) -> int:
    """How many characters right of the cursor the answer writes again: the closers and
    quotes an editor put there as the user typed their openers (``foo(|)`` answered
    ``x, y)``, ``print("|")`` answered ``hi")``). The suggestion takes them over, so
    that accepting it leaves one ``)``, and it may go on past them (``a) + 1``). Only a
    run of closers and quotes right at the cursor counts, and only when the answer's own
    unpaired closers are that run, or begin with it (then they close more)."""
    right = cursor.line_after
    end = 0
    while end < len(right) and (right[end] in rules.closers or right[end] in rules.quotes):
        end += 1
    if not end or not text:
        return 0
    unpaired = _unpaired(text, open_quote(cursor.line_before, rules), rules)
    run = right[:end]
    if unpaired and run.startswith(unpaired):
        return len(unpaired)
    return end if unpaired.startswith(run) else 0


def balance(text: str, mode: Mode, cursor: Cursor, rules: LanguageConfig) -> str:
    """Cut at a closing bracket that closes nothing, or that the suffix already has (but
    the closers the answer takes over, see ``covered``).

    The next line after a finished one may close what lines above opened (``}`` of a
    dict): only the syntax check, which sees the whole buffer, can judge it."""
    if mode == "single-line" and text.lstrip(" \t").startswith("\n"):
        return text
    before = cursor.line_before
    after = cursor.line_after[covered(text, cursor, rules):]
    if _scan_with_quote(before, rules)[1]:
        # The cursor is in a string (an f-string's `{json.`): the answer's brackets are
        # read from outside it here; the whole check parses the line instead.
        return text
    if mode == "multi-line":
        before = cursor.line_above + "\n" + before
        # The closers the following lines start with (a block's `}`, a call's `)`).
        suffix_closers = _leading_closers(after + "\n" + cursor.suffix_lines, rules)
    elif cursor.open_above and not after.strip():
        # A line inside brackets the lines above opened (after an argument of a call
        # spread over lines): the answer may close them, unless the lines below do.
        before = "".join(cursor.open_above) + before
        suffix_closers = _leading_closers(cursor.suffix_lines, rules, skip=rules.close)
    else:
        suffix_closers = _unmatched_closers(after, rules)
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
