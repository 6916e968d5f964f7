"""The text of one document as UTF-8 bytes, with line indexes for position conversion.

Editors speak in (line, character) positions whose character unit is negotiated
(UTF-16 by default); tree-sitter speaks in byte offsets and (row, byte column)
points. This module is the one place where one becomes the other, so the rest of
the server only ever sees byte offsets.

Rules, chosen to follow the LSP specification and to never crash on odd input:

* "\\n", "\\r\\n" and "\\r" all end a line. A document has one more line than it
  has line breaks, so "a\\n" has two lines (the last one empty).
* A character past the end of a line clamps to the end of that line (before its
  line break), as the specification says.
* A line one past the last line with character 0 (``line == line_count``) means
  the end of the document: some clients send it for "up to the end of the file".
  Any other position beyond the last line, and any negative number, raises
  :class:`PositionError`.
* A character that points into the middle of a character (a UTF-16 unit between
  the halves of a surrogate pair, a UTF-8 byte inside a multi-byte sequence)
  snaps back to the start of that character.
* Lone surrogates in the text are kept (encoded with ``surrogatepass``) and count
  as one UTF-16 unit, one code point, three bytes.
* Tree-sitter points count rows by "\\n" only (that is what tree-sitter itself
  does), so :meth:`Buffer.point` differs from :meth:`Buffer.position` for
  documents with lone "\\r" line breaks.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Encoding = Literal["utf-8", "utf-16", "utf-32"]

_CODEC = "surrogatepass"
_Scanner = Callable[[bytes, int, int], list[int]]
_NL = 0x0A
# How surrogatepass encodes a lone surrogate (U+D800..U+DFFF) in UTF-8.
_LONE_SURROGATE = re.compile(rb"\xed[\xa0-\xbf]")
_CR = 0x0D


class PositionError(ValueError):
    """A position or offset that does not lie inside the document."""


@dataclass(frozen=True)
class ByteEdit:
    """One edit in the coordinates ``tree_sitter.Tree.edit()`` expects."""

    start_byte: int
    old_end_byte: int
    new_end_byte: int
    start_point: tuple[int, int]
    old_end_point: tuple[int, int]
    new_end_point: tuple[int, int]


def encode(text: str) -> bytes:
    """UTF-8 that survives lone surrogates (they can arrive from JSON)."""
    return text.encode("utf-8", _CODEC)


def decode(data: bytes) -> str:
    return data.decode("utf-8", _CODEC)


def units(chunk: bytes, encoding: Encoding) -> int:
    """How many position units (an LSP ``character`` count) the bytes of one line take."""
    if encoding == "utf-8" or chunk.isascii():
        return len(chunk)
    text = decode(chunk)
    return len(text) if encoding == "utf-32" else len(text.encode("utf-16-le", _CODEC)) // 2


def _is_continuation(byte: int) -> bool:
    return 0x80 <= byte <= 0xBF


def _line_break_starts(data: bytes, lo: int, hi: int) -> list[int]:
    """Offsets q in [lo, hi] where a line starts after a \\n, \\r\\n or lone \\r.

    Whether q starts a line depends only on data[q-1] and data[q], which is what
    lets :meth:`Buffer.replace` recompute a small window and shift the rest.
    """
    out: list[int] = []
    q = max(lo, 1)
    n = len(data)
    hi = min(hi, n)
    # Candidates are the offsets just after a \n or \r; find them with C-speed scans.
    for sep in (b"\n", b"\r"):
        i = data.find(sep, q - 1, hi)
        while i != -1:
            p = i + 1
            if sep == b"\n" or p >= n or data[p] != _NL:
                out.append(p)
            i = data.find(sep, p, hi)
    out.sort()
    return out


def _newline_starts(data: bytes, lo: int, hi: int) -> list[int]:
    """Offsets q in [lo, hi] just after a \\n: tree-sitter's row starts."""
    out: list[int] = []
    q = max(lo, 1)
    hi = min(hi, len(data))
    i = data.find(b"\n", q - 1, hi)
    while i != -1:
        out.append(i + 1)
        i = data.find(b"\n", i + 1, hi)
    return out


class _Starts:
    """Sorted line-start offsets, where a shift of the tail may be pending.

    ``self[i]`` is ``base[i] + delta`` for ``i >= pivot``, else ``base[i]``. A keystroke
    that adds or removes no line break only moves the starts after it: it updates
    ``delta`` in O(1) instead of building a new list of every later line. The base list
    is never mutated, so copies can share it.
    """

    __slots__ = ("_base", "_delta", "_pivot")

    def __init__(self, base: list[int], pivot: int = 0, delta: int = 0) -> None:
        self._base = base
        self._pivot = pivot if delta else len(base)
        self._delta = delta

    def __len__(self) -> int:
        return len(self._base)

    def __getitem__(self, i: int) -> int:
        if i < 0:
            i += len(self._base)
        value = self._base[i]
        return value + self._delta if i >= self._pivot else value

    def bisect_right(self, x: int, lo: int = 0) -> int:
        base, pivot = self._base, self._pivot
        i = bisect_right(base, x, lo, max(lo, pivot))
        if i < pivot:
            return i
        return bisect_right(base, x - self._delta, max(lo, pivot))

    def flat(self) -> list[int]:
        if self._pivot >= len(self._base):
            return self._base
        base, pivot, delta = self._base, self._pivot, self._delta
        return base[:pivot] + [p + delta for p in base[pivot:]]

    def edit(self, data: bytes, start: int, old_end: int, new_end: int, delta: int,
             scan: _Scanner) -> _Starts:
        """The starts after replacing [start, old_end) with new_end - start bytes: keep the
        head, rescan the window, shift the tail."""
        head = max(1, self.bisect_right(start - 1))  # starts < start (and 0) stay
        tail = self.bisect_right(old_end)  # starts > old_end just move by delta
        window = scan(data, start, new_end)
        if len(window) == tail - head and all(
                window[k] == self[head + k] for k in range(len(window))):
            # No line break added or removed: only the tail moves.
            if not delta:
                return self
            if self._pivot >= len(self._base):
                return _Starts(self._base, tail, delta)
            if tail == self._pivot:
                return _Starts(self._base, tail, self._delta + delta)
        flat = self.flat()
        moved = [p + delta for p in flat[tail:]] if delta else flat[tail:]
        return _Starts(flat[:head] + window + moved)


class Buffer:
    """Mutable document text kept as UTF-8 bytes plus two line-start indexes.

    ``_lines`` holds the byte offset of every LSP line start (after \\n, \\r\\n or
    \\r); ``_rows`` holds those of tree-sitter rows (after \\n only). Both begin
    with 0. An edit recomputes the window it touched and shifts the tail (lazily, see
    :class:`_Starts`), so a keystroke costs neither a rescan of the text nor a new list.
    """

    __slots__ = ("_data", "_lines", "_rows", "_text")

    def __init__(self, text: str) -> None:
        self._data = encode(text)
        self._text: str | None = text
        self._lines = _Starts([0, *_line_break_starts(self._data, 0, len(self._data))])
        self._rows = _Starts([0, *_newline_starts(self._data, 0, len(self._data))])

    def copy(self) -> Buffer:
        """An independent buffer, to apply a batch of edits all-or-nothing.

        O(1): the indexes are never mutated in place (an edit builds new ones),
        so the copy can share them until one of the two is edited.
        """
        other = Buffer.__new__(Buffer)
        other._data = self._data
        other._text = self._text
        other._lines = self._lines
        other._rows = self._rows
        return other

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = decode(self._data)
        return self._text

    @property
    def data(self) -> bytes:
        return self._data

    @property
    def line_count(self) -> int:
        return len(self._lines)

    def __len__(self) -> int:
        return len(self._data)

    # -- lines ---------------------------------------------------------------

    def _line_end(self, line: int) -> int:
        """Byte offset of the end of ``line``, before its line break."""
        if line + 1 >= len(self._lines):
            return len(self._data)
        end = self._lines[line + 1] - 1
        if self._data[end] == _NL and end > self._lines[line] and self._data[end - 1] == _CR:
            end -= 1
        return end

    def line_range(self, line: int) -> tuple[int, int]:
        """Byte offsets of the start and end (before the line break) of ``line``."""
        if not 0 <= line < len(self._lines):
            raise PositionError(f"line {line} is not in the document ({self.line_count} lines)")
        return self._lines[line], self._line_end(line)

    def _snap(self, offset: int) -> int:
        """Move an offset inside a multi-byte character back to its start."""
        data = self._data
        while 0 < offset < len(data) and _is_continuation(data[offset]):
            offset -= 1
        return offset

    # -- conversions -----------------------------------------------------------

    def offset(self, line: int, character: int, encoding: Encoding = "utf-16") -> int:
        """Byte offset of an LSP position; see the module docstring for the rules."""
        if line < 0 or character < 0:
            raise PositionError(f"position {line}:{character} has a negative component")
        if line >= len(self._lines):
            if line == len(self._lines) and character == 0:
                return len(self._data)
            raise PositionError(
                f"position {line}:{character} is past the end of the document "
                f"({self.line_count} lines)"
            )
        start = self._lines[line]
        end = self._line_end(line)
        if encoding == "utf-8":
            return self._snap(min(start + character, end))
        chunk = self._data[start:end]
        if chunk.isascii():
            return start + min(character, end - start)
        text = decode(chunk)
        if encoding == "utf-32":
            return start + len(encode(text[:character]))
        if encoding != "utf-16":
            raise ValueError(f"unknown position encoding {encoding!r}")
        if not _LONE_SURROGATE.search(chunk):
            # C-speed path: a high surrogate left at the end of the prefix can only be
            # the first half of a pair the position splits, so drop it.
            prefix = text.encode("utf-16-le")[: 2 * character]
            if prefix and 0xD8 <= prefix[-1] <= 0xDB:
                prefix = prefix[:-2]
            return start + len(prefix.decode("utf-16-le").encode("utf-8"))
        units = 0
        index = 0
        for ch in text:
            units += 2 if ord(ch) > 0xFFFF else 1
            if units > character:
                break
            index += 1
        return start + len(encode(text[:index]))

    def position(self, offset: int, encoding: Encoding = "utf-16") -> tuple[int, int]:
        """LSP (line, character) of a byte offset; the inverse of :meth:`offset`."""
        self._check_offset(offset)
        offset = self._snap(offset)
        line = self._lines.bisect_right(offset) - 1
        start = self._lines[line]
        offset = min(offset, self._line_end(line))  # inside a \r\n: end of the line
        if encoding == "utf-8":
            return line, offset - start
        chunk = self._data[start:offset]
        if chunk.isascii():
            return line, offset - start
        text = decode(chunk)
        if encoding == "utf-32":
            return line, len(text)
        if encoding != "utf-16":
            raise ValueError(f"unknown position encoding {encoding!r}")
        return line, len(text.encode("utf-16-le", _CODEC)) // 2

    def point(self, offset: int) -> tuple[int, int]:
        """Tree-sitter (row, byte column) of a byte offset (rows end at \\n only)."""
        self._check_offset(offset)
        row = self._rows.bisect_right(offset) - 1
        return row, offset - self._rows[row]

    def _check_offset(self, offset: int) -> None:
        if not 0 <= offset <= len(self._data):
            raise PositionError(
                f"offset {offset} is outside the document ({len(self._data)} bytes)"
            )

    # -- editing ---------------------------------------------------------------

    def replace(self, start: int, end: int, new_text: str) -> ByteEdit:
        """Replace bytes [start, end) with ``new_text`` and keep the indexes current."""
        self._check_offset(start)
        self._check_offset(end)
        if start > end:
            raise PositionError(f"edit range {start}..{end} ends before it starts")
        for edge in (start, end):
            if edge < len(self._data) and _is_continuation(self._data[edge]):
                raise PositionError(f"offset {edge} is inside a multi-byte character")
        new = encode(new_text)
        start_point = self.point(start)
        old_end_point = self.point(end)

        data = self._data[:start] + new + self._data[end:]
        new_end = start + len(new)
        delta = new_end - end
        self._data = data
        self._text = None
        # A start at q depends on bytes q-1 and q: starts in [start, new_end] may
        # change (a \r now followed by \n, ...); starts after old `end` only shift.
        self._lines = self._lines.edit(data, start, end, new_end, delta, _line_break_starts)
        self._rows = self._rows.edit(data, start, end, new_end, delta, _newline_starts)
        return ByteEdit(
            start_byte=start,
            old_end_byte=end,
            new_end_byte=new_end,
            start_point=start_point,
            old_end_point=old_end_point,
            new_end_point=self.point(new_end),
        )
