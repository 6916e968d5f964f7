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
from dataclasses import dataclass
from typing import Any

from lsp_copilot.settings.arms import ENGINE_CHOICE, PER_REQUEST
from lsp_copilot.settings.engine import EngineSettings
from lsp_copilot.settings.layers import RequestSettings

__all__ = ["ENGINE_CHOICE", "PER_REQUEST", "Experiment", "build"]


@dataclass(frozen=True)
class Experiment:
    names: tuple[str, str]
    settings: tuple[RequestSettings, RequestSettings]
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

    def choose(self, uri: str, line: int) -> tuple[str, RequestSettings]:
        i = self.arm_index(uri, line)
        return self.names[i], self.settings[i]

    def cluster(self, uri: str, line: int) -> str:
        """The unit of assignment, as records keep it: a short hash of the line (never
        the path), the same for every suggestion of that line."""
        return self._digest(uri, line)[1:7].hex()

    def engines(self) -> dict[str, EngineSettings]:
        """The arms that name their own engine (``model`` or ``routes``), by name."""
        return {name: s.engine for name, s in zip(self.names, self.settings, strict=True)
                if s.engine.model != self.base_model or s.engine.routes != self.base_routes}


def build(arms: list[tuple[str, RequestSettings]], base: EngineSettings) -> Experiment | None:
    """The experiment of two ``arms`` (settings/arms.py reads them from the `experiment`
    setting), over the main engine's ``base`` settings; None without arms."""
    if len(arms) != 2:
        return None
    (a, first), (b, second) = arms
    return Experiment((a, b), (first, second), base.model, base.routes)
