"""P0: the cursor window (prefix and suffix), anchored so the engine's prefix cache hits.

A window that slides with every keystroke never shares a block-aligned prefix with the
previous prompt. So the window starts at a line that is a multiple of ``ANCHOR_LINES``
and only moves, by whole anchors, when the prefix outgrows the budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from lsp_copilot.tokens import TokenCounter

ANCHOR_LINES = 16
SUFFIX_MAX_LINES = 200


@dataclass(frozen=True)
class Window:
    prefix: str
    suffix: str
    prefix_tokens: int
    suffix_tokens: int
    first_line: int
    truncated: bool


class _LineStarts:
    """Start offsets of lines before ``end``, found backwards and only as far as asked:
    the window reads a few hundred lines of a file that may have tens of thousands."""

    def __init__(self, data: bytes, end: int) -> None:
        self._data = data
        self.cursor_line = data.count(b"\n", 0, end)
        self._known = {self.cursor_line: data.rfind(b"\n", 0, end) + 1}
        self._lowest = self.cursor_line

    def __getitem__(self, line: int) -> int:
        while self._lowest > line:
            start = self._known[self._lowest]
            self._lowest -= 1
            self._known[self._lowest] = self._data.rfind(b"\n", 0, start - 1) + 1
        return self._known[line]


def _suffix_text(data: bytes, offset: int) -> str:
    """The text after ``offset`` up to its ``SUFFIX_MAX_LINES``-th newline: the rest of a big
    file would be decoded and split on every build for nothing."""
    pos = offset - 1
    for _ in range(SUFFIX_MAX_LINES):
        pos = data.find(b"\n", pos + 1)
        if pos < 0:
            return data[offset:].decode("utf-8", "replace")
    return data[offset:pos + 1].decode("utf-8", "replace")


def cursor_window(
    data: bytes, offset: int, counter: TokenCounter, prefix_budget: int, suffix_budget: int
) -> Window:
    """Largest anchored prefix within ``prefix_budget`` tokens, and a suffix of whole lines."""
    starts = _LineStarts(data, offset)
    cursor_line = starts.cursor_line
    # Count anchor chunks backwards from the cursor's chunk; stop before the budget breaks.
    first_anchor = (cursor_line // ANCHOR_LINES) * ANCHOR_LINES
    tokens = counter.count(data[starts[first_anchor] : offset].decode("utf-8", "replace"))
    first = first_anchor
    while tokens > prefix_budget and first < cursor_line:
        # Even the cursor's chunk is too big: drop whole lines from its top.
        first += 1
        tokens = counter.count(data[starts[first] : offset].decode("utf-8", "replace"))
    while first >= ANCHOR_LINES and first % ANCHOR_LINES == 0:
        start = first - ANCHOR_LINES
        chunk = data[starts[start] : starts[first]].decode("utf-8", "replace")
        more = counter.count(chunk)
        if tokens + more > prefix_budget:
            break
        tokens += more
        first = start
    prefix = data[starts[first] : offset].decode("utf-8", "replace")
    if tokens > prefix_budget:  # a single line longer than the budget: keep its tail
        keep = len(prefix)
        while keep > 0 and counter.count(prefix[-keep:]) > prefix_budget:
            keep = keep * 3 // 4
        prefix = prefix[-keep:] if keep else ""
        tokens = counter.count(prefix)
    suffix_lines: list[str] = []
    suffix_tokens = 0
    rest = _suffix_text(data, offset) if suffix_budget > 0 else ""  # a line costs >= 1 token
    for line in rest.splitlines(keepends=True)[:SUFFIX_MAX_LINES]:
        n = counter.count(line)
        if suffix_tokens + n > suffix_budget:
            break
        suffix_lines.append(line)
        suffix_tokens += n
    return Window(
        prefix=prefix,
        suffix="".join(suffix_lines),
        prefix_tokens=tokens,
        suffix_tokens=suffix_tokens,
        first_line=first,
        truncated=first > 0,
    )
