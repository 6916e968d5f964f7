"""`lsp-copilot stats`: acceptance by key, with intervals, latency, and experiments.

Acceptance is (accepted + partly accepted) / shown. Intervals are Wilson's; an
experiment's arms are compared by the difference of their rates with Newcombe's interval
(built from the two Wilson intervals), which stays sensible at small counts and rates near
0 or 1. Suggestions of one line share an arm (``experiment``) and are not independent: where
records carry that line as their cluster, each count enters the intervals at its effective
size, n divided by the design effect measured between clusters (never above n, never below
the number of clusters), so the intervals are as wide as the clustering makes them.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from lsp_copilot.acceptance.store import KEYS, OUTCOMES, Record
from lsp_copilot.acceptance.tracker import LATENCY_BUCKETS, SLOWEST

Z95 = 1.959963984540054
BAR = 30
BY = ("arm", "route", "model", "language", "mode")
"""What ``stats --by`` groups by."""
TAKEN = ("accepted", "partly_accepted")


def wilson(k: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion k/n; (0, 1) when there is no data."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z * z / (4 * n * n))) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe(k1: float, n1: float, k2: float, n2: float) -> tuple[float, float, float]:
    """p2 - p1 and its 95% interval (Newcombe's hybrid score method 10)."""
    p1, p2 = (k1 / n1 if n1 else 0.0), (k2 / n2 if n2 else 0.0)
    l1, u1 = wilson(k1, n1)
    l2, u2 = wilson(k2, n2)
    d = p2 - p1
    return d, d - math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2), d + math.sqrt(
        (u2 - p2) ** 2 + (p1 - l1) ** 2)


def effective(records: Sequence[Record]) -> tuple[float, float]:
    """(accepted or partly, shown) at their effective size: a record without a cluster is
    its own. The design effect is the ratio of the cluster-robust variance of the rate
    (a ratio estimator) to the binomial one."""
    n = len(records)
    k = sum(r.outcome in TAKEN for r in records)
    clusters: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        c = clusters.setdefault(r.cluster or f"\0{i}", [0, 0])
        c[0] += r.outcome in TAKEN
        c[1] += 1
    m = len(clusters)
    if n == 0 or m == n:
        return float(k), float(n)
    p = k / n
    if m < 2 or p in (0.0, 1.0):
        n_eff = float(m)  # nothing to measure the spread by: count each cluster once
    else:
        robust = m / (m - 1) * sum((kc - p * nc) ** 2 for kc, nc in clusters.values()) / n**2
        deff = robust / (p * (1 - p) / n)  # 0: lines alike in rate, nothing to widen
        n_eff = min(float(n), max(float(m), n / deff)) if deff > 0 else float(n)
    return p * n_eff, n_eff


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)], 1)


def summarize(records: Sequence[Record]) -> dict[str, Any]:
    """Counts of each outcome, the acceptance rate and its interval, accepted characters
    per shown suggestion, and latency p50/p90 (of the rows that know it)."""
    counts = Counter(r.outcome for r in records)
    n = len(records)
    k = counts["accepted"] + counts["partly_accepted"]
    lo, hi = wilson(*effective(records))
    latencies = [r.latency_ms for r in records if r.latency_ms > 0]
    return {"shown": n, **{o: counts[o] for o in OUTCOMES},
            "acceptance": round(k / n, 4) if n else None, "ci95": [round(lo, 4), round(hi, 4)],
            "accepted_chars_per_shown": round(sum(r.accepted_chars for r in records) / n, 2)
            if n else None,
            "latency_ms": {"p50": _percentile(latencies, 0.5),
                           "p90": _percentile(latencies, 0.9)}}


def groups(records: Iterable[Record], key: str) -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {}
    for r in records:
        out.setdefault(getattr(r, key), []).append(r)
    return out


def compare(label: str, arms: dict[str, list[Record]]) -> dict[str, Any]:
    """One experiment: each arm's figures and the difference of their rates."""
    names = label.split(" vs ", 1) if " vs " in label else sorted(arms)
    compared = [{"arm": name, **summarize(arms.get(name, []))} for name in names]
    entry: dict[str, Any] = {"experiment": label, "arms": compared}
    if len(compared) == 2:
        (ka, na), (kb, nb) = (effective(arms.get(name, [])) for name in names)
        d, lo, hi = newcombe(ka, na, kb, nb)
        a, b = compared
        entry["difference"] = {"of": f"{b['arm']} - {a['arm']}", "value": round(d, 4),
                               "ci95": [round(lo, 4), round(hi, 4)],
                               "significant": na > 0 and nb > 0 and (lo > 0 or hi < 0)}
    return entry


def picked(records: Iterable[Record]) -> list[dict[str, Any]]:
    """Which item users take from answers that offered several (an explicit request's
    first answer and alternatives): per rank (0: the first), items shown and taken
    (accepted or partly), and that rank's share of all taken."""
    rows = [r for r in records if r.items > 1]
    taken = sum(r.outcome in TAKEN for r in rows)
    out = []
    for rank, rs in sorted(groups(rows, "rank").items()):
        k = sum(r.outcome in TAKEN for r in rs)
        out.append({"rank": rank, "shown": len(rs), "picked": k,
                    "share": round(k / taken, 4) if taken else None})
    return out


def build(records: list[Record], since: float | None = None,
          by: str | None = None) -> dict[str, Any]:
    """The whole report: totals, a table per key (``by``: that one only), experiments."""
    order = [name for _, name in LATENCY_BUCKETS] + [SLOWEST]
    table: dict[str, list[dict[str, Any]]] = {}
    for key in (by,) if by else KEYS:
        rows = [{"value": v, **summarize(rs)} for v, rs in groups(records, key).items()]
        table[key] = sorted(rows, key=lambda row: order.index(row["value"])
                            if key == "latency" and row["value"] in order else -row["shown"])
    tried = groups((r for r in records if r.experiment), "experiment")
    experiments = [compare(label, groups(tried[label], "arm")) for label in sorted(tried)]
    return {"since": datetime.fromtimestamp(since).isoformat(timespec="seconds")
            if since else None, **summarize(records), "by": table, "experiments": experiments,
            "picked": picked(records)}


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


def _pct(x: float | None) -> str:
    return "   -  " if x is None else f"{100 * x:5.1f}%"


def _ms(x: float | None) -> str:
    return "     -" if x is None else f"{x:6.0f}"


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
    per = g["accepted_chars_per_shown"]
    return (f"  {name[:24]:<24} {g['shown']:>6} {g['accepted']:>5} {g['partly_accepted']:>5}"
            f" {g['rejected']:>5} {g['typed_through']:>5}  {_pct(g['acceptance'])}"
            f"  [{_pct(lo)}, {_pct(hi)}]  {'-' if per is None else f'{per:.1f}':>6}"
            f" {_ms(g['latency_ms']['p50'])} {_ms(g['latency_ms']['p90'])}"
            f"  {bar(g['acceptance'], lo, hi)}")


HEADER = (f"  {'':<24} {'shown':>6} {'acc':>5} {'part':>5} {'rej':>5} {'typed':>5}"
          f"  {'rate':>6}  {'95% interval':<18}  {'ch/sh':>6} {'p50ms':>6} {'p90ms':>6}"
          f"  0%{' ' * (BAR - 5)}100%")


def render(report: dict[str, Any], where: str) -> str:
    """The report as text: a table per key and a bar per row (a text chart)."""
    since = f" since {report['since']}" if report["since"] else ""
    out = [f"Suggestion outcomes{since}: {report['shown']} shown ({where})",
           "acceptance = (accepted + partly accepted) / shown; 95% Wilson intervals (widened",
           "for suggestions of one line in an experiment); ch/sh = accepted characters per",
           "suggestion shown; p50/p90 = latency; bars: # up to the rate, [ ] the interval",
           "", HEADER, _row("all", report)]
    if not report["shown"]:
        return "\n".join([out[0], "No outcomes recorded yet: suggestions shown in an "
                           "editor are recorded when accepted, rejected or typed."])
    for key, rows in report["by"].items():
        if (key in ("experiment", "arm") and len(report["by"]) > 1) or not rows:
            continue
        out += ["", f"by {key}"] + [_row(r["value"] or "(none)", r) for r in rows]
    if report.get("picked"):
        out += ["", "picked: which item of answers offering several (explicit requests)"]
        out += [f"  {'first' if p['rank'] == 0 else 'alternative ' + str(p['rank']):<14}"
                f" (rank {p['rank']}): {p['picked']} taken of {p['shown']} shown"
                + ("" if p["share"] is None else f", {_pct(p['share']).strip()} of those taken")
                for p in report["picked"]]
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
