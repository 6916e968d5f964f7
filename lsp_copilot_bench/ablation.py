"""`bench typing --ablate NAME`: one mechanism of the keystroke path off at a time, on the
same keystrokes as the default, to see what each one still pays for.

A mechanism with a setting is turned off through it, as a user would; the two without
one (a newer request superseding the document's older one, a generation going on past
its answer to the line after Enter) through ``LSP_COPILOT_ABLATE``, which only the
server's start reads (``lsp_copilot.server.app.ablated``). The default runs twice: the
difference between its two runs is the noise any ablation has to beat.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lsp_copilot.server.app import ABLATABLE

ABLATE_ENV = "LSP_COPILOT_ABLATE"


@dataclass(frozen=True)
class Mechanism:
    what: str  # what it does, for the table's readers
    settings: dict[str, Any] = field(default_factory=dict)  # these turn it off
    server: str = ""  # else this name in LSP_COPILOT_ABLATE


MECHANISMS: dict[str, Mechanism] = {
    "supersede": Mechanism("a newer request for a document cancels the older one",
                           server="supersede"),
    "debounce": Mechanism("wait before calling the engine", {"debounceMode": "off"}),
    "adaptive-debounce": Mechanism("the wait learns the typing rhythm (else debounceMs)",
                                   {"debounceMode": "fixed"}),
    "typing-through": Mechanism("the suggestion on screen answers while it is typed",
                                {"typingThrough": False}),
    "cache": Mechanism("completions cached in memory and on disk", {"cache": False}),
    "merge": Mechanism("a request joins the document's generation under way",
                       {"merge": False}),
    "merge-window": Mechanism("an orphaned generation waits for a request to join it",
                              {"mergeWindowMs": 0}),
    "continuation": Mechanism("a generation goes on to the line after Enter",
                              server="continuation"),
    "deadline": Mechanism("a generation still running is cut at a whole line end",
                          {"deadlineMs": 0}),
    "prefetch": Mechanism("after an accepted suggestion, the next one is computed",
                          {"prefetch": False}),
    "warm-up": Mechanism("an opened document's prompt is prefilled", {"warmUp": False}),
}
assert {m.server for m in MECHANISMS.values() if m.server} <= set(ABLATABLE)


def names(value: str) -> tuple[str, ...]:
    """``--ablate``'s comma-separated names (``all``: every mechanism), checked."""
    chosen = tuple(MECHANISMS) if value == "all" else tuple(
        n.strip() for n in value.split(",") if n.strip())
    unknown = [n for n in chosen if n not in MECHANISMS]
    if unknown or not chosen:
        raise ValueError(f"--ablate: unknown {', '.join(unknown) or 'nothing'}; one or more "
                         f"of {', '.join(MECHANISMS)}, or all")
    return chosen


def configs(chosen: dict[str, Any], env: dict[str, str], ablate: tuple[str, ...]
            ) -> list[tuple[str, dict[str, Any], dict[str, str]]]:
    """(name, settings, environment) of each server to type into: the default twice,
    then the default with each mechanism off."""
    out = [("default", chosen, env), ("default-again", chosen, env)]
    for name in ablate:
        mechanism = MECHANISMS[name]
        out.append((f"no-{name}", {**chosen, **mechanism.settings},
                    {**env, ABLATE_ENV: mechanism.server} if mechanism.server else env))
    return out


TABLE = ("engine_calls_per_100_keys", "pauses_with_suggestion",
         "pauses_with_whole_statement", "pauses_right_line", "pauses_not_answered_in_time",
         "latency_ms_p50", "latency_ms_p99")


def render(rows: list[dict[str, Any]]) -> str:
    """A line per configuration: what the default and each ablation gave."""
    lines = [" | ".join(["config", *TABLE])]
    lines += [" | ".join([str(r["config"]), *(str(r.get(k)) for k in TABLE)]) for r in rows]
    return "\n".join(lines)
