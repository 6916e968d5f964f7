"""`lsp-copilot stats`: acceptance rates by key, with Wilson intervals, and experiments.

Acceptance is (accepted + partly accepted) / shown. An experiment's arms are compared by
the difference of their rates with Newcombe's interval (built from the two Wilson
intervals), which stays sensible at small counts and rates near 0 or 1.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from datetime import datetime
from typing import Any

from lsp_copilot.acceptance.store import KEYS, OUTCOMES, Record
from lsp_copilot.acceptance.tracker import LATENCY_BUCKETS, SLOWEST

Z95 = 1.959963984540054
BAR = 30


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n; (0, 1) when there is no data."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float, float]:
    """p2 - p1 and its 95% interval (Newcombe's hybrid score method 10)."""
    p1, p2 = (k1 / n1 if n1 else 0.0), (k2 / n2 if n2 else 0.0)
    l1, u1 = wilson(k1, n1)
    l2, u2 = wilson(k2, n2)
    d = p2 - p1
    return d, d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2), d + math.sqrt(
        (u2 - p2) ** 2 + (p1 - l1) ** 2)


def parse_since(text: str, now: float | None = None) -> float:
    """``7d``, ``12h``, ``30m`` ago, or an ISO date/time (local time): unix time."""
    now = time.time() if now is None else now
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([dhm])\s*", text)
    if m:
        return now - float(m.group(1)) * {"d": 86400, "h": 3600, "m": 60}[m.group(2)]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ValueError(f"--since {text!r}: give a date (2026-11-24), a time "
                         "(2026-11-24T09:00) or an age (7d, 12h, 30m)") from None


def _rates(counts: Counter[str]) -> dict[str, Any]:
    """Counts of each outcome, the acceptance rate and its interval."""
    n = sum(counts[o] for o in OUTCOMES)
    k = counts["accepted"] + counts["partly_accepted"]
    lo, hi = wilson(k, n)
    return {"shown": n, **{o: counts[o] for o in OUTCOMES},
            "acceptance": round(k / n, 4) if n else None, "ci95": [round(lo, 4), round(hi, 4)]}


def build(records: list[Record], since: float | None = None) -> dict[str, Any]:
    """One pass over the rows: outcome counts per value of each key, and per arm."""
    total: Counter[str] = Counter()
    counts: dict[str, dict[str, Counter[str]]] = {key: {} for key in KEYS}
    arms: dict[str, dict[str, Counter[str]]] = {}
    for r in records:
        total[r.outcome] += 1
        for key in KEYS:
            counts[key].setdefault(getattr(r, key), Counter())[r.outcome] += 1
        if r.experiment:
            arms.setdefault(r.experiment, {}).setdefault(r.arm, Counter())[r.outcome] += 1
    order = [name for _, name in LATENCY_BUCKETS] + [SLOWEST]
    by: dict[str, list[dict[str, Any]]] = {}
    for key in KEYS:
        rows = [{"value": v, **_rates(c)} for v, c in counts[key].items()]
        by[key] = sorted(rows, key=lambda row: order.index(row["value"])
                         if key == "latency" and row["value"] in order else -row["shown"])
    experiments = []
    for label in sorted(arms):
        names = label.split(" vs ", 1) if " vs " in label else sorted(arms[label])
        compared = [{"arm": name, **_rates(arms[label].get(name, Counter()))}
                    for name in names]
        entry: dict[str, Any] = {"experiment": label, "arms": compared}
        if len(compared) == 2:
            a, b = compared
            d, lo, hi = newcombe(a["accepted"] + a["partly_accepted"], a["shown"],
                                 b["accepted"] + b["partly_accepted"], b["shown"])
            entry["difference"] = {"of": f"{b['arm']} - {a['arm']}", "value": round(d, 4),
                                   "ci95": [round(lo, 4), round(hi, 4)],
                                   "significant": a["shown"] > 0 and b["shown"] > 0
                                   and (lo > 0 or hi < 0)}
        experiments.append(entry)
    return {"since": datetime.fromtimestamp(since).isoformat(timespec="seconds")
            if since else None, **_rates(total), "by": by, "experiments": experiments}


def _pct(x: float | None) -> str:
    return "   -  " if x is None else f"{100 * x:5.1f}%"


def bar(rate: float | None, lo: float, hi: float, width: int = BAR) -> str:
    """``#`` up to the rate, ``[`` and ``]`` at the interval's ends."""
    cells = [" "] * width
    for i in range(round((rate or 0.0) * width)):
        cells[i] = "#"
    cells[min(width - 1, int(lo * width))] = "["
    cells[min(width - 1, max(0, math.ceil(hi * width) - 1))] = "]"
    return "|" + "".join(cells) + "|"


def _row(name: str, g: dict[str, Any]) -> str:
    lo, hi = g["ci95"]
    return (f"  {name[:24]:<24} {g['shown']:>6} {g['accepted']:>5} {g['partly_accepted']:>5}"
            f" {g['rejected']:>5} {g['typed_through']:>5}  {_pct(g['acceptance'])}"
            f"  [{_pct(lo)}, {_pct(hi)}]  {bar(g['acceptance'], lo, hi)}")


HEADER = (f"  {'':<24} {'shown':>6} {'acc':>5} {'part':>5} {'rej':>5} {'typed':>5}"
          f"  {'rate':>6}  {'95% interval':<18}  0%{' ' * (BAR - 5)}100%")


def render(report: dict[str, Any], where: str) -> str:
    """The report as text: a table per key and a bar per row (a text chart)."""
    since = f" since {report['since']}" if report["since"] else ""
    out = [f"Suggestion outcomes{since}: {report['shown']} shown ({where})",
           "acceptance = (accepted + partly accepted) / shown; 95% Wilson intervals;",
           "bars: # up to the rate, [ ] the interval", "", HEADER, _row("all", report)]
    if not report["shown"]:
        return "\n".join([out[0], "No outcomes recorded yet: suggestions shown in an "
                           "editor are recorded when accepted, rejected or typed."])
    for key, rows in report["by"].items():
        if key in ("experiment", "arm") or not rows:
            continue
        out += ["", f"by {key}"] + [_row(r["value"] or "(none)", r) for r in rows]
    for e in report["experiments"]:
        out += ["", f"experiment {e['experiment']}"]
        out += [_row(a["arm"], a) for a in e["arms"]]
        if "difference" in e:
            d = e["difference"]
            lo, hi = d["ci95"]
            verdict = "a real difference" if d["significant"] else (
                "not distinguishable yet: the interval contains 0")
            out.append(f"  difference {d['of']}: {100 * d['value']:+.1f} points, 95% interval "
                       f"[{100 * lo:+.1f}, {100 * hi:+.1f}]: {verdict}")
    return "\n".join(out)
