"""The server's settings, delivered by group: a component subscribes to the group it reads
and is called with that group's new value when, and only when, the group changed.

One hub per server (it owns the current settings); nothing here is module state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from lsp_copilot.settings.core import GROUPS, G, Settings


class SettingsHub:
    """The current settings and, per group, the callbacks that follow its changes."""

    def __init__(self, settings: Settings | None = None) -> None:
        self._settings = settings or Settings()
        self._callbacks: dict[type, list[Callable[[Any], None]]] = {g: [] for g in GROUPS}

    @classmethod
    def of(cls, **values: Any) -> SettingsHub:
        """The defaults with ``values`` (snake_case names) set: for a command that composes
        its settings itself (a benchmark), as the server composes them from the wire."""
        return cls(Settings(**values))

    def replaced(self, **values: Any) -> SettingsHub:
        """A hub of its own holding these settings with ``values`` set."""
        return SettingsHub(dataclasses.replace(self._settings, **values))

    @property
    def settings(self) -> Settings:
        """All settings, for the server's composition root and the wire format."""
        return self._settings

    def get(self, group: type[G]) -> G:
        """The current value of ``group``."""
        return self._settings.group(group)

    def on_change(self, group: type[G], callback: Callable[[G], None]) -> G:
        """Call ``callback`` with ``group``'s new value after each change of that group
        (in subscription order); return its value now, which the subscriber starts from."""
        if group not in self._callbacks:
            raise ValueError(f"{group.__name__} is not a settings group")
        self._callbacks[group].append(callback)
        return self.get(group)

    def update(self, settings: Settings) -> list[type]:
        """Make ``settings`` current; call the subscribers of each group that changed.
        Returns the groups that changed, in declaration order."""
        before, self._settings = self._settings, settings
        changed = [g for g in GROUPS if any(
            getattr(before, f.name) != getattr(settings, f.name) for f in dataclasses.fields(g))]
        for group in changed:
            value: Any = settings.group(group)
            for callback in list(self._callbacks[group]):
                callback(value)
        return changed
