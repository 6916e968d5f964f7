"""Records settings: the server's log, the suggestion outcomes `lsp-copilot stats` reports,
and the two-arm experiment compared there."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lsp_copilot.settings.checks import IS_STR, Check, int_range, one_of, pairs, setting

LOG_LEVELS = ("debug", "info", "warning", "error")


def _experiment(value: Any) -> str | None:
    """Two named arms of settings; each arm's values are checked when the arms are built."""
    arms = pairs(value)
    ok = value is None or (arms is not None and len(list(arms)) == 2 and all(
        isinstance(p, tuple | list) and len(p) == 2 and isinstance(p[0], str) and p[0]
        and isinstance(p[1], Mapping) for p in arms) and len({p[0] for p in arms}) == 2)
    return None if ok else ("must be null or an object of two named arms, each an object "
                            "of settings, e.g. {\"a\": {}, \"b\": {\"deadlineMs\": 600}}")


EXPERIMENT = Check(_experiment, {"type": ["object", "null"], "minProperties": 2,
                                 "maxProperties": 2, "additionalProperties": {"type": "object"}})


@dataclass(frozen=True)
class RecordsSettings:
    """Logs and records: the log file, suggestion outcomes and experiments."""

    log_file: str = setting(
        "", "Server log file, rotated at 5 MB (3 old files kept); empty: "
        "$LSP_COPILOT_LOG_FILE, else logs/lsp-copilot.log in the cache folder "
        "(~/.cache/lsp-copilot).", IS_STR
    )
    log_level: str = setting(
        "", "Log level: debug, info, warning or error; empty: the command line's "
        "--log-level ($LSP_COPILOT_LOG, else info).", one_of("", *LOG_LEVELS)
    )
    acceptance_file: str = setting(
        "", "File of the suggestion outcomes that `lsp-copilot stats` reports; empty: "
        "acceptance.sqlite3 in the cache folder (~/.cache/lsp-copilot).", IS_STR
    )
    acceptance_max_rows: int = setting(
        100_000, "Suggestion outcomes kept for `lsp-copilot stats` in acceptance.sqlite3 in "
        "the cache folder (kinds, lengths and timings, never code); the oldest go first; "
        "0: record none.", int_range(0, 100_000_000)
    )
    experiment: tuple[tuple[str, Any], ...] | None = setting(
        None, "Compare two configurations: {\"a\": {}, \"b\": {\"deadlineMs\": 600}} gives "
        "each suggestion one arm's settings by a stable hash of its document and line; "
        "`lsp-copilot stats` compares the arms' acceptance. An arm may set `model` or "
        "`routes` (its engine loads beside the main one) and the settings read per request "
        "(docs/acceptance.md); any other is refused with a warning. null: none.", EXPERIMENT
    )
