"""The ``experiment`` setting: two named configurations, one per line of code.

Each suggestion's arm comes from a stable hash of its document and line, so a line always
gets the same arm (its cache entries, typing-through and prefetch stay within one arm) and
the split survives restarts. The records carry that line as their cluster, and
``report`` widens the intervals for it (docs/acceptance.md says why).

An arm may set what the pipeline reads per request (PER_REQUEST) and name the engine that
answers it: ``model`` (that model answers every kind of request of the arm) or ``routes``
(as the setting: which model answers which kind). The routes machinery loads those
engines beside the main one. Any other setting is read once for the whole server: in an
arm it would change nothing, so it is refused with a warning naming it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lsp_copilot.settings.core import Settings, camel, parse_settings, setting_docs

PER_REQUEST = frozenset({
    "enable", "disabledLanguages", "template", "maxPromptTokens", "contextBudgets",
    "contextShares", "maxTokensSingleLine", "maxTokensMultiLine", "deadlineMs", "temperature",
    "maxSuggestions", "alternativeTemperature", "debounceMode", "debounceMs", "debounceMaxMs",
    "merge", "mergeWindowMs", "typingThrough", "cache", "safety",
})
"""Settings the completion pipeline reads from the arm's settings for each request."""

ENGINE_CHOICE = frozenset({"model", "routes"})
"""Settings that make an arm's requests go to another engine (loaded for the arm)."""


@dataclass(frozen=True)
class Experiment:
    names: tuple[str, str]
    settings: tuple[Settings, Settings]
    base_model: str = ""  # the main engine's, which an arm's ``model`` replaces
    base_routes: tuple[tuple[str, Any], ...] | None = None

    @property
    def label(self) -> str:
        """How records and reports name the comparison."""
        return f"{self.names[0]} vs {self.names[1]}"

    def _digest(self, uri: str, line: int) -> bytes:
        key = f"{self.label}\0{uri}\0{line}".encode("utf-8", "surrogatepass")
        return hashlib.sha256(key).digest()

    def arm_index(self, uri: str, line: int) -> int:
        return self._digest(uri, line)[0] & 1

    def choose(self, uri: str, line: int) -> tuple[str, Settings]:
        i = self.arm_index(uri, line)
        return self.names[i], self.settings[i]

    def cluster(self, uri: str, line: int) -> str:
        """The unit of assignment, as records keep it: a short hash of the line (never
        the path), the same for every suggestion of that line."""
        return self._digest(uri, line)[1:7].hex()

    def engines(self) -> dict[str, Settings]:
        """The arms that name their own engine (``model`` or ``routes``), by name."""
        return {name: s for name, s in zip(self.names, self.settings, strict=True)
                if s.model != self.base_model or s.routes != self.base_routes}


def _refusal(name: str, key: str) -> str:
    if key == "experiment":
        return f"experiment arm {name!r}: an arm cannot hold an experiment; 'experiment' ignored"
    return (f"experiment arm {name!r}: {key!r} refused: it is read once for the whole "
            "server, so it cannot differ between arms (an arm may set model, routes and "
            "the per-request settings docs/acceptance.md lists)")


def build(base: Settings) -> tuple[Experiment | None, list[str]]:
    """The arms' settings over ``base``, with one message per override refused."""
    value = base.experiment
    if value is None:
        return None, []
    known = {camel(name) for name, _, _ in setting_docs()}
    problems: list[str] = []
    names: list[str] = []
    arms: list[Settings] = []
    for name, overrides in (value.items() if isinstance(value, Mapping) else value):
        kept: dict[str, Any] = {}
        for key, v in dict(overrides).items():
            if str(key) in PER_REQUEST or str(key) in ENGINE_CHOICE or str(key) not in known:
                # (a name that is no setting at all: parse_settings says which it meant)
                kept[key] = v
            else:
                problems.append(_refusal(name, str(key)))
        settings, errors = parse_settings(kept, base)
        problems += [f"experiment arm {name!r}: {e}" for e in errors]
        names.append(name)
        arms.append(settings)
    return Experiment((names[0], names[1]), (arms[0], arms[1]), base.model,
                      base.routes), problems
