"""What ``bench typing`` counts at a pause: is the suggestion whole, and is it right?

Whole: the typed part of the line plus the suggestion's first line parses as a statement
or a block header. Right: that first line is exactly the line the user goes on to type.
The intended text is known (the file up to the function, then the function), so each
pause has a target: the rest of the line being typed, or, at the end of a finished line
(or on a line the user leaves blank), the next line with code on it.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lsp_copilot.telemetry import percentile
from lsp_copilot_bench.metrics import edit_similarity, median

MIN_ALNUM = 3
"""A target (or a suggested start) with fewer letters or digits (a lone ``)``) is too
little to call a suggestion right."""


def _alnum(text: str) -> int:
    return sum(c.isalnum() for c in text)


def _rest_of_line(intended: str, typed: str) -> str | None:
    """What is left of the intended line at the cursor's row, stripped; None when the
    current line as typed is not a start of it (leading whitespace aside)."""
    row = typed.count("\n")
    lines = intended.split("\n")
    if row >= len(lines):
        return None
    typed_line = typed[typed.rfind("\n") + 1:].lstrip()
    want = lines[row].strip()
    if want.startswith(typed_line):
        return want[len(typed_line):].strip()
    if typed_line.rstrip() == want:  # the line's trailing spaces, typed as they were
        return ""
    return None


def pause_target(intended: str, typed: str) -> str | None:
    """What the user types next, stripped, with the cursor at the end of ``typed``.

    The current line as typed (its leading whitespace aside: the editor's indentation may
    differ) must be a prefix of the intended line at that row: then the target is the
    rest of that line, or, when nothing is left of it, the next non-blank intended line.
    None when the typed text has diverged (a typo not yet fixed) or nothing follows."""
    rest = _rest_of_line(intended, typed)
    if rest is None or rest:
        return rest
    following = intended.split("\n")[typed.count("\n") + 1:]
    return next((line.strip() for line in following if line.strip()), None)


def offered_line(typed_line: str, suggestion: str) -> str:
    """The suggestion's first line, stripped, taken as ``first_line_is_whole`` takes it:
    after a finished line, a suggestion that starts with a newline offers the next line."""
    head, _, rest = suggestion.partition("\n")
    if not head.strip() and typed_line.strip() and rest.strip():
        head = rest.lstrip("\n").split("\n", 1)[0]
    return head.strip()


@dataclass(frozen=True)
class PauseScore:
    """``right_line``: the offered line is the target. ``right_start``: it is a start of
    the target with 3+ letters or digits (``right_line`` included). ``similarity``: edit
    similarity to the target (0 with no suggestion or no target)."""

    target: str | None
    right_line: bool
    right_start: bool
    similarity: float


def score_pause(intended: str, typed: str, suggestion: str | None) -> PauseScore:
    """The pause's measure against the intended text; a pause with no target (the typed
    text has diverged) is not right. At the end of a finished line the target is the
    next line: a suggestion that goes on on the same line offers none (it is not right,
    similarity 0)."""
    target = pause_target(intended, typed)
    if target is None or not suggestion:
        return PauseScore(target, False, False, 0.0)
    typed_line = typed[typed.rfind("\n") + 1:]
    finished = bool(typed_line.strip()) and not _rest_of_line(intended, typed)
    if finished and suggestion.partition("\n")[0].strip():
        return PauseScore(target, False, False, 0.0)
    shown = offered_line(typed_line, suggestion)
    return PauseScore(
        target,
        right_line=shown == target and _alnum(target) >= MIN_ALNUM,
        right_start=bool(shown) and target.startswith(shown) and _alnum(shown) >= MIN_ALNUM,
        similarity=round(edit_similarity(shown, target), 3))


def whole(text: str, suggestion: Any, language: str = "python", right: str = "") -> bool:
    """The typed part of the line plus the suggestion's first line parses as a statement
    or a block header (tree-sitter, in the buffer of ``language`` as the editor has it:
    ``text`` before the cursor, ``right`` what the editor put after it)."""
    from lsp_copilot.documents.store import DocumentStore
    from lsp_copilot.postprocess.whole import first_line_is_whole

    if not isinstance(suggestion, str):
        return False
    store = DocumentStore()
    uri = "file:///pause"
    store.open(uri, language, 1, text + right)
    return first_line_is_whole(store.snapshot(uri), len(text.encode()), suggestion)


def pause_figures(pauses: list[dict[str, Any]]) -> dict[str, Any]:
    """Shares of all pauses, from their log entries (``pauses-*.jsonl``)."""
    n = len(pauses)

    def part(count: int) -> float:
        return round(count / max(1, n), 3)

    return {
        "pauses": n,
        "pauses_with_suggestion": part(sum(p["how"] in ("whole", "suggested") for p in pauses)),
        "pauses_with_whole_statement": part(sum(p["how"] == "whole" for p in pauses)),
        "pauses_right_line": part(sum(p["right_line"] for p in pauses)),
        "pauses_right_start": part(sum(p["right_start"] for p in pauses)),
        "pauses_doubled_closer": sum(bool(p.get("doubled_closer")) for p in pauses),
        "pause_similarity_mean": round(statistics.mean(p["similarity"] for p in pauses), 3)
        if pauses else 0.0,
        "pauses_not_answered_in_time": sum(p["how"] == "late" for p in pauses),
        # Pauses after the function's last key (its `}` typed, the rest of the file already
        # below): nothing is left to type, and the whole share counts them as it counts
        # any pause. Beside it, the whole share of the pauses that have something left.
        "pauses_nothing_left": sum(p.get("target", "") is None for p in pauses),
        "whole_where_something_left": _whole_share(
            [p for p in pauses if p.get("target", "") is not None]),
    }


def _whole_share(pauses: list[dict[str, Any]]) -> float:
    return round(sum(p["how"] == "whole" for p in pauses) / max(1, len(pauses)), 3)


def corpus_figures(pauses: list[dict[str, Any]], keystrokes: int) -> dict[str, Any]:
    """One package's figures in a split's run: its pauses and their latencies."""
    lat = sorted(p["latency_ms"] for p in pauses if p.get("latency_ms") is not None)
    return {"keystrokes": keystrokes, **pause_figures(pauses),
            "latency_ms_p50": median(lat),
            "latency_ms_p99": round(percentile(lat, 0.99), 1) if lat else None}


CORPUS_COLUMNS = ("keystrokes", "pauses", "pauses_with_suggestion",
                  "pauses_with_whole_statement", "pauses_right_line", "pauses_right_start",
                  "pauses_doubled_closer",
                  "pause_similarity_mean", "pauses_not_answered_in_time", "latency_ms_p50")


def render(rows: Iterable[dict[str, Any]]) -> str:
    """The table the command prints: a figure per line, a column per configuration; with
    a split, each package's pause figures below."""
    rows = list(rows)
    names = [str(r["config"]) for r in rows]
    figures = [k for k, v in rows[0].items()
               if k != "config" and not isinstance(v, dict)] if rows else []
    lines = [" | ".join(["figure", *names])]
    lines += [" | ".join([k, *(str(r.get(k)) for r in rows)]) for k in figures]
    for r in rows:
        corpora = r.get("corpora") or {}
        if corpora:
            lines.append("")
            lines.append(" | ".join([f"{r['config']}: package ({r.get('split')})",
                                     *CORPUS_COLUMNS]))
            lines += [" | ".join([name, *(str(c.get(k)) for k in CORPUS_COLUMNS)])
                      for name, c in corpora.items()]
    return "\n".join(lines)
