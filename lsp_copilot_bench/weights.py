"""`lsp-copilot bench engine --weights bf16,int8`: the same preset with other weights, side
by side in one run. A format followed by ``+compiled`` (``bf16+compiled``) loads with
torch.compile (``enforceEager`` false) instead of the device's default; one followed by
``+bfloat16`` or ``+float32`` (``bf16+float32``) computes in that dtype instead of the
device's default (the ``dtype`` setting).

Every format's engine is loaded at once and the holes are taken in turn by each, so that
whatever else runs on a shared machine slows them alike; the ratios to the first format
are the figures to read. Speculation is off: it is the weights' own decode speed. Per
format: decode tokens/s (wall), tokens per CPU second of that engine's processes (prefill
included; robust to other load), time to first token, and on single-line holes how often
the answer is the original line and how often it is the first format's answer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

from lsp_copilot.context.builder import build_context
from lsp_copilot.engine.base import Engine, EngineRequest
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.models.quantize import WEIGHT_FORMATS
from lsp_copilot.prompts.templates import template_for
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot_bench.line_holes import Hole, cut_holes, fill, line_start, start_engine
from lsp_copilot_bench.metrics import median, share

SETTLE_S = 1.5
"""Pause before an engine's turn: an idle vLLM EngineCore keeps polling its workers for
1 s after its last step, which would steal a core from the next engine on a small CPU."""


COMPILED = "+compiled"
"""The suffix of a format loaded with torch.compile (``bf16+compiled``)."""
DTYPES = ("bfloat16", "float32")
"""Dtypes a format may name after ``+`` (``bf16+float32``)."""


def _parts(label: str) -> tuple[str, bool, str | None]:
    """``bf16+compiled+float32`` -> ("bf16", True, "float32")."""
    name, *suffixes = label.split("+")
    compiled = COMPILED.removeprefix("+")
    dtypes = [s for s in suffixes if s in DTYPES]
    if len(dtypes) > 1 or any(s not in (*DTYPES, compiled) for s in suffixes):
        raise ValueError(f"unknown weights {label!r}; a format may end in {COMPILED} "
                         f"and one of {', '.join('+' + d for d in DTYPES)}")
    return name, compiled in suffixes, dtypes[0] if dtypes else None


def parse_weights(value: str) -> list[str]:
    """``bf16,int8`` -> the formats, checked, in order (the first is the baseline)."""
    formats = [w.strip() for w in value.split(",") if w.strip()]
    for w in formats:
        name = _parts(w)[0]
        if name not in WEIGHT_FORMATS:
            raise ValueError(f"unknown weights {name!r}; choose from "
                             f"{', '.join(WEIGHT_FORMATS)}, each optionally {COMPILED}")
    if len(formats) < 2 or len(set(formats)) != len(formats):
        raise ValueError("--weights takes two or more different formats, e.g. bf16,int8")
    return formats


def _variant(hub: SettingsHub, label: str) -> SettingsHub:
    """The settings of one format's engine: its weights, no speculation, eager or not,
    the dtype it names or the device's."""
    name, compiled, dtype = _parts(label)
    changes: dict[str, Any] = {"weights": name, "speculative_method": "none"}
    if compiled:
        changes["enforce_eager"] = False
    if dtype:
        changes["dtype"] = dtype
    return hub.replaced(**changes)


def _cpu_seconds(pids: list[int]) -> float:
    """CPU seconds used so far by these processes (one engine's EngineCore and workers)."""
    import psutil

    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


@dataclasses.dataclass
class _Run:
    """One format's engine and what it measured."""

    weights: str
    manager: EngineManager
    engine: Engine
    load_seconds: float
    pids: list[int]  # the engine's EngineCore and workers
    decode_tokens: int = 0
    decode_ms: float = 0.0
    generated: int = 0
    cpu_seconds: float = 0.0
    first_token_ms: list[float] = dataclasses.field(default_factory=list)
    answers: list[str] = dataclasses.field(default_factory=list)


async def _decode_one(run: _Run, hole: Hole, n: int, max_tokens: int) -> None:
    """A greedy multi-line generation of ``max_tokens`` from the start of the hole's line."""
    engine = run.engine
    ctx = build_context(hole.snapshot, line_start(hole), engine.counter, template_for(None),
                        1024, "multi-line")
    cpu = _cpu_seconds(run.pids)
    started = time.perf_counter()
    result = await engine.generate(EngineRequest(
        request_id=f"bench-weights-{run.weights}-{n}", prompt=ctx.prompt,
        max_tokens=max_tokens, temperature=0.0))
    total_ms = (time.perf_counter() - started) * 1000
    run.cpu_seconds += _cpu_seconds(run.pids) - cpu
    run.generated += result.generated_tokens
    if result.first_token_ms is not None and result.generated_tokens > 1:
        run.first_token_ms.append(result.first_token_ms)
        run.decode_tokens += result.generated_tokens - 1
        run.decode_ms += total_ms - result.first_token_ms


def _summary(run: _Run, base: _Run, holes: list[Hole]) -> dict[str, Any]:
    rate = run.decode_tokens / run.decode_ms * 1000 if run.decode_ms else None
    per_cpu = run.generated / run.cpu_seconds if run.cpu_seconds > 0 else None
    base_rate = base.decode_tokens / base.decode_ms * 1000 if base.decode_ms else None
    base_cpu = base.generated / base.cpu_seconds if base.cpu_seconds > 0 else None
    return {
        "model": run.engine.info.model,
        "quantization": run.engine.info.quantization,
        "compiled": _parts(run.weights)[1],
        "dtype": run.engine.info.dtype,
        "load_seconds": round(run.load_seconds, 1),
        "decode_tokens_per_s": round(rate, 1) if rate else None,
        "decode_speedup": round(rate / base_rate, 2) if rate and base_rate else None,
        "tokens_per_cpu_second": round(per_cpu, 1) if per_cpu else None,
        "cpu_speedup": round(per_cpu / base_cpu, 2) if per_cpu and base_cpu else None,
        "first_token_ms_p50": median(run.first_token_ms),
        "holes": len(holes),
        "exact": share(sum(a == h.expected for a, h in zip(run.answers, holes, strict=True)),
                       len(holes)),
        "same_as_first": share(sum(a == b for a, b in zip(run.answers, base.answers,
                                                          strict=True)), len(holes)),
    }


async def bench_weights(corpus: Path, count: int, hub: SettingsHub, formats: list[str],
                        max_tokens: int = 64) -> dict[str, Any]:
    """Each format's engine loaded at once, then every hole decoded and filled by each."""
    holes = cut_holes(corpus, count)
    runs: list[_Run] = []
    try:
        for weights in formats:
            manager, engine, seconds, built = await start_engine(_variant(hub, weights))
            # The engine itself, not the supervisor's view of it: on a busy machine a slow
            # answer is a figure to report, not a deadline to enforce.
            raw = getattr(built, "engine", None) or engine
            runs.append(_Run(weights, manager, raw, seconds, list(getattr(raw, "pids", []))))
            print(f"bench engine: {weights} loaded in {seconds:.0f} s", file=sys.stderr,
                  flush=True)
        template = template_for(runs[0].engine.info.template)
        for n, hole in enumerate(holes):
            for run in runs:
                await asyncio.sleep(SETTLE_S)
                await _decode_one(run, hole, n, max_tokens)
                run.answers.append(await fill(run.engine, hole, template, "", n))
            print(f"bench engine: hole {n + 1}/{len(holes)}", file=sys.stderr, flush=True)
    finally:
        for run in runs:
            await run.manager.shutdown()
    return {
        "weights": {run.weights: _summary(run, runs[0], holes) for run in runs},
        "max_tokens": max_tokens,
        "speculation": "none",
    }
