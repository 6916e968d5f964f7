"""The editor ``bench typing`` types into: VS Code's default auto-closing, as a model.

The buffer is ``left`` (up to the cursor) + ``right`` (what the editor put right of the
cursor: every character of it was auto-inserted, since the typist only appends). With
``autoclose`` on (VS Code's defaults):

- an opener ``( [ {`` inserts its pair, cursor between, when the next character is
  whitespace, the end of the buffer, or one of ``;:.,=}])>``;
- a quote (``"`` ``'``, and `````` in JavaScript/TypeScript) does the same when not inside a
  string and the character before is not a word character;
- a closer or quote equal to the next (auto-inserted) character moves over it: no text
  change (the caller still asks for a completion at the new position, as VS Code does);
- Enter between an empty pair (``{|}``) gives the inner line one level deeper and puts
  the closer on a line of its own below, at the outer indentation;
- backspace inside an empty pair deletes both;
- a ``move`` key (the user going to the closer Enter pushed below) replaces the
  whitespace up to that closer with the intended whitespace (no change when they are
  equal) and puts the cursor past the closer.

With ``autoclose`` off every key is a plain insertion or deletion at the cursor.

Doubled closer (``doubled_closer``): accept a suggestion as the editor does (its text
replacing the item's range) and take the buffer's line where the insertion starts, up to
its end. Count the closers in it that close nothing opened earlier on that line (outside
strings). The pause has a doubled closer when that count is larger than for the line the
user would get with nothing auto-inserted right of the cursor (the typed part of the
line + the suggestion's first line): the suggestion wrote a closer the editor had
already put there.
"""

from __future__ import annotations

from dataclasses import dataclass

OPENERS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = frozenset(OPENERS.values())
CLOSE_BEFORE = frozenset(";:.,=}])>")


def quotes_for(language: str) -> str:
    """The quotes VS Code pairs in ``language``."""
    return "\"'`" if language in ("typescript", "javascript", "typescriptreact",
                                  "javascriptreact") else "\"'"


@dataclass(frozen=True)
class Change:
    """Replace ``[start, end)`` of the buffer before the change (offsets in characters)."""

    start: int
    end: int
    text: str


def utf16_position(text: str, offset: int) -> tuple[int, int]:
    """(line, character) of ``offset`` in ``text``, the character in UTF-16 code units."""
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return line, len(text[start:offset].encode("utf-16-le")) // 2


def utf16_offset(text: str, line: int, character: int) -> int:
    """The offset in ``text`` of an LSP position (UTF-16 character)."""
    start = 0
    for _ in range(line):
        nxt = text.find("\n", start)
        if nxt < 0:
            return len(text)
        start = nxt + 1
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    units = 0
    for i in range(start, end):
        if units >= character:
            return i
        units += 2 if ord(text[i]) > 0xFFFF else 1
    return end


def _outside_strings(line: str, quotes: str) -> tuple[str, str]:
    """The characters of ``line`` outside its strings, and the quote still open at its
    end ("" when none)."""
    code: list[str] = []
    open_quote = ""
    escaped = False
    for ch in line:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif open_quote:
            if ch == open_quote:
                open_quote = ""
        elif ch in quotes:
            open_quote = ch
        else:
            code.append(ch)
    return "".join(code), open_quote


def in_string(line: str, quotes: str) -> bool:
    """Whether the end of ``line`` is inside a string opened on it."""
    return bool(_outside_strings(line, quotes)[1])


def unmatched_closers(line: str, quotes: str) -> int:
    """Closers of ``line`` that close nothing opened before them on it (outside strings)."""
    depth = 0
    unmatched = 0
    for ch in _outside_strings(line, quotes)[0]:
        if ch in OPENERS:
            depth += 1
        elif ch in CLOSERS:
            if depth:
                depth -= 1
            else:
                unmatched += 1
    return unmatched


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


class Editor:
    """One document's buffer and cursor, changed key by key as an editor would."""

    def __init__(self, text: str, language: str, autoclose: bool, unit: str = "    ",
                 below: str = ""):
        """``text`` before the cursor; ``below``: after it (the rest of the file)."""
        self.left = text
        self.right = below
        self.language = language
        self.autoclose = autoclose
        self.unit = unit  # one indentation level
        self.quotes = quotes_for(language)

    @property
    def text(self) -> str:
        return self.left + self.right

    def _insert(self, typed: str, paired: str = "") -> Change:
        change = Change(len(self.left), len(self.left), typed + paired)
        self.left += typed
        self.right = paired + self.right
        return change

    def _next_allows_pair(self) -> bool:
        nxt = self.right[:1]
        return not nxt or nxt.isspace() or nxt in CLOSE_BEFORE

    def type(self, ch: str) -> Change | None:
        """A character typed; None when the editor only moves the cursor over it."""
        if not self.autoclose:
            return self._insert(ch)
        if (ch in CLOSERS or ch in self.quotes) and self.right[:1] == ch:
            self.left += ch
            self.right = self.right[1:]
            return None
        if ch in OPENERS and self._next_allows_pair():
            return self._insert(ch, OPENERS[ch])
        if ch in self.quotes and self._next_allows_pair():
            line = self.left[self.left.rfind("\n") + 1:]
            before = line[-1:]
            if not in_string(line, self.quotes) and not (before.isalnum() or before == "_"):
                return self._insert(ch, ch)
        return self._insert(ch)

    def enter(self, text: str) -> Change:
        """Enter: ``text`` is the newline and the indentation the editor gives; between an
        empty pair the closer goes to a line of its own at the line's indentation."""
        if (self.autoclose and self.left[-1:] in OPENERS
                and self.right[:1] == OPENERS[self.left[-1]]):
            outer = indent_of(self.left[self.left.rfind("\n") + 1:])
            return self._insert(text, "\n" + outer)
        return self._insert(text)

    def backspace(self) -> Change:
        start = len(self.left) - 1
        if (self.autoclose and self.left[-1:] and self.right[:1]
                and OPENERS.get(self.left[-1], self.left[-1] if self.left[-1] in self.quotes
                                else None) == self.right[0]):
            self.left, self.right = self.left[:-1], self.right[1:]
            return Change(start, start + 2, "")
        self.left = self.left[:-1]
        return Change(start, start + 1, "")

    def closer_below(self, closer: str) -> bool:
        """Whether ``closer`` is next right of the cursor after whitespace with a newline
        (where Enter between a pair put it)."""
        rest = self.right.lstrip(" \t\n")
        gap = self.right[: len(self.right) - len(rest)]
        return self.autoclose and "\n" in gap and rest[:1] == closer

    def move(self, text: str) -> Change | None:
        """Go to the closer below: ``text`` is the intended whitespace then the closer."""
        rest = self.right.lstrip(" \t\n")
        gap = self.right[: len(self.right) - len(rest)]
        start = len(self.left)
        self.left += text
        self.right = rest[1:]
        if gap == text[:-1]:
            return None
        return Change(start, start + len(gap), text[:-1])

    def accept(self, insert: str, start: int, end: int) -> str:
        """The buffer after accepting ``insert`` over ``[start, end)`` (not applied)."""
        text = self.text
        return text[:start] + insert + text[end:]

    def doubled_closer(self, insert: str, start: int, end: int) -> bool:
        """See the module's docstring."""
        after = self.accept(insert, start, end)
        line_start = after.rfind("\n", 0, start) + 1
        line_end = after.find("\n", start)
        accepted = after[line_start: len(after) if line_end < 0 else line_end]
        plain = self.left[self.left.rfind("\n") + 1:] + insert.split("\n", 1)[0]
        return unmatched_closers(accepted, self.quotes) > unmatched_closers(plain, self.quotes)
