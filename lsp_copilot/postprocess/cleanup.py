"""Text cleanup of a final answer: the model's own indentation of the first line, trailing
whitespace, repetition (of itself, of the line above, of the suffix)."""

from __future__ import annotations

import itertools
import re

from lsp_copilot.language.trigger import Mode, is_word_char
from lsp_copilot.postprocess.cursor_text import Cursor, indent

MIN_REPEATED_LINE = 4
"""A line repeating the suffix or the line above counts only with this many characters."""
NGRAM_REPEATS = 4
"""A run of the same token group this many times over is degenerate repetition."""
JOINERS = (",", "and", "or", "&&", "||", "+", "-", "*", "/", "%", "|", "&", "^")
"""What joins the items of a line (a comma, `and`, `+`): a loop's copies end with one."""
WORD_PART = 3
"""A part of one word (``CALIBRATE_`` in ``_SLAM_CALIBRATE_CALIBRATE_CALIBRATE_``) this
long or longer, written three times in a row, is a loop inside the word."""
LONG_GROUP = (5, 24)
"""A group of this many tokens (a clause: `and not isinstance(o, (M, M))`) is a loop
already at three copies, or two and the start of a third: code never writes one three
times over."""


def reindent(text: str, cursor: Cursor) -> str:
    """The prompt ended before the cursor's last whitespace, so the model wrote it.

    Its first line's leading whitespace stands for that dropped part: take it off. When
    the model indented its first line more or less than the cursor is, shift the lines
    after it by the same amount, so its body keeps its shape under the cursor's block.
    """
    ws = cursor.prompt_dropped_indent
    kept = cursor.line_before[: len(cursor.line_before) - len(ws)]
    lines = text.split("\n")
    model = lines[0][: indent(lines[0])]
    lines[0] = lines[0][len(model):]
    if model != ws and not kept.strip():
        for i in range(1, len(lines)):
            if lines[i].startswith(kept + model):
                lines[i] = cursor.line_before + lines[i][len(kept + model):]
    return "\n".join(lines)


_JOINING = "=<>!+-*/%&|^@:"
"""Operator characters that make one token with the one before (``=`` + ``=``, ``*`` +
``*``, ``-`` + ``>``, ``:`` + ``=``)."""


def drop_word_continuation(text: str, cursor: Cursor) -> str:
    """The prompt ended before a space the user typed, and the model did not write that
    space: when it went on with the last word or operator (``num_tokens`` + ``_per_head
    = ...``), the text after the typed space would be broken code. No suggestion. After
    a comma or a bracket (``["saturday", `` + ``"sunday"]``) the space changes nothing."""
    typed = cursor.line_before[: len(cursor.line_before) - len(cursor.prompt_dropped_indent)]
    if not (cursor.prompt_dropped_indent and typed.strip() and text and not text[0].isspace()):
        return text
    last, first = typed[-1], text[0]
    word = is_word_char(last) and is_word_char(first)
    return "" if word or (last in _JOINING and first in _JOINING) else text


INVISIBLE = dict.fromkeys(map(ord, "\u061c\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c"
                                  "\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u2066\u2067"
                                  "\u2068\u2069\ufeff"))
"""Bidirectional controls and zero-width characters: in code they make text read other
than it runs (Trojan Source, CVE-2021-42574), and a model has no business writing them.
(A zero-width joiner inside an emoji sequence goes too: the emoji stays, split.)"""


def drop_invisible(text: str) -> str:
    """``text`` without :data:`INVISIBLE` characters."""
    return text.translate(INVISIBLE)


def trim(text: str) -> str:
    """No trailing spaces, no trailing blank lines; whitespace alone is no suggestion."""
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines) if any(line.strip() for line in lines) else ""


def _content(line: str) -> bool:
    return len(line.strip()) >= MIN_REPEATED_LINE and any(c.isalnum() for c in line)


_TOKEN = re.compile(r"\w+|[^\w\s]")


def repetition_start(line: str) -> int | None:
    """Where a line falls into repeating one token group (with a name in it: not a
    table of numbers) over and over, or a part of one word, or None."""
    tokens = [(m.start(), m.group()) for m in _TOKEN.finditer(line)]
    inside = next((pos + cut for pos, word in tokens if (cut := _word_loop(word)) is not None),
                  None)
    between = _group_loop(tokens)
    return min((c for c in (inside, between) if c is not None), default=None)


def _word_loop(word: str) -> int | None:
    """Where, in ``word``, the first copy of a part it repeats three times in a row ends
    (its trailing ``_`` dropped), or None. A run of one character (``"x" * 90`` written
    out, ``0000``) is a value, not a loop. The token loop cannot see these: a name or a
    string the model makes up by gluing the same part on (``"env_twin_env_twin_..."``)
    is one word to it."""
    if len(word) < 3 * WORD_PART:
        return None
    for start in range(len(word) - 3 * WORD_PART + 1):
        head = word[start:start + WORD_PART]
        second = word.find(head, start + WORD_PART)  # where a second copy may start
        while second >= 0 and 3 * (second - start) <= len(word) - start:
            size = second - start
            part = word[start:second]
            if (word[second:second + 2 * size] == part * 2 and len(set(part)) > 1
                    and any(c.isalpha() for c in part)):
                cut = second
                while cut > start + 1 and word[cut - 1] == "_":
                    cut -= 1
                return cut
            second = word.find(head, second + 1)
    return None


def _group_loop(tokens: list[tuple[int, str]]) -> int | None:
    """The token-group half of ``repetition_start``."""
    words = [t for _, t in tokens]
    depth, level = [], 0  # the bracket depth before each token
    for word in words:
        depth.append(level)
        level += (word in "([{") - (word in ")]}")
    for start in range(len(words)):
        for size in range(1, LONG_GROUP[1] + 1):
            if start + size >= len(words) or words[start + size] != words[start]:
                continue  # no second copy starts here (every loop has one)
            unit = words[start:start + size]
            if len(unit) < size or not any(w[0].isalpha() or w[0] == "_" for w in unit):
                continue
            repeats = 1
            while words[start + repeats * size:start + (repeats + 1) * size] == unit:
                repeats += 1
            rest = words[start + repeats * size:]
            if repeats >= NGRAM_REPEATS or (
                    size >= LONG_GROUP[0] and (repeats >= 3 or (
                        repeats == 2 and _starts_again(rest, unit)))):
                # Keep the first copy, up to where its item ends (`x and not` repeated
                # is `not x` repeated: the cut comes after the next `and`).
                cut = next((k for k in range(start + size, start + 2 * size)
                            if words[k - 1] in JOINERS and depth[k - 1] == depth[start]),
                           start + size)
                return tokens[cut][0]
    return None


def _starts_again(rest: list[str], unit: list[str]) -> bool:
    """``rest`` (the tokens after the copies, the line's last one maybe unfinished) starts
    another copy of ``unit``: its first 3 tokens, or 2 where the line ends."""
    third = rest[:3]
    if len(third) < 2 or (len(third) < 3 and len(rest) > len(third)):
        return False
    return third[:-1] == unit[:len(third) - 1] and (
        third[-1] == unit[len(third) - 1]
        or (len(rest) == len(third) and unit[len(third) - 1].startswith(third[-1])))


def drop_repetition(text: str) -> str:
    """Cut where the model starts looping: a line (or group of lines) repeated right
    after itself, or a token group repeated many times in a line."""
    lines = text.split("\n")
    for k in range(1, len(lines)):
        for period in (1, 2, 3):
            if k < period or k + period > len(lines):
                continue
            now = [x.strip() for x in lines[k:k + period]]
            before = [x.strip() for x in lines[k - period:k]]
            if now == before and any(_content(x) for x in now):
                return "\n".join(lines[:k])
    pos = 0
    for line in lines:
        cut = repetition_start(line)
        if cut is not None:
            return text[:pos + cut].rstrip()
        pos += len(line) + 1
    return text


def drop_repeats_of_neighbours(text: str, mode: Mode, cursor: Cursor) -> str:
    """Drop an answer that repeats the line above (at its indentation: one level out,
    ``return None`` after a block's ``return None`` is the next statement, not a loop);
    cut where it reaches the suffix."""
    first = (cursor.line_before + text.split("\n", 1)[0]).rstrip()
    if _content(first) and first == cursor.line_above.rstrip():
        return ""
    after = cursor.line_after.strip()
    if after and text.strip() == after:
        return ""  # the model only repeated what is already after the cursor
    if after and text.rstrip().endswith(after):
        text = text.rstrip()[: -len(after)]  # don't insert a second copy of the suffix
    following = next((x.strip() for x in cursor.suffix_lines.split("\n") if x.strip()), "")
    if mode == "single-line" and text.startswith("\n") and text.strip() == following:
        return ""  # a next line the file already has
    return cut_before_suffix(text, cursor)


def cut_before_suffix(text: str, cursor: Cursor) -> str:
    """A multi-line answer stops before it repeats the file below the cursor: at a line
    equal to the next code line, or at two lines in a row that the next few have in a row
    (a model that re-types the body it saw in the suffix)."""
    suffix = [x.strip() for x in cursor.suffix_lines.split("\n") if x.strip()]
    if not suffix or "\n" not in text:
        return text
    pairs = set(itertools.pairwise(suffix))
    lines = text.split("\n")
    for k in range(1, len(lines)):
        line = lines[k].strip()
        if not _content(line):
            continue
        pair = (line, lines[k + 1].strip()) if k + 1 < len(lines) else None
        if line == suffix[0] or pair in pairs:
            return "\n".join(lines[:k])
    return text
