"""P4: snippets similar to the code before the cursor, from this file, open buffers and
files of the repository near this one.

As Cody does for open files and RepoCoder for the repository: slide a window of lines
over each candidate file, score each window by the Jaccard similarity of its identifier
set with the lines just above the cursor, keep the best windows. Deterministic: ties
break on file name and line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

WINDOW_LINES = 16
STEP_LINES = 8
QUERY_LINES = 16
MIN_SCORE = 0.12
SHOWN_END = WINDOW_LINES // 2 + WINDOW_LINES
"""A snippet shows lines ``WINDOW_LINES // 2`` to this, from its window's start."""
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


@dataclass(frozen=True)
class Snippet:
    name: str
    start_line: int
    text: str
    score: float


def identifiers(text: str) -> frozenset[str]:
    """The identifiers of ``text`` (three characters or more)."""
    return frozenset(_WORD.findall(text))


Windows = tuple[tuple[int, str, frozenset[str]], ...]


def windows(text: str, chunk_words: Callable[[str], frozenset[str]]) -> Windows:
    """A document's line windows with their identifier sets (``chunk_words`` keeps them
    per window text: a document being edited keeps most of its windows' texts)."""
    lines = text.splitlines(keepends=True)
    out = []
    for start in range(0, max(1, len(lines) - WINDOW_LINES + STEP_LINES), STEP_LINES):
        chunk = "".join(lines[start:start + WINDOW_LINES])
        found = chunk_words(chunk)
        if found:
            out.append((start, chunk if chunk.endswith("\n") else chunk + "\n", found))
    return tuple(out)


def similar_snippets(
    query: str, documents: Iterable[tuple[str, str, Windows, range | None]], limit: int = 4
) -> list[Snippet]:
    """Best line window of each of ``documents`` (name, text, windows, lines to skip) by
    Jaccard similarity to the last lines of ``query``; at most ``limit``, best first.

    A snippet is its window's second half and the lines after it, as RepoCoder shows a
    retrieved window with its continuation: the lines like the query's are those the
    model already sees above the cursor; what followed them is what it may write next.
    Snippets that repeat a better one line for line are left out."""
    target = identifiers("\n".join(query.splitlines()[-QUERY_LINES:]))
    if not target:
        return []
    size = len(target)
    found: list[tuple[float, str, int, str]] = []
    for name, text, wins, skip in documents:
        best: tuple[float, int] | None = None
        for start, _chunk, words in wins:
            # Neither the lines matched nor those shown may be the ones to skip (the code
            # the query came from would match itself).
            if skip is not None and start + SHOWN_END > skip.start and start < skip.stop:
                continue
            common = len(words & target)
            score = common / (len(words) + size - common)
            if score >= MIN_SCORE and (best is None or score > best[0]):
                best = (score, start)
        if best is not None:
            found.append((best[0], name, best[1], text))
    found.sort(key=lambda f: (-round(f[0], 6), f[1], f[2]))
    out: list[Snippet] = []
    kept: set[str] = set()
    for score, name, start, text in found:
        first = start + WINDOW_LINES // 2
        lines = text.splitlines(keepends=True)[first:start + SHOWN_END]
        if content := [x for x in lines if x.strip()]:
            if sum(x in kept for x in content) >= 0.8 * len(content):
                continue
            kept.update(content)
            body = "".join(lines)
            out.append(Snippet(name, first, body if body.endswith("\n") else body + "\n", score))
            if len(out) == limit:
                break
    return out

