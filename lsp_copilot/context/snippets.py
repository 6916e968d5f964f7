"""P4: snippets similar to the code before the cursor, from open and recently edited files.

As Cody does: slide a window of lines over each candidate file, score each window by the
Jaccard similarity of its identifier set with the lines just above the cursor, keep the
best windows. Deterministic: ties break on file name and line.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

WINDOW_LINES = 16
STEP_LINES = 8
QUERY_LINES = 16
MIN_SCORE = 0.12
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


@dataclass(frozen=True)
class Snippet:
    name: str
    start_line: int
    text: str
    score: float


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text))


_WINDOWS: OrderedDict[str, list[tuple[int, str, frozenset[str]]]] = OrderedDict()


def _windows(text: str) -> list[tuple[int, str, frozenset[str]]]:
    """A document's line windows with their identifier sets, cached per text: the other
    open buffers rarely change between two completions."""
    cached = _WINDOWS.get(text)
    if cached is not None:
        _WINDOWS.move_to_end(text)
        return cached
    lines = text.splitlines(keepends=True)
    out = []
    for start in range(0, max(1, len(lines) - WINDOW_LINES + STEP_LINES), STEP_LINES):
        chunk = "".join(lines[start:start + WINDOW_LINES])
        words = _words(chunk)
        if words:
            out.append((start, chunk if chunk.endswith("\n") else chunk + "\n", words))
    _WINDOWS[text] = out
    while len(_WINDOWS) > 64:
        _WINDOWS.popitem(last=False)
    return out


def similar_snippets(
    query: str, documents: Iterable[tuple[str, str]], limit: int = 4
) -> list[Snippet]:
    """Best line windows of ``documents`` (name, text) by Jaccard similarity to ``query``."""
    target = _words("\n".join(query.splitlines()[-QUERY_LINES:]))
    if not target:
        return []
    found: list[Snippet] = []
    for name, text in documents:
        best: Snippet | None = None
        for start, chunk, words in _windows(text):
            score = len(words & target) / len(words | target)
            if score >= MIN_SCORE and (best is None or score > best.score):
                best = Snippet(name, start, chunk, score)
        if best is not None:
            found.append(best)
    found.sort(key=lambda s: (-round(s.score, 6), s.name, s.start_line))
    return found[:limit]
