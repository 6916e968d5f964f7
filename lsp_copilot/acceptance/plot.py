"""`lsp-copilot stats --plot FILE.png`: acceptance and latency over time, a line per group.

matplotlib comes with the ``bench`` extra; without it the command says how to get it.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any

from lsp_copilot.acceptance.report import TAKEN, groups
from lsp_copilot.acceptance.store import Record

BINS = 12
"""Time bins across the records' span (fewer when there are few records)."""


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _bins(records: list[Record]) -> tuple[float, float, int]:
    start, end = records[0].ts, records[-1].ts
    count = max(1, min(BINS, len(records) // 4))
    return start, max(end - start, 1.0) / count, count


def _series(rows: list[Record], start: float, width: float, count: int
            ) -> tuple[list[datetime], list[float], list[datetime], list[float]]:
    """Per bin: the acceptance rate (bins with a shown suggestion) and the median latency
    (bins with a known one)."""
    shown = [0] * count
    taken = [0] * count
    latency: list[list[float]] = [[] for _ in range(count)]
    for r in rows:
        i = min(count - 1, int((r.ts - start) / width))
        shown[i] += 1
        taken[i] += r.outcome in TAKEN
        if r.latency_ms > 0:
            latency[i].append(r.latency_ms)
    mid = [datetime.fromtimestamp(start + (i + 0.5) * width) for i in range(count)]
    rate_x = [mid[i] for i in range(count) if shown[i]]
    rate_y = [100 * taken[i] / shown[i] for i in range(count) if shown[i]]
    lat_x = [mid[i] for i in range(count) if latency[i]]
    lat_y = [sorted(v)[math.ceil(len(v) / 2) - 1] for v in latency if v]
    return rate_x, rate_y, lat_x, lat_y


def plot(records: list[Record], key: str, path: Path) -> int:
    """Write the PNG; return the number of groups drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display needed
        import matplotlib.dates as mdates
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotUnavailable("--plot needs matplotlib: pip install 'lsp-copilot[bench]' "
                              "(or pip install matplotlib)") from None
    records = sorted(records, key=lambda r: r.ts)
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(9, 6))
    drawn = 0
    if records:
        start, width, count = _bins(records)
        for value, rows in sorted(groups(records, key).items(), key=lambda kv: -len(kv[1])):
            rate_x, rate_y, lat_x, lat_y = _series(rows, start, width, count)
            label: Any = f"{value or '(none)'} ({len(rows)})"
            top.plot(rate_x, rate_y, marker="o", label=label)
            bottom.plot(lat_x, lat_y, marker="o", label=label)
            drawn += 1
    top.set_ylabel("acceptance (%)")
    top.set_ylim(0, 100)
    top.set_title(f"Suggestions shown, by {key}")
    bottom.set_ylabel("latency p50 (ms)")
    bottom.set_xlabel("time")
    if drawn:
        top.legend(loc="best", fontsize="small")
    locator = mdates.AutoDateLocator()
    bottom.xaxis.set_major_locator(locator)
    bottom.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return drawn
