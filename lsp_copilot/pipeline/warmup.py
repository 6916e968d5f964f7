"""Warm-up: prefill an opened document's prompt while the engine is idle (llama.vim's idea).

The first completion in a document otherwise pays a cold prefill of the whole prompt
(about 1 s for 1,000 tokens on 2 CPU cores). On open we do not know where the cursor
will be, so we warm the prompt of a line typed at the end of the document: measured on
30 files of Python's standard library, that prompt shares 99% of its (32-token block)
tokens with the first completion when the user appends code, while warming the start,
middle or the line after the imports shared 1-2% there; at a random line every choice
shares little (6-13%), because the enclosing function goes first in the prompt.

A warm-up must never delay a real request: it runs at the lowest engine priority, only
when no generation is in flight, and in chunks of a few hundred tokens (each chunk one
request with ``max_tokens=1`` whose output is discarded; the next one finds the previous
chunks in the prefix cache), so a real request waits for at most one chunk; any real
request cancels it (blocks already computed stay in the cache).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsp_copilot.documents.store import Snapshot
from lsp_copilot.engine.base import Engine, EngineRequest, EngineUnavailable
from lsp_copilot.engine.routes import MAIN
from lsp_copilot.language.trigger import completion_mode
from lsp_copilot.pipeline.prompt import cursor_at, prompt_for, prompt_ids
from lsp_copilot.settings.completion import CompletionSettings
from lsp_copilot.settings.general import GeneralSettings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.telemetry import Telemetry

if TYPE_CHECKING:
    from lsp_copilot.pipeline.completer import Completer

log = logging.getLogger(__name__)

PRIORITY = 10
"""vLLM serves lower numbers first: real requests use 0-2."""
CHUNK_TOKENS = 256
"""Tokens prefilled per warm-up request (a multiple of the cache block): the longest a
real request can wait for one."""


def warm_offset(snapshot: Snapshot) -> int:
    """Where the first completion most likely is: a line typed at the end of the document."""
    return len(snapshot.data)


def chunks(prompt: str, count: Callable[[str], int], size: int = CHUNK_TOKENS) -> list[str]:
    """Growing prefixes of ``prompt`` cut at line ends, about ``size`` tokens apart (for
    engines that take text; with token ids the prefixes are cut from the ids).

    Cut at newlines, so each prefix tokenizes like the start of the whole prompt and the
    next request finds its blocks in the prefix cache. The last prefix is the prompt.
    """
    out: list[str] = []
    tokens = 0
    end = 0
    for line in prompt.splitlines(keepends=True):
        end += len(line)
        tokens += count(line)
        if tokens >= size and end < len(prompt):
            out.append(prompt[:end])
            tokens = 0
    out.append(prompt)
    return out


class Warmer:
    """At most one warm-up at a time, for the document opened last."""

    def __init__(self, completer: Completer, telemetry: Telemetry,
                 settings: SettingsHub) -> None:
        self._completer = completer
        self._telemetry = telemetry
        self._general = settings.on_change(GeneralSettings, self._use_general)
        self._warm_up = settings.on_change(CompletionSettings, self._use_completion).warm_up
        self._task: asyncio.Task[None] | None = None

    def _use_general(self, general: GeneralSettings) -> None:
        self._general = general

    def _use_completion(self, completion: CompletionSettings) -> None:
        self._warm_up = completion.warm_up

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def opened(self, snapshot: Snapshot) -> None:
        """A document opened: warm it up in the background when the engine is idle."""
        general = self._general
        if (not (general.enable and self._warm_up) or snapshot.binary or snapshot.too_large
                or snapshot.out_of_sync is not None
                or not general.language_enabled(snapshot.language_id)):
            return  # (a language without completions needs no warm cache either)
        if self._completer.is_private(snapshot.uri, snapshot.version, snapshot.data):
            return  # never sent to the model, not even to warm its cache
        self.cancel()  # the document opened last is the one the user looks at
        self._task = asyncio.ensure_future(self._run(snapshot))

    def cancel(self) -> None:
        """A real request arrived (or the document changed focus): stop at once."""
        if self.running:
            assert self._task is not None
            self._task.cancel()

    async def _run(self, snapshot: Snapshot) -> None:
        routes = self._completer.routes  # warm the engine that answers typing
        manager = routes.manager_for("singleLine")
        if manager.state == "loading":
            await manager.wait_ready()
        try:
            engine, route = routes.engine_for("singleLine", count=False)
        except EngineUnavailable:
            return
        if self._completer.queue_depth:
            return  # the engine is busy with the user's requests: they matter more
        try:
            done = await self.prefill(engine, snapshot, route)
        except asyncio.CancelledError:
            self._telemetry.count("warm_up_aborted")
            raise
        except Exception:
            log.exception("warm-up of %s failed", snapshot.uri)
            return
        self._telemetry.count("warmed_up" if done else "warm_up_aborted")

    def _prompt(self, engine: Engine, snapshot: Snapshot, route: str = MAIN
               ) -> tuple[str, tuple[int, ...] | None]:
        """The prompt the Completer will send for a line typed at ``warm_offset`` on
        ``route``'s ``engine``: its text, and its token ids when the engine takes ids (as
        the Completer then sends them)."""
        offset = warm_offset(snapshot)
        mode = completion_mode(snapshot, offset)
        # At a line start this is the base that the Completer's prompts for the lines typed
        # there extend (build_context keeps it for them).
        template, context = prompt_for(
            engine, route, self._completer.settings_for(snapshot, offset)[1], snapshot, offset,
            cursor_at(snapshot, offset),
            "multi-line" if mode == "none" else mode, workspace=self._completer.workspace,
            build=self._completer.context_builder, redactor=self._completer.redactor)
        encoded = prompt_ids(engine, template, context)
        return context.prompt, encoded.ids if encoded is not None else None

    async def prefill(self, engine: Engine, snapshot: Snapshot, route: str = MAIN) -> bool:
        """Prefill chunk by chunk; False when a real generation started meanwhile."""
        text, ids = self._prompt(engine, snapshot, route)
        parts: list[tuple[str, tuple[int, ...] | None]]
        if ids:  # exact prefixes of the ids, a whole number of cache blocks apart
            ends = [*range(CHUNK_TOKENS, len(ids), CHUNK_TOKENS), len(ids)]
            parts = [(text, ids[:end]) for end in ends]
        else:
            parts = [(part, None) for part in chunks(text, engine.counter.count)]
        for prompt, chunk_ids in parts:
            if self._completer.queue_depth:
                return False
            await engine.generate(EngineRequest(
                request_id=self._completer.request_ids.new("warm"), prompt=prompt, max_tokens=1,
                priority=PRIORITY, prompt_token_ids=chunk_ids))
        return True
