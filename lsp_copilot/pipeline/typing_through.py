"""Typing-through: while the user types what the suggestion on screen says, the rest of it
answers at once, without the engine.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from lsp_copilot.documents.store import Snapshot


@dataclass(frozen=True)
class _Shown:
    """The last suggestion answered for a document."""

    prefix: bytes
    suffix: bytes
    texts: tuple[str, ...]  # the suggestions answered, the one the user took first


class TypingThrough:
    """The suggestions answered last, per document."""

    def __init__(self) -> None:
        self._shown: dict[str, _Shown] = {}

    def forget(self, uri: str) -> None:
        self._shown.pop(uri, None)

    def remember(self, snapshot: Snapshot, offset: int, texts: tuple[str, ...]) -> None:
        self._shown[snapshot.uri] = _Shown(snapshot.data[:offset], snapshot.data[offset:],
                                           texts)

    def prefer(self, uri: str, text: str) -> None:
        """The user took (part of) ``text``, one of the suggestions answered last, or what
        was left of it: typing-through continues that one, not the first."""
        shown = self._shown.get(uri)
        if shown is None:
            return
        for candidate in shown.texts:
            if text and candidate.endswith(text):
                rest = tuple(t for t in shown.texts if t is not candidate)
                self._shown[uri] = dataclasses.replace(shown, texts=(candidate, *rest))
                return

    def rest(self, snapshot: Snapshot, offset: int) -> str | None:
        """What is left of a suggestion answered last that the user is typing, if any."""
        shown = self._shown.get(snapshot.uri)
        if shown is None:
            return None
        data = snapshot.data
        if (len(data) - offset != len(shown.suffix) or not data.endswith(shown.suffix)
                or not data.startswith(shown.prefix) or offset < len(shown.prefix)):
            return None
        typed = data[len(shown.prefix):offset].decode("utf-8", "replace")
        for text in shown.texts:
            if text.startswith(typed) and len(typed) < len(text):
                return text[len(typed):]
        return None
