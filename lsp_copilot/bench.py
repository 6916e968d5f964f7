"""`lsp-copilot bench`: measurements through the real engine, printed as tables.

- ``bench engine``: load time, time to first token, decode speed, prefix-cache reuse.
- ``bench prompt``: which prompt format the model completes best, side by side in one run
  on holes cut from real code (the default corpus is Python's own standard library).
"""

from __future__ import annotations

import asyncio
import difflib
import random
import statistics
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_copilot.config import Settings
from lsp_copilot.context import build_context
from lsp_copilot.documents.languages import language_id_for_path
from lsp_copilot.documents.store import DocumentStore, Snapshot
from lsp_copilot.engine.base import Engine, EngineRequest
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.postprocess import Cursor, finalize, stop_rule
from lsp_copilot.prompts import Template, template_for


def default_corpus() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


@dataclass(frozen=True)
class Hole:
    snapshot: Snapshot
    offset: int
    expected: str
    cursor: Cursor


def cut_holes(corpus: Path, count: int, seed: int = 0) -> list[Hole]:
    """Single-line holes: the rest of a line of real code, cut after its first token."""
    rng = random.Random(seed)
    files = sorted(p for p in corpus.rglob("*.py") if "test" not in p.parts
                   and 2_000 < p.stat().st_size < 200_000)
    rng.shuffle(files)
    store = DocumentStore()
    holes: list[Hole] = []
    for path in files:
        if len(holes) >= count:
            break
        text = path.read_text("utf-8", "replace")
        lines = text.split("\n")
        candidates = [
            i for i, line in enumerate(lines)
            if 20 <= len(line.strip()) <= 80 and not line.strip().startswith(("#", '"', "'"))
            and i > 20
        ]
        if not candidates:
            continue
        i = rng.choice(candidates)
        line = lines[i]
        stripped = line.lstrip()
        cut = len(line) - len(stripped) + max(1, stripped.find(" ") + 1 or len(stripped) // 3)
        uri = path.as_uri()
        store.open(uri, language_id_for_path(str(path)), 1, text)
        offset = store.get_offset(uri, i, cut, "utf-32")
        holes.append(Hole(store.snapshot(uri), offset, line[cut:].strip(),
                          Cursor(line[:cut], line[cut:])))
        store.close(uri)
    return holes


def edit_similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b).ratio()


async def _fill(engine: Engine, hole: Hole, template: Template, header: str, n: int) -> str:
    # The hole's own line after the cursor is what we predict: hide it from the suffix.
    data = hole.snapshot.data
    line_end = data.find(b"\n", hole.offset)
    masked = data[: hole.offset] + (data[line_end:] if line_end >= 0 else b"")
    snap = Snapshot(**{**hole.snapshot.__dict__, "data": masked,
                       "text": masked.decode("utf-8", "replace")})
    ctx = build_context(snap, hole.offset, engine.counter, template, 1024, "single-line")
    cursor = Cursor(hole.cursor.line_before, "")
    prompt = header + ctx.prompt
    result = await engine.generate(EngineRequest(
        request_id=f"bench-{n}", prompt=prompt, max_tokens=48, stop=template.stop,
        stop_at=stop_rule("single-line", cursor)))
    return finalize(result.text, "single-line", cursor)


async def _start(settings: Settings) -> tuple[EngineManager, Engine, float]:
    manager = EngineManager()
    result = await manager.start(settings)
    if not result.ok:
        raise SystemExit(f"error: the engine could not start: {result.message}")
    return manager, manager.engine(), result.seconds


async def bench_prompt(corpus: Path, count: int, settings: Settings) -> list[dict[str, Any]]:
    holes = cut_holes(corpus, count)
    manager, engine, _ = await _start(settings)
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
                got = await _fill(engine, hole, template, header, n)
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


async def bench_engine(corpus: Path, count: int, settings: Settings) -> dict[str, Any]:
    holes = cut_holes(corpus, count)
    manager, engine, load_seconds = await _start(settings)
    first_tokens, decode_rates, cached_share = [], [], []
    try:
        template = template_for(None)
        for n, hole in enumerate(holes):
            ctx = build_context(hole.snapshot, hole.offset, engine.counter, template, 1024,
                                "multi-line")
            started = time.perf_counter()
            result = await engine.generate(EngineRequest(
                request_id=f"bench-engine-{n}", prompt=ctx.prompt, max_tokens=64))
            total_ms = (time.perf_counter() - started) * 1000
            if result.first_token_ms is not None:
                first_tokens.append(result.first_token_ms)
                decode_ms = total_ms - result.first_token_ms
                if result.generated_tokens > 1 and decode_ms > 0:
                    decode_rates.append((result.generated_tokens - 1) / decode_ms * 1000)
            # The same prompt again: how much of it the prefix cache serves.
            again = await engine.generate(EngineRequest(
                request_id=f"bench-engine-{n}-again", prompt=ctx.prompt, max_tokens=1))
            if again.prompt_tokens:
                cached_share.append(again.cached_prompt_tokens / again.prompt_tokens)
        spec = engine.stats()
    finally:
        await manager.shutdown()
    return {
        "load_seconds": round(load_seconds, 1),
        "requests": len(holes),
        "first_token_ms_p50": round(statistics.median(first_tokens), 1) if first_tokens else None,
        "decode_tokens_per_s": round(statistics.mean(decode_rates), 1) if decode_rates else None,
        "repeat_prompt_cached_share": round(statistics.mean(cached_share), 3)
        if cached_share else None,
        "spec_draft_tokens": spec.get("spec_draft_tokens"),
        "spec_accepted_tokens": spec.get("spec_accepted_tokens"),
        "engine": engine.info.as_dict(),
    }


def run(what: str, corpus: Path | None, count: int, model: str | None) -> Any:
    settings = Settings(model=model or "")
    corpus = corpus or default_corpus()
    if what == "prompt":
        return asyncio.run(bench_prompt(corpus, count, settings))
    return asyncio.run(bench_engine(corpus, count, settings))
