"""Counters and latencies that users can ask for through ``lspCopilot/stats``.

Counters only ever count what happened; nothing here estimates. Latencies are kept in a
bounded window so that a server running for days uses constant memory.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

COUNTERS = (
    "requests",
    "engine_requests",
    "engine_aborted",
    "engine_stopped_early",
    "deadline_answers",
    "explicit_requests",
    "not_whole",
    "engine_errors",
    "cache_hits",
    "typed_through",
    "merged",
    "flights_joined",
    "merged_unusable",
    "cancelled",
    "superseded",
    "not_ready",
    "empty_mode",
    "rejected_input",
    "prompt_tokens",
    "token_id_prompts",
    "prompt_token_ids",
    "escaped_special_tokens",
    "cached_prompt_tokens",
    "generated_tokens",
    "debounced",
    "overloaded",
    "secret_skipped",
    "secrets_redacted",
    "secret_dropped",
    "secret_not_cached",
    "disabled_language",
    "out_of_sync",
    "prefetched",
    "shown",
    "accepted",
    "partial_accepts",
    "accepted_chars",
    "alternatives",
    "statement_ends",  # answers that are the token the file's style puts there (no model text)
    "rejected",
    "warmed_up",
    "warm_up_aborted",
    "engine_restarts",
    "engine_incidents",
    "engine_load_stalls",  # starts killed by the watchdog (engineLoadTimeoutS)
    "engine_interrupted",
    "engine_deadline_exceeded",
    "safety_blocked",
    "safety_warned",
)


def percentile(sorted_values: list[float], q: float) -> float:
    """The value nearest the ``q`` quantile's position ``q * (n - 1)``, halves to even
    (numpy's "nearest" method): always one of the values, so a p99 is a latency that
    happened. 0.0 for no data. The stats and every bench use this one definition."""
    if not sorted_values:
        return 0.0
    rank = max(0, min(len(sorted_values) - 1, round(q * (len(sorted_values) - 1))))
    return sorted_values[rank]


@dataclass
class Telemetry:
    """Process-wide counters and a window of request latencies."""

    window: int = 2000
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    _latencies: deque[float] = field(default_factory=deque)
    _server_ms: deque[float] = field(default_factory=deque)
    last_timings_ms: dict[str, float] = field(default_factory=dict)
    # Context layers across requests: name -> [prompts with it, tokens, prompts it was cut in].
    _layers: dict[str, list[int]] = field(default_factory=dict)
    _prompts: int = 0
    # Safety findings in suggestions: rule -> {"blocked": n, "warned": n}.
    _safety: dict[str, dict[str, int]] = field(default_factory=dict)

    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + n

    def answered(self, started: float) -> float:
        """Record the latency of a request from ``started`` (perf_counter) to now."""
        ms = (time.perf_counter() - started) * 1000.0
        self._latencies.append(ms)
        while len(self._latencies) > self.window:
            self._latencies.popleft()
        return ms

    @property
    def tracing(self) -> bool:
        """Whether ``trace`` writes anything (work only the trace needs can be skipped)."""
        return bool(os.environ.get("LSP_COPILOT_TRACE"))

    def trace(self, record: Mapping[str, object]) -> None:
        """One line per request (timings, token counts; never text) to LSP_COPILOT_TRACE."""
        path = os.environ.get("LSP_COPILOT_TRACE")
        if not path:
            return
        try:
            with open(path, "a", encoding="utf-8") as out:
                out.write(json.dumps(record) + "\n")
        except OSError:
            pass

    def context_built(self, layers: Iterable[tuple[str, int, bool]]) -> None:
        """One prompt's layers (name, tokens, cut): where the context tokens go, so that
        the budget split can be judged on a user's own requests."""
        self._prompts += 1
        for name, tokens, cut in layers:
            entry = self._layers.setdefault(name, [0, 0, 0])
            entry[0] += 1
            entry[1] += tokens
            entry[2] += int(cut)

    def safety_finding(self, rule: str, action: str) -> None:
        """A finding of ``rule`` in a suggestion that was ``blocked`` or ``warned``."""
        entry = self._safety.setdefault(rule, {"blocked": 0, "warned": 0})
        entry[action] += 1

    def context_summary(self) -> dict[str, Any]:
        n = self._prompts
        return {"prompts": n, "layers": {
            name: {"mean_tokens": round(tokens / n, 1), "present": present, "cut": cut}
            for name, (present, tokens, cut) in sorted(self._layers.items())}}

    def server_time(self, ms: float) -> None:
        """Time spent in our own code for a request (no debounce, no engine)."""
        self._server_ms.append(ms)
        while len(self._server_ms) > self.window:
            self._server_ms.popleft()

    def latency_ms(self) -> dict[str, float]:
        return self._summary(self._latencies)

    @staticmethod
    def _summary(window: deque[float]) -> dict[str, float]:
        values = sorted(window)
        return {
            "p50": round(percentile(values, 0.50), 2),
            "p90": round(percentile(values, 0.90), 2),
            "p99": round(percentile(values, 0.99), 2),
            "count": len(values),
        }

    def snapshot(self) -> dict[str, Any]:
        return {**self.counters, "latency_ms": self.latency_ms(),
                "server_ms": self._summary(self._server_ms),
                "context": self.context_summary(),
                "safety_rules": {rule: dict(n) for rule, n in sorted(self._safety.items())}}
