"""Where a hole is cut in real code: one rule for the line, one for the cut in it, one for
a block's body. The benches differ only in which lines they accept (``LineRule``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

BLOCK_MAX_LINES = 6
BLOCK_MAX_CHARS = 320


@dataclass(frozen=True)
class LineRule:
    """Lines a single-line hole may be cut in: code (not prose), neither tiny nor long,
    below the file's head (imports, licence)."""

    after_row: int  # rows up to this one (0-based) are the file's head
    max_chars: int
    prose: tuple[str, ...]  # a line starting so is a comment or a string's text
    min_chars: int = 20

    def candidates(self, lines: list[str]) -> list[int]:
        return [i for i, line in enumerate(lines)
                if self.min_chars <= len(line.strip()) <= self.max_chars
                and not line.strip().startswith(self.prose) and i > self.after_row]


def cut_column(line: str) -> int:
    """After the line's first token (its first space), else a third into it (at least
    one character): what the user has typed when the suggestion is asked for."""
    stripped = line.lstrip()
    return len(line) - len(stripped) + (stripped.find(" ") + 1 or max(1, len(stripped) // 3))


def pick_line(lines: list[str], rng: random.Random, rule: LineRule) -> tuple[int, int] | None:
    """(row, cut column) of a seeded choice among the rule's lines; None if there are none."""
    candidates = rule.candidates(lines)
    if not candidates:
        return None
    row = rng.choice(candidates)
    return row, cut_column(lines[row])


def indent_width(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def pick_block(lines: list[str], rng: random.Random, openers: tuple[str, ...],
               prose: tuple[str, ...], after_row: int) -> tuple[int, list[str], int] | None:
    """(opener row, body lines, first row after the body) of a seeded choice among the
    blocks whose opening line ends with one of ``openers``: small blocks that end cleanly
    (at a line as indented as the opener), without blank lines inside."""
    candidates = []
    for i, line in enumerate(lines[:-2]):
        head = line.rstrip()
        if i <= after_row or not head.endswith(openers) or head.lstrip().startswith(prose):
            continue
        base = indent_width(line)
        end = i + 1
        while end < len(lines) and lines[end].strip() and indent_width(lines[end]) > base:
            end += 1
        body = lines[i + 1:end]
        if (not body or len(body) > BLOCK_MAX_LINES or end >= len(lines)
                or (not lines[end].strip() and end + 1 < len(lines)
                    and indent_width(lines[end + 1]) > base)
                or sum(len(b) for b in body) > BLOCK_MAX_CHARS):
            continue
        candidates.append((i, body, end))
    if not candidates:
        return None
    return rng.choice(candidates)
