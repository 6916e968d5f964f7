"""Single-line holes cut from real code, and an engine to fill them: what ``bench prompt``,
``bench engine`` and ``bench engine --weights`` share."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from lsp_copilot.context.builder import build_context
from lsp_copilot.documents.store import DocumentStore, Snapshot
from lsp_copilot.engine.base import Engine, EngineRequest
from lsp_copilot.engine.factory import EngineFactory, Reporter
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.language.ids import language_id_for_path
from lsp_copilot.postprocess.checks import finalize
from lsp_copilot.postprocess.cursor_text import Cursor
from lsp_copilot.postprocess.stop import stop_rule
from lsp_copilot.prompts.templates import Template
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.settings.layers import EngineSetup
from lsp_copilot_bench.corpus import python_files
from lsp_copilot_bench.holes import LineRule, pick_line

PROMPT_LINES = LineRule(after_row=20, max_chars=80, prose=("#", '"', "'"))


@dataclass(frozen=True)
class Hole:
    snapshot: Snapshot
    offset: int
    expected: str
    cursor: Cursor


def cut_holes(corpus: Path, count: int, seed: int = 0) -> list[Hole]:
    """Single-line holes: the rest of a line of real code, cut after its first token."""
    rng = random.Random(seed)
    files = python_files(corpus, 2_000, 200_000, lambda p: "test" in p.parts)
    rng.shuffle(files)
    store = DocumentStore()
    holes: list[Hole] = []
    for path in files:
        if len(holes) >= count:
            break
        text = path.read_text("utf-8", "replace")
        lines = text.split("\n")
        got = pick_line(lines, rng, PROMPT_LINES)
        if got is None:
            continue
        i, cut = got
        line = lines[i]
        uri = path.as_uri()
        store.open(uri, language_id_for_path(str(path)), 1, text)
        offset = store.get_offset(uri, i, cut, "utf-32")
        holes.append(Hole(store.snapshot(uri), offset, line[cut:].strip(),
                          Cursor(line[:cut], line[cut:])))
        store.close(uri)
    return holes


async def fill(engine: Engine, hole: Hole, template: Template, header: str, n: int) -> str:
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


def line_start(hole: Hole) -> int:
    return hole.snapshot.data.rfind(b"\n", 0, hole.offset) + 1


class BuiltEngine:
    """The real engine factory, keeping the engine it built: ``bench engine`` empties
    vLLM's prefix cache between runs, which nothing in the pipeline does."""

    def __init__(self) -> None:
        self.engine: Engine | None = None

    def __call__(self, settings: EngineSetup, report: Reporter) -> Engine:
        self.engine = EngineFactory()(settings, report)
        return self.engine


async def start_engine(hub: SettingsHub) -> tuple[EngineManager, Engine, float, BuiltEngine]:
    built = BuiltEngine()
    manager = EngineManager(built)
    result = await manager.start(hub.settings.engine_setup)
    if not result.ok:
        raise SystemExit(f"error: the engine could not start: {result.message}")
    return manager, manager.engine(), result.seconds, built
