"""The ``experiment`` setting: two named configurations, one per suggestion.

Each suggestion's arm comes from a stable hash of its document and line, so a line always
gets the same arm (its cache entries, typing-through and prefetch stay within one arm) and
the split survives restarts. Arms override any setting that applies per request; settings
that restart the engine would need a second engine and are refused.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lsp_copilot.settings.core import Settings, parse_settings, restarts_engine


@dataclass(frozen=True)
class Experiment:
    names: tuple[str, str]
    settings: tuple[Settings, Settings]

    @property
    def label(self) -> str:
        """How records and reports name the comparison."""
        return f"{self.names[0]} vs {self.names[1]}"

    def arm_index(self, uri: str, line: int) -> int:
        key = f"{self.label}\0{uri}\0{line}".encode("utf-8", "surrogatepass")
        return hashlib.sha256(key).digest()[0] & 1

    def choose(self, uri: str, line: int) -> tuple[str, Settings]:
        i = self.arm_index(uri, line)
        return self.names[i], self.settings[i]


def build(base: Settings) -> tuple[Experiment | None, list[str]]:
    """The arms' settings over ``base``, with one message per override refused."""
    value = base.experiment
    if value is None:
        return None, []
    problems: list[str] = []
    names: list[str] = []
    arms: list[Settings] = []
    for name, overrides in (value.items() if isinstance(value, Mapping) else value):
        kept: dict[str, Any] = {}
        for key, v in dict(overrides).items():
            if restarts_engine(str(key)) or key == "experiment":
                problems.append(f"experiment arm {name!r}: {key!r} cannot differ between arms "
                                "(it needs its own engine); ignored")
            else:
                kept[key] = v
        settings, errors = parse_settings(kept, base)
        problems += [f"experiment arm {name!r}: {e}" for e in errors]
        names.append(name)
        arms.append(settings)
    return Experiment((names[0], names[1]), (arms[0], arms[1])), problems
