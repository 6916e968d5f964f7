"""What every trial reports, and the document most of them type into."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Trial:
    name: str
    ok: bool
    summary: str
    numbers: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'}  {self.name:<14} {self.summary}"


# The Python the trials open and type into: non-ASCII on purpose (UTF-16 positions).
SOURCE = '''import os


def read_lines(path):
    """Return the lines of the file at path: é, 漢字, 😀."""
    with open(path) as handle:
        return handle.read().splitlines()


def count_words(text):
    words = text.split()
    return '''


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2
