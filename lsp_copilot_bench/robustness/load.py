"""Trials (c) and (f): many requests at once, then many over time (memory must not grow)."""

from __future__ import annotations

import asyncio
import random
import time

import psutil

from lsp_copilot_bench.robustness.client import (
    ANSWER_TIMEOUT_S,
    RawClient,
    engine_core_pids,
    suggestion,
)
from lsp_copilot_bench.robustness.trial import SOURCE, Trial, utf16_len


async def trial_burst(client: RawClient, n: int = 200) -> Trial:
    uris = [f"file:///burst/b{i}.py" for i in range(50)]
    for uri in uris:
        client.open(uri, SOURCE.replace("count_words", f"count_{uri[-5:-3]}"))
    await client.drain()
    before = await client.stats()
    last = SOURCE.split("\n")
    line, char = len(last) - 1, utf16_len(last[-1])
    started = time.perf_counter()
    futures = [client.inline(uris[i % len(uris)], line, char) for i in range(n)]
    await client.drain()
    done, pending = await asyncio.wait(futures, timeout=ANSWER_TIMEOUT_S)
    burst_s = time.perf_counter() - started
    t0 = time.perf_counter()
    await client.stats()
    stats_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    fresh = await client.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uris[0]}, "position": {"line": 0, "character": 0},
        "context": {"triggerKind": 1}}, timeout=60)
    after_ms = (time.perf_counter() - t0) * 1000
    after = await client.stats()
    failed = sum(1 for f in done if f.exception() is not None)
    with_text = sum(1 for f in done if f.exception() is None and suggestion(f.result()))
    ok = not pending and not failed and fresh is not None
    for uri in uris:
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return Trial("burst", ok, (
        f"{n} simultaneous requests: {len(done)} answered in {burst_s:.1f} s ({with_text} with "
        f"a suggestion, {failed} errors, {len(pending)} unanswered; overloaded "
        f"+{after['overloaded'] - before['overloaded']}, superseded "
        f"+{after['superseded'] - before['superseded']}); right after: stats in "
        f"{stats_ms:.0f} ms, a new completion in {after_ms:.0f} ms"),
        {"requests": n, "answered": len(done), "unanswered": len(pending),
         "with_suggestion": with_text, "seconds": round(burst_s, 2),
         "stats_ms_after": round(stats_ms, 1), "completion_ms_after": round(after_ms, 1),
         "overloaded": after["overloaded"] - before["overloaded"]})


def _rss(pid: int) -> int:
    return int(psutil.Process(pid).memory_info().rss)


async def trial_soak(client: RawClient, total: int, warm_up: int) -> Trial:
    """Completions over a rotating set of documents, opened and closed as an editor would;
    RSS after the warm-up vs at the end (the engine child measured apart)."""
    rng = random.Random(11)
    variants = [SOURCE.replace("count_words", f"count_{i}") for i in range(8)]
    started = time.perf_counter()
    rss_warm = core_warm = 0
    answered = 0
    batch = 8
    sent = 0
    docs_before = (await client.stats())["documents"]
    while sent < total:
        n = min(batch, total - sent)
        futures = []
        for j in range(n):
            k = sent + j
            uri = f"file:///soak/f{k % 40}_{k // 400}.py"  # a new set of URIs every 400
            text = variants[k % len(variants)]
            client.open(uri, text)
            lines = text.split("\n")
            line = rng.choice([len(lines) - 1, 10, 6])
            char = utf16_len(lines[line])
            futures.append(client.inline(uri, line, char))
        await client.drain()
        done, _ = await asyncio.wait(futures, timeout=ANSWER_TIMEOUT_S)
        for j in range(n):  # closed after the answers: a close cancels what is in flight
            k = sent + j
            client.notify("textDocument/didClose",
                          {"textDocument": {"uri": f"file:///soak/f{k % 40}_{k // 400}.py"}})
        answered += len(done)
        sent += n
        if sent >= warm_up and not rss_warm:
            rss_warm = _rss(client.pid)
            core_warm = sum(_rss(p) for p in engine_core_pids(client.pid))
    rss_end = _rss(client.pid)
    core_end = sum(_rss(p) for p in engine_core_pids(client.pid))
    s = await client.stats()
    growth = (rss_end - rss_warm) / rss_warm * 100 if rss_warm else 0.0
    seconds = time.perf_counter() - started
    ok = answered == total and growth <= 10.0 and s["documents"] == docs_before
    return Trial("soak", ok, (
        f"{total} requests ({answered} answered) in {seconds:.0f} s: server RSS "
        f"{rss_warm / 2**20:.0f} MB after {warm_up} -> {rss_end / 2**20:.0f} MB at the end "
        f"({growth:+.1f}%); EngineCore RSS {core_warm / 2**20:.0f} -> {core_end / 2**20:.0f} MB; "
        f"{s['documents']} documents open after closing all (before: {docs_before}); "
        f"cache hits {s['cache_hits']}, engine requests {s['engine_requests']}"),
        {"requests": total, "answered": answered, "rss_warm_mb": round(rss_warm / 2**20, 1),
         "rss_end_mb": round(rss_end / 2**20, 1), "growth_pct": round(growth, 2),
         "engine_core_rss_mb": [round(core_warm / 2**20), round(core_end / 2**20)],
         "seconds": round(seconds, 1)})

