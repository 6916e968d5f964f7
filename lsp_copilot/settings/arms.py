"""The ``experiment`` setting read as settings: each arm's overrides merged over the
server's settings, and a message for each override an arm may not make.

An arm may set what the pipeline reads per request (PER_REQUEST) and name the engine that
answers it (ENGINE_CHOICE: ``model`` or ``routes``). Any other setting is read once for
the whole server: in an arm it would change nothing, so it is refused with a warning.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lsp_copilot.settings.core import Settings, camel, parse_settings, setting_docs
from lsp_copilot.settings.layers import RequestSettings

PER_REQUEST = frozenset({
    "enable", "disabledLanguages", "template", "maxPromptTokens", "contextBudgets",
    "contextShares", "suffixShare", "maxTokensSingleLine", "maxTokensMultiLine", "deadlineMs",
    "temperature",
    "maxSuggestions", "alternativeTemperature", "debounceMode", "debounceMs", "debounceMaxMs",
    "merge", "mergeWindowMs", "typingThrough", "cache", "safety",
})
"""Settings the completion pipeline reads from the arm's settings for each request."""

ENGINE_CHOICE = frozenset({"model", "routes"})
"""Settings that make an arm's requests go to another engine (loaded for the arm)."""


def _refusal(name: str, key: str) -> str:
    if key == "experiment":
        return f"experiment arm {name!r}: an arm cannot hold an experiment; 'experiment' ignored"
    return (f"experiment arm {name!r}: {key!r} refused: it is read once for the whole "
            "server, so it cannot differ between arms (an arm may set model, routes and "
            "the per-request settings docs/acceptance.md lists)")


def experiment_arms(base: Settings) -> tuple[list[tuple[str, RequestSettings]], list[str]]:
    """The arms of ``base``'s experiment (none without one), each as the settings its
    requests read, with one message per override refused."""
    value = base.experiment
    if value is None:
        return [], []
    known = {camel(name) for name, _, _ in setting_docs()}
    problems: list[str] = []
    arms: list[tuple[str, RequestSettings]] = []
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
        arms.append((name, settings.request))
    return arms, problems
