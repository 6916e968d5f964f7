"""Which open documents stay private, judged once per version of each: the rules read
the content (a private key's header, the user's content patterns), so a verdict is kept
until the document changes or the rules do."""

from __future__ import annotations

from lsp_copilot.privacy import Privacy

KEPT = 256
"""Verdicts kept; past this many the lot is dropped (a document is judged again)."""


class PrivateDocuments:
    """The verdicts of ``rules`` on the open documents' versions."""

    def __init__(self, rules: Privacy | None = None) -> None:
        self.rules = rules or Privacy()  # the server installs the user's rules
        self._verdicts: dict[tuple[str, int], str | None] = {}

    def reason(self, uri: str, version: int, data: bytes) -> str | None:
        """Why the document must stay private, or None."""
        key = (uri, version)
        if key not in self._verdicts:
            if len(self._verdicts) > KEPT:
                self._verdicts.clear()
            self._verdicts[key] = self.rules.reason(uri, data)
        return self._verdicts[key]

    def install(self, rules: Privacy) -> None:
        """New rules: every document is judged afresh."""
        self.rules, self._verdicts = rules, {}

    def forget(self, uri: str) -> None:
        """The document closed."""
        self._verdicts = {k: v for k, v in self._verdicts.items() if k[0] != uri}
