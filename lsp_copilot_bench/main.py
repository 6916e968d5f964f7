"""`lsp-copilot bench`: measurements through the real engine, printed as tables.

- ``bench engine``: decode speed with and without speculation (two engine loads, the same
  prompts) and its acceptance rate; prefix-cache hits over a typing replay; time to first
  token of a document's first completion, cold and after the warm-up.
- ``bench engine --weights bf16,int8``: the same preset with other weights, side by side
  (lsp_copilot_bench/weights.py).
- ``bench prompt``: which prompt format the model completes best, side by side in one run
  on holes cut from real code (the default corpus is Python's own standard library).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_copilot.context.builder import build_context
from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.engine.base import Engine, EngineRequest
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.prompts.templates import template_for
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.telemetry import Telemetry
from lsp_copilot_bench.corpus import default_corpus
from lsp_copilot_bench.line_holes import Hole, cut_holes, fill, line_start, start_engine
from lsp_copilot_bench.metrics import edit_similarity, median, share


@dataclass
class _Recorder(Telemetry):
    """Telemetry that keeps the Completer's per-request trace records."""

    records: list[dict[str, Any]] = field(default_factory=list)

    def trace(self, record: Mapping[str, object]) -> None:
        self.records.append(dict(record))


async def bench_prompt(corpus: Path, count: int, hub: SettingsHub) -> list[dict[str, Any]]:
    holes = cut_holes(corpus, count)
    manager, engine, _, _ = await start_engine(hub)
    variants = [
        ("prefix-only", template_for("prefix-only"), False),
        ("prefix-only + <filename>", template_for("prefix-only"), True),
        ("starcoder-fim", template_for("starcoder-fim"), False),
    ]
    rows = []
    try:
        for name, template, with_header in variants:
            exact, sims, empty = 0, [], 0
            started = time.perf_counter()
            for n, hole in enumerate(holes):
                header = f"<filename>{Path(hole.snapshot.uri).name}\n" if with_header else ""
                got = await fill(engine, hole, template, header, n)
                exact += got.strip() == hole.expected
                sims.append(edit_similarity(got.strip(), hole.expected))
                empty += not got.strip()
            rows.append({
                "prompt": name, "holes": len(holes),
                "exact_match": round(exact / len(holes), 3),
                "edit_similarity": round(statistics.mean(sims), 3),
                "empty": round(empty / len(holes), 3),
                "seconds": round(time.perf_counter() - started, 1),
            })
    finally:
        await manager.shutdown()
    return rows


def _spec_counters() -> dict[str, float]:
    """vLLM's speculative-decoding counters (drafts, draft tokens, accepted tokens)."""
    out = {"drafts": 0.0, "draft_tokens": 0.0, "accepted_tokens": 0.0}
    try:
        from vllm.v1.metrics.reader import Counter, get_metrics_snapshot
    except ImportError:
        return out
    names = {"vllm:spec_decode_num_drafts": "drafts",
             "vllm:spec_decode_num_draft_tokens": "draft_tokens",
             "vllm:spec_decode_num_accepted_tokens": "accepted_tokens"}
    for metric in get_metrics_snapshot():
        if isinstance(metric, Counter) and metric.name in names:
            out[names[metric.name]] = float(metric.value)
    return out


def _engine_cpu_seconds() -> float:
    """CPU seconds used so far by this process and its children (EngineCore, workers).

    On a shared machine wall time depends on what else runs; the CPU time the engine
    spends per token does much less, so both are reported.
    """
    import psutil

    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


async def _decode(engine: Engine, holes: list[Hole], max_tokens: int) -> dict[str, Any]:
    """Greedy multi-line generations from real code: decode speed and speculation.

    The prompt is the pipeline's (context engine, 1,024 tokens) at the start of a line of
    real code; generation runs to ``max_tokens`` with no stop, so every request decodes the
    same number of tokens whatever the method.
    """
    template = template_for(None)
    before = _spec_counters()
    decode_tokens, decode_ms, first_tokens = 0, 0.0, []
    generated, cpu_before = 0, _engine_cpu_seconds()
    for n, hole in enumerate(holes):
        ctx = build_context(hole.snapshot, line_start(hole), engine.counter, template, 1024,
                            "multi-line")
        started = time.perf_counter()
        result = await engine.generate(EngineRequest(
            request_id=f"bench-decode-{n}", prompt=ctx.prompt, max_tokens=max_tokens,
            temperature=0.0))
        total_ms = (time.perf_counter() - started) * 1000
        generated += result.generated_tokens
        if result.first_token_ms is not None and result.generated_tokens > 1:
            first_tokens.append(result.first_token_ms)
            decode_tokens += result.generated_tokens - 1
            decode_ms += total_ms - result.first_token_ms
    cpu = _engine_cpu_seconds() - cpu_before
    after = _spec_counters()
    spec = {k: after[k] - before[k] for k in after}
    return {
        "decode_tokens_per_s": round(decode_tokens / decode_ms * 1000, 1) if decode_ms else None,
        "decoded_tokens": decode_tokens,
        # Prefill included (the same prompts in every run): robust to other load.
        "tokens_per_cpu_second": round(generated / cpu, 1) if cpu > 0 else None,
        "first_token_ms_p50": median(first_tokens),
        "draft_tokens": int(spec["draft_tokens"]),
        "accepted_tokens": int(spec["accepted_tokens"]),
        "acceptance_rate": share(spec["accepted_tokens"], spec["draft_tokens"]),
        # Tokens per verification step: 1 (the target's own) + the accepted drafts.
        "mean_acceptance_length": round(1 + spec["accepted_tokens"] / spec["drafts"], 2)
        if spec["drafts"] else None,
    }


def _completer(manager: EngineManager, hub: SettingsHub, telemetry: Telemetry) -> Any:
    from lsp_copilot.pipeline.completer import Completer

    # One engine call per keystroke: no debounce, merge, typing-through or cache.
    return Completer(manager, telemetry, hub.replaced(
        debounce_mode="off", merge=False, typing_through=False, cache=False, prefetch=False,
        max_tokens_single_line=4, max_tokens_multi_line=4, warm_up=False))


async def _typing(manager: EngineManager, hub: SettingsHub, corpus: Path,
                  keystrokes: int) -> dict[str, Any]:
    """Type real functions key by key (typos fixed with backspace), one request per key:
    how much of the prompt tokens vLLM's prefix cache serves."""
    from lsp_copilot_bench.typing_replay import make_scripts

    completer = _completer(manager, hub, Telemetry())
    store = DocumentStore()
    keys = 0
    for script in make_scripts(corpus, keystrokes):
        text = script.before
        store.open(script.uri, "python", 1, text)
        for version, key in enumerate(script.keys, start=2):
            text = text[:-1] if key.text is None else text + key.text
            store.change(script.uri, version, [(None, text)], "utf-16")
            snapshot = store.snapshot(script.uri)
            await completer.complete(snapshot, len(snapshot.data))
            keys += 1
        store.close(script.uri)
    counters = completer.telemetry.counters
    prompt, cached = counters["prompt_tokens"], counters["cached_prompt_tokens"]
    return {"keystrokes": keys, "engine_requests": counters["engine_requests"],
            "prompt_tokens": prompt, "cached_prompt_tokens": cached,
            "cached_share": share(cached, prompt)}


async def _first_token(manager: EngineManager, engine: Engine, built: Engine | None,
                       hub: SettingsHub, corpus: Path, documents: int) -> dict[str, Any]:
    """Time to first token of a document's first completion, cold and after the warm-up.

    Each document: the file up to one of its functions, whose first characters the user
    has typed. The completion runs through the Completer (the server's prompt, as token
    ids), the prefix cache emptied before the cold and before the warm run.
    """
    from lsp_copilot.pipeline.warmup import Warmer
    from lsp_copilot_bench.typing_replay import make_scripts

    llm = getattr(built, "_llm", None)  # vLLM's AsyncLLM, inside the embedded engine
    if llm is None or not hasattr(llm, "reset_prefix_cache"):
        return {"error": "this engine cannot empty its prefix cache"}
    telemetry = _Recorder()
    records = telemetry.records
    completer = _completer(manager, hub, telemetry)
    warmer = Warmer(completer, completer.telemetry, hub)
    store = DocumentStore()
    runs: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": []}
    warm_ms: list[float] = []
    scripts = [s for s in make_scripts(corpus, documents * 600, seed=7) if s.keys][:documents]
    for script in scripts:
        typed = "".join(k.text or "" for k in script.keys[:4] if k.text)
        store.open(script.uri, "python", 1, script.before)
        opened = store.snapshot(script.uri)
        store.change(script.uri, 2, [(None, script.before + typed)], "utf-16")
        snapshot = store.snapshot(script.uri)
        store.close(script.uri)
        for label in ("cold", "warm"):
            await llm.reset_prefix_cache()
            if label == "warm":
                started = time.perf_counter()
                await warmer.prefill(engine, opened)
                warm_ms.append((time.perf_counter() - started) * 1000)
            records.clear()
            await completer.complete(snapshot, len(snapshot.data))
            if records and records[-1].get("first_token_ms") is not None:
                runs[label].append(records[-1])

    def cached(label: str) -> float | None:
        shares = [1 - r["uncached"] / r["prompt_tokens"] for r in runs[label]
                  if r.get("prompt_tokens")]
        return round(statistics.mean(shares), 3) if shares else None

    return {"documents": len(scripts),
            "cold_ms_p50": median([r["first_token_ms"] for r in runs["cold"]]),
            "warm_ms_p50": median([r["first_token_ms"] for r in runs["warm"]]),
            "cold_cached_share": cached("cold"), "warm_cached_share": cached("warm"),
            "warm_up_ms_p50": median(warm_ms)}


async def bench_engine(corpus: Path, count: int, hub: SettingsHub,
                       keystrokes: int = 150, max_tokens: int = 128) -> dict[str, Any]:
    """Speculation on and off (two engine loads, the same prompts), then with the default
    engine a typing replay (prefix-cache hits) and time to first token cold and warm."""
    holes = cut_holes(corpus, count)
    method = hub.settings.speculative_method
    variants = [("ngram" if method == "none" else method, hub)]
    variants.append(("none", hub.replaced(speculative_method="none")))
    out: dict[str, Any] = {}
    for label, variant in variants:
        manager, engine, load_seconds, built = await start_engine(variant)
        try:
            run: dict[str, Any] = {"load_seconds": round(load_seconds, 1)}
            run.update(await _decode(engine, holes, max_tokens))
            print(f"bench engine: {label}: {run}", file=sys.stderr, flush=True)
            if label != "none":
                out["engine"] = engine.info.as_dict()
                out["first_token"] = await _first_token(manager, engine, built.engine, variant,
                                                        corpus, max(3, count // 4))
                print(f"bench engine: {out['first_token']}", file=sys.stderr, flush=True)
                out["typing_replay"] = await _typing(manager, variant, corpus, keystrokes)
            out[f"speculative_{label}"] = run
            print(f"bench engine: {label}: {out}", file=sys.stderr, flush=True)  # progress
        finally:
            await manager.shutdown()
    spec, plain = out[f"speculative_{variants[0][0]}"], out["speculative_none"]
    if spec["decode_tokens_per_s"] and plain["decode_tokens_per_s"]:
        out["speculation_speedup"] = round(
            spec["decode_tokens_per_s"] / plain["decode_tokens_per_s"], 2)
    if spec["tokens_per_cpu_second"] and plain["tokens_per_cpu_second"]:
        out["speculation_speedup_cpu_time"] = round(
            spec["tokens_per_cpu_second"] / plain["tokens_per_cpu_second"], 2)
    return out


def run(what: str, corpus: Path | None, count: int, model: str | None,
        keystrokes: int = 150, weights: list[str] | None = None) -> Any:
    # Each run loads its own engines (loads are measured; nothing stays loaded after).
    hub = SettingsHub.of(model=model or "", engine_shared=False)
    corpus = corpus or default_corpus()
    if what == "prompt":
        return asyncio.run(bench_prompt(corpus, count, hub))
    if weights:  # the same model with other weights, side by side
        from lsp_copilot_bench.weights import bench_weights

        return asyncio.run(bench_weights(corpus, count, hub, weights))
    return asyncio.run(bench_engine(corpus, count, hub, keystrokes))
