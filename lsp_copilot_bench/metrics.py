"""The figures the benches report, each computed one way.

Percentiles are the server's own (``lsp_copilot.telemetry.percentile``, numpy's
"nearest" method): a bench's p99 and the p99 ``lspCopilot/stats`` reports mean the same.
"""

from __future__ import annotations

import difflib
import statistics
from collections.abc import Sequence


def edit_similarity(a: str, b: str) -> float:
    """1.0 for equal texts, 0.0 for texts with nothing in common (difflib's ratio)."""
    return difflib.SequenceMatcher(None, a, b).ratio()


def median(values: Sequence[float], digits: int = 1) -> float | None:
    """The median, rounded; None without values (a figure that was not measured)."""
    return round(statistics.median(values), digits) if values else None


def share(part: float, whole: float, digits: int = 3) -> float | None:
    """``part / whole``, rounded; None when there is no whole."""
    return round(part / whole, digits) if whole else None
