"""The completion pipeline shared by the server and `lsp-copilot complete`.

snapshot -> mode -> context -> prompt -> engine (streaming, early stop) -> post-processing.
Cancellation is an exception: it aborts the engine request and propagates.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lsp_copilot.config import Settings
from lsp_copilot.context import Context, build_context
from lsp_copilot.context.trigger import Mode, completion_mode
from lsp_copilot.documents.store import Snapshot
from lsp_copilot.engine.base import EngineRequest, EngineUnavailable
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.postprocess import Cursor, finalize, stop_rule
from lsp_copilot.prompts import template_for
from lsp_copilot.telemetry import Telemetry

log = logging.getLogger(__name__)
_ids = itertools.count(1)


@dataclass
class Outcome:
    """A finished completion; ``reason`` says why ``text`` is empty when it is."""

    text: str
    mode: Mode
    timings_ms: dict[str, float] = field(default_factory=dict)
    reason: str | None = None
    context: Context | None = None


def _cursor(snapshot: Snapshot, offset: int) -> Cursor:
    data = snapshot.data
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    end = len(data) if end < 0 else end
    return Cursor(
        line_before=data[start:offset].decode("utf-8", "replace"),
        line_after=data[offset:end].decode("utf-8", "replace").rstrip("\r"),
    )


class Completer:
    """Runs one completion end to end; scheduling (debounce, supersede) sits in front."""

    def __init__(
        self, engines: EngineManager, telemetry: Telemetry, settings: Callable[[], Settings]
    ) -> None:
        self.engines = engines
        self.telemetry = telemetry
        self._settings = settings

    async def complete(self, snapshot: Snapshot, offset: int) -> Outcome:
        settings = self._settings()
        started = time.perf_counter()
        if not settings.enable:
            return Outcome("", "none", reason="disabled by the `enable` setting")
        if snapshot.binary:
            self.telemetry.count("rejected_input")
            return Outcome("", "none", reason="binary document")
        if snapshot.too_large:
            self.telemetry.count("rejected_input")
            return Outcome("", "none", reason="document larger than maxDocumentBytes")
        mode = completion_mode(snapshot, offset)
        if mode == "none":
            self.telemetry.count("empty_mode")
            return Outcome("", mode, reason="no completion at this position")
        try:
            engine = self.engines.engine()
        except EngineUnavailable as exc:
            self.telemetry.count("not_ready")
            return Outcome("", mode, reason=f"engine not ready: {exc}")

        cursor = _cursor(snapshot, offset)
        prompt_offset = offset
        if cursor.line_before and not cursor.line_before.strip():
            # End the prompt at the line start: models write indentation better than they
            # continue after trailing spaces (SmolLM2 answers a bare newline there).
            prompt_offset = offset - len(cursor.line_before.encode())
            cursor = Cursor(cursor.line_before, cursor.line_after, cursor.line_before)
        template = template_for(None)
        context = build_context(
            snapshot, prompt_offset, engine.counter, template, settings.max_prompt_tokens, mode
        )
        context_done = time.perf_counter()
        request = EngineRequest(
            request_id=f"lsp-copilot-{next(_ids)}",
            prompt=context.prompt,
            max_tokens=(
                settings.max_tokens_single_line
                if mode == "single-line"
                else settings.max_tokens_multi_line
            ),
            temperature=settings.temperature,
            priority=0 if mode == "single-line" else 1,
            stop=template.stop,
            stop_at=stop_rule(mode, cursor),
        )
        self.telemetry.count("engine_requests")
        try:
            result = await engine.generate(request)
        except asyncio.CancelledError:
            self.telemetry.count("engine_aborted")
            raise
        except Exception as exc:
            self.telemetry.count("engine_errors")
            log.exception("engine request failed")
            return Outcome("", mode, reason=f"engine error: {exc}", context=context)
        engine_done = time.perf_counter()
        self.telemetry.count("prompt_tokens", result.prompt_tokens)
        self.telemetry.count("cached_prompt_tokens", result.cached_prompt_tokens)
        self.telemetry.count("generated_tokens", result.generated_tokens)
        if result.stopped_early:
            self.telemetry.count("engine_stopped_early")
        text = finalize(result.text, mode, cursor)
        timings = {
            "context": round((context_done - started) * 1000, 2),
            "engine": round((engine_done - context_done) * 1000, 2),
            "total": round((time.perf_counter() - started) * 1000, 2),
        }
        if result.first_token_ms is not None:
            timings["first_token"] = round(result.first_token_ms, 2)
        self.telemetry.last_timings_ms = timings
        return Outcome(
            text, mode, timings, None if text else "the model gave nothing usable", context
        )
