"""Several suggestions for an explicit request: the first answer plus sampled alternatives.

The first suggestion is the pipeline's own (greedy unless ``temperature`` says otherwise);
the alternatives are the same prompt sampled at ``alternativeTemperature`` with fixed seeds,
one engine request each, started once the first generation has its prompt in the engine's
prefix cache. Each alternative is post-processed like the first; none repeats another.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from lsp_copilot.engine.base import EngineRequest

ALTERNATIVE_PRIORITY = 2
"""Below every suggestion the user waits for first (0 single-line, 1 multi-line)."""


def alternative_requests(request: EngineRequest, count: int, temperature: float
                         ) -> list[EngineRequest]:
    """``count`` sampled variants of ``request`` (seeds 1..count: the same prompt gives the
    same alternatives, as the cache gives the same first suggestion)."""
    return [dataclasses.replace(request, request_id=f"{request.request_id}-alt{i}",
                                temperature=temperature, seed=i,
                                priority=max(request.priority, ALTERNATIVE_PRIORITY))
            for i in range(1, count + 1)]


def distinct(texts: Iterable[str], limit: int) -> list[str]:
    """The non-empty texts in order, without one that equals an earlier one once trailing
    whitespace is set aside; at most ``limit``."""
    out: list[str] = []
    seen: set[str] = set()
    for text in texts:
        key = text.rstrip()
        if not key.strip() or key in seen:
            continue
        seen.add(key)
        out.append(text)
        if len(out) >= limit:
            break
    return out
