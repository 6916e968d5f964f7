"""One completion request's path, shared by the server and `lsp-copilot complete`.

snapshot -> checks -> typing-through -> context -> cache -> shared generation (merge/reuse)
-> debounce -> engine (streaming, early stop) -> post-processing -> safety.
Cancellation is an exception: it propagates; an engine generation nobody waits for any
more is aborted (``flights.py``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lsp_copilot.acceptance.experiment import Experiment
from lsp_copilot.context.builder import build_context
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.context.result import Context
from lsp_copilot.documents.store import Snapshot
from lsp_copilot.engine.base import Engine, EngineRequest, EngineResult, EngineUnavailable
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.engine.routes import Routes, route_kind
from lsp_copilot.language.trigger import Mode, completion_mode, room_for_block
from lsp_copilot.pipeline.alternatives import Alternatives, distinct
from lsp_copilot.pipeline.completion_cache import CompletionCache, cache_key
from lsp_copilot.pipeline.flights import BEFORE_END, Flights, Superseded, whole_cut
from lsp_copilot.pipeline.prompt import cursor_at, prompt_for, prompt_ids
from lsp_copilot.pipeline.scheduling import Debouncer
from lsp_copilot.pipeline.typing_through import TypingThrough
from lsp_copilot.postprocess.brackets import covered
from lsp_copilot.postprocess.checks import Candidate, PostProcessor, Target
from lsp_copilot.postprocess.cursor_text import Cursor
from lsp_copilot.postprocess.safety import Finding, SafetyChecker
from lsp_copilot.postprocess.stop import continuation, stop_rule
from lsp_copilot.privacy import Privacy
from lsp_copilot.privacy.redact import Redactor
from lsp_copilot.prompts.templates import Template
from lsp_copilot.settings.completion import CompletionSettings
from lsp_copilot.settings.context import ContextSettings
from lsp_copilot.settings.engine import EngineSettings
from lsp_copilot.settings.general import GeneralSettings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.settings.layers import RequestSettings
from lsp_copilot.settings.privacy import PrivacySettings
from lsp_copilot.telemetry import Telemetry

log = logging.getLogger(__name__)


class RequestIds:
    """The ids of the requests sent to one set of engines: one counter for completions and
    warm-ups alike (an engine refuses a second request under an id still in use). The
    server's Completer owns it; Completers that share engines share it."""

    def __init__(self) -> None:
        self._next = itertools.count(1)

    def new(self, kind: str = "") -> str:
        """``lsp-copilot-7``; ``lsp-copilot-warm-8`` for ``kind="warm"``."""
        number = next(self._next)
        return f"lsp-copilot-{kind}-{number}" if kind else f"lsp-copilot-{number}"


@dataclass(kw_only=True)
class Outcome:
    """A finished completion; ``reason`` says why ``text`` is empty when it is. Built with
    keywords only: a dozen fields in a row are easy to misplace."""

    text: str
    mode: Mode
    timings_ms: dict[str, float] = field(default_factory=dict)
    reason: str | None = None
    context: Context | None = None
    source: str = "engine"  # engine | cache | typed_through | merged | none
    raw: str = ""  # the model's text before post-processing (for `bench quality`)
    safety: tuple[Finding, ...] = ()  # findings shown with a warning (`safety`)
    warnings: tuple[str, ...] = ()  # messages the editor has not shown for them yet
    route: str | None = None  # "main" or the model of the route that answered
    template: str = ""  # the prompt family used (acceptance is broken down by it)
    arm: str = ""  # the `experiment` arm whose settings answered ("" without one)
    id: str = ""  # the suggestion's id in feedback (set when it is offered to the editor)
    alternatives: list[str] = field(default_factory=list)  # explicit requests' other items
    alternative_ids: list[str] = field(default_factory=list)  # their ids in feedback
    # Per item (text, then alternatives): the characters right of the cursor it takes over
    # (closers the editor inserted that it writes again, ``brackets.covered``).
    replaces: tuple[int, ...] = ()


def _no_suggestion(mode: Mode, reason: str, context: Context | None = None) -> Outcome:
    """No suggestion, for ``reason``."""
    return Outcome(text="", mode=mode, reason=reason, context=context, source="none")


def _line_before(snapshot: Snapshot, offset: int) -> str:
    """The cursor's line up to ``offset``: a suggestion is checked for secrets with it."""
    start = snapshot.data.rfind(b"\n", 0, offset) + 1
    return snapshot.data[start:offset].decode("utf-8", "replace")


def _common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low] and a[:high] != b[:high]
    while high - low > 1:
        mid = (low + high) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid
    return low


def _max_tokens(settings: CompletionSettings, mode: Mode, cursor: Cursor) -> int:
    """A single line stops at its end; the larger limit lets a block header that would
    stand alone get its body (see postprocess.stop_rule)."""
    if mode != "single-line":
        return settings.max_tokens_multi_line
    if cursor.line_after.strip():
        return settings.max_tokens_single_line
    return max(settings.max_tokens_single_line, settings.max_tokens_multi_line)


class Completer:
    """Runs completions; per-request scheduling (supersede) sits in front of it."""

    def __init__(
        self,
        engines: EngineManager,
        telemetry: Telemetry,
        settings: SettingsHub,
        cache: Callable[[], CompletionCache | None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
        routes: Routes | None = None,
        context_builder: Callable[..., Context] = build_context,
        request_ids: RequestIds | None = None,
    ) -> None:
        self.routes = routes or Routes(engines)
        self.telemetry = telemetry
        self.settings = self._follow(settings)  # the groups a request reads, kept current
        self._cache = cache
        self.debouncer = Debouncer(clock)
        self.flights = Flights(telemetry)
        self.typing_through = TypingThrough()
        self._secret: dict[tuple[str, int], str | None] = {}
        self._last_ids: tuple[int, ...] = ()  # the last engine prompt (for the trace)
        self.request_ids = request_ids or RequestIds()  # the warm-up takes its ids here too
        self.privacy = Privacy()  # the server installs the user's rules
        # Secrets in prompts become placeholders; it keeps each line's answer.
        self.redactor = Redactor()
        self.flights.cacheable_text = lambda text: self.redactor.holds_secret(text) is None
        self.safety = SafetyChecker()
        self.workspace: Workspace | None = None  # index, open buffers, edits (context engine)
        self.experiment: Experiment | None = None  # the server builds it from the settings
        # How a prompt's context is built: the layered context, or another recipe to
        # compare it with on the same path (a prefix-only baseline).
        self.context_builder = context_builder

    def _follow(self, hub: SettingsHub) -> RequestSettings:
        """Subscribe to the groups a request reads; their values now."""
        return RequestSettings(
            hub.on_change(GeneralSettings, lambda g: self._use(general=g)),
            hub.on_change(EngineSettings, lambda g: self._use(engine=g)),
            hub.on_change(ContextSettings, lambda g: self._use(context=g)),
            hub.on_change(CompletionSettings, lambda g: self._use(completion=g)),
            hub.on_change(PrivacySettings, lambda g: self._use(privacy=g)))

    def _use(self, **groups: Any) -> None:
        self.settings = dataclasses.replace(self.settings, **groups)

    @property
    def queue_depth(self) -> int:
        """Engine generations in flight (documents whose generation is under way)."""
        return self.flights.running

    def forget(self, uri: str) -> None:
        """The document closed: free what we keep for it."""
        self.typing_through.forget(uri)
        self.debouncer.forget(uri)
        self._secret = {k: v for k, v in self._secret.items() if k[0] != uri}
        self.flights.forget(uri)

    def secret_reason(self, uri: str, version: int, data: bytes) -> str | None:
        """Why the document must stay private (cached per version: content is scanned)."""
        key = (uri, version)
        if key not in self._secret:
            if len(self._secret) > 256:
                self._secret.clear()
            self._secret[key] = self.privacy.reason(uri, data)
        return self._secret[key]

    def set_privacy(self, privacy: Privacy) -> None:
        """Install new rules (the server's settings changed); the redactor follows when the
        user's content patterns changed."""
        if privacy.content_patterns != self.privacy.content_patterns:
            self.redactor = Redactor(privacy.content_patterns)
        self.privacy, self._secret = privacy, {}

    def is_private(self, uri: str, version: int, data: bytes) -> bool:
        return self.secret_reason(uri, version, data) is not None

    def settings_for(self, snapshot: Snapshot, offset: int) -> tuple[str, RequestSettings]:
        """The `experiment` arm ("" without one) that answers at ``offset``, and its
        settings: each line of a document keeps its arm."""
        if self.experiment is None:
            return "", self.settings
        return self.experiment.choose(snapshot.uri, snapshot.data.count(b"\n", 0, offset))

    def prefer(self, uri: str, text: str) -> None:
        """The user took (part of) ``text``: typing-through continues that suggestion."""
        self.typing_through.prefer(uri, text)

    async def complete(
        self, snapshot: Snapshot, offset: int, *, prefetch: bool = False,
        explicit: bool = False,
    ) -> Outcome:
        """``explicit``: the user asked (triggerKind Invoked): no debounce, no deadline, no
        answer shared from a generation that has one, several lines where the cursor
        stands on an empty line, and the ``explicit`` budget of ``contextBudgets``."""
        trace: dict[str, Any] = {"t": round(time.monotonic(), 4), "uri": snapshot.uri,
                                 "version": snapshot.version, "prefetch": prefetch,
                                 "explicit": explicit, "status": "cancelled"}
        began = time.perf_counter()
        pending: list[asyncio.Task[Any]] = []  # alternatives under way
        try:
            outcome = await self._complete(snapshot, offset, prefetch, explicit, trace, pending)
            trace.update(status="answered", mode=outcome.mode, source=outcome.source,
                         chars=len(outcome.text), reason=outcome.reason,
                         **outcome.timings_ms)
            return outcome
        finally:
            for task in pending:
                task.cancel()  # (done already, unless the request ended first)
            if pending:  # their engine requests are aborted before we return
                await asyncio.wait(pending)
            trace["elapsed_ms"] = round((time.perf_counter() - began) * 1000, 1)
            self.telemetry.trace(trace)

    def _refusal(self, snapshot: Snapshot, settings: GeneralSettings) -> Outcome | None:
        """Why no completion is asked for in this document at all, if so."""
        if not settings.enable:
            return _no_suggestion("none", "disabled by the `enable` setting")
        if not settings.language_enabled(snapshot.language_id):
            self.telemetry.count("disabled_language")
            return _no_suggestion("none", f"completions are off for {snapshot.language_id} "
                                  "(`disabledLanguages`)")
        if snapshot.binary or snapshot.too_large:
            self.telemetry.count("rejected_input")
            return _no_suggestion("none", "binary document" if snapshot.binary
                                  else "larger than maxDocumentBytes")
        if snapshot.out_of_sync is not None:
            self.telemetry.count("out_of_sync")
            return _no_suggestion("none", f"document out of sync: {snapshot.out_of_sync}")
        secret = self.secret_reason(snapshot.uri, snapshot.version, snapshot.data)
        if secret is not None:
            self.telemetry.count("secret_skipped")
            return _no_suggestion("none", f"private file: {secret}")
        return None

    async def _complete(
        self, snapshot: Snapshot, offset: int, prefetch: bool, explicit: bool,
        trace: dict[str, Any], pending: list[asyncio.Task[Any]],
    ) -> Outcome:
        arm, arm_settings = self.settings_for(snapshot, offset)
        settings = arm_settings.completion
        started = time.perf_counter()
        waited = 0.0  # debounce and engine time, excluded from server time
        if not prefetch and not explicit:
            # Every request is a keystroke for the debounce, also those that typing-through,
            # the cache or a shared generation answer (else the next looks like a pause).
            self.debouncer.note(snapshot.uri)
        refused = self._refusal(snapshot, arm_settings.general)
        if refused is not None:
            return refused
        mode = completion_mode(snapshot, offset)
        cursor = cursor_at(snapshot, offset)
        if explicit and mode == "single-line" and not (
                cursor.line_before.strip() or cursor.line_after.strip()) and room_for_block(
                snapshot.data, offset + len(cursor.line_after.encode("utf-8")),
                max(0, len(cursor.line_before) - 1)):
            mode = "multi-line"  # asked on an empty line with room: what the block wants
        if settings.typing_through and not prefetch and not explicit:
            # The rest of the suggestion on screen stays on offer, also where a new one
            # would not be asked for (after a word of it accepted inside a string).
            through = self.typing_through.rest(snapshot, offset)
            if through is not None:
                self.telemetry.server_time((time.perf_counter() - started) * 1000)
                if mode == "none":
                    mode = "multi-line" if "\n" in through else "single-line"
                return self._typed_through_outcome(
                    through, mode, started, covered(through, cursor, cursor.rules))
        if mode == "none":
            self.telemetry.count("empty_mode")
            return _no_suggestion(mode, "no completion at this position")
        trace["mode"] = mode

        try:
            engine, route = self.routes.engine_for(route_kind(mode, explicit, prefetch),
                                                   arm=arm)
        except EngineUnavailable as exc:
            self.telemetry.count("not_ready")
            return _no_suggestion(mode, f"engine not ready: {exc}")

        template, context = prompt_for(
            engine, route, arm_settings, snapshot, offset, cursor, mode, explicit=explicit,
            workspace=self.workspace, build=self.context_builder, redactor=self.redactor)
        if context.redacted:
            self.telemetry.count("secrets_redacted", len(context.redacted))
        self.telemetry.context_built((layer.name, layer.tokens, layer.truncated)
                                     for layer in context.layers)
        cursor = dataclasses.replace(cursor, prompt_headers=context.headers)
        post = PostProcessor(Target(
            mode, cursor, snapshot, offset, self.safety, arm_settings.privacy.safety,
            secret=lambda text: self.redactor.holds_secret(
                text, snapshot.uri, _line_before(snapshot, offset)), typing=not explicit))
        max_tokens = _max_tokens(settings, mode, cursor)
        key = cache_key(engine.info.model, template.name, mode, max_tokens,
                        settings.temperature, context.prompt)
        cache = self._cache() if settings.cache else None
        context_ms = (time.perf_counter() - started) * 1000

        raw: str | None = cache.get(key) if cache is not None else None
        checked: Candidate | None = None  # a merged answer, already through the checks
        source = "cache"
        truncated = False  # (known for the engine's own answers only)
        several = explicit and settings.max_suggestions > 1
        alts: Alternatives | None = None
        if raw is not None:
            self.telemetry.count("cache_hits")
            if several:
                alts = Alternatives(self.flights, engine, self._request(
                    engine, template, context, mode, cursor, max_tokens, settings, prefetch,
                    trace), settings, None)
                pending += alts.pending
        else:
            t_merge = time.perf_counter()
            try:
                got = await self.flights.join(
                    snapshot.uri, context, settings, trace,
                    deadline=0 if prefetch else settings.deadline_ms,
                    cut_whole=whole_cut(post)) if settings.merge and not explicit else None
            except Superseded as why:
                return _no_suggestion(mode, str(why), context)
            waited += (time.perf_counter() - t_merge) * 1000  # waiting on the engine
            checked = post.run(got) if got is not None else None  # (the answer, if kept)
            if checked is not None and not checked.text and not self.flights.asked_alike(
                    snapshot.uri, context.at_cursor()):
                # What the shared generation wrote is no answer here (a fragment, a loop
                # it ended in): the user is still waiting, so ask the engine afresh with
                # what was typed since.
                self.telemetry.count("merged_unusable")
                trace["join_ended"] = "unusable"
                got = checked = None
            if got is not None:
                raw, source = got, "merged"
                self.telemetry.count("merged")
            else:
                if self.queue_depth >= settings.max_queue:
                    self.telemetry.count("overloaded")
                    return _no_suggestion(mode, "too many requests in flight; try again", context)
                t0 = time.perf_counter()
                if not prefetch and not explicit:
                    delay = self.debouncer.delay_ms(
                        snapshot.uri, settings.debounce_mode, settings.debounce_ms,
                        settings.debounce_max_ms, cursor.line_before, cursor.line_after,
                        noted=True)
                    trace["debounce_ms"] = round(delay, 1)
                    if delay > 0:
                        self.telemetry.count("debounced")
                        await asyncio.sleep(delay / 1000)  # a newer keystroke cancels us here
                t_ids = time.perf_counter()
                request = self._request(engine, template, context, mode, cursor, max_tokens,
                                        settings, prefetch, trace)
                encode_ms = (time.perf_counter() - t_ids) * 1000
                waited -= encode_ms  # our own work (vLLM would tokenize in this process too)
                trace["encode_ms"] = round(encode_ms, 2)
                if several:  # they start once this generation's prompt is in the engine
                    alts = Alternatives(self.flights, engine, request, settings, snapshot.uri)
                    pending += alts.pending
                try:
                    result = await self.flights.fly(
                        engine, snapshot.uri, key, mode, request, context.at_cursor(),
                        settings, cache, trace,
                        deadline=0 if prefetch or explicit else settings.deadline_ms,
                        cut_whole=whole_cut(post),
                        continues=continuation(snapshot) if mode == "single-line"
                        and not explicit and not cursor.line_after.strip() else None)
                except Superseded as why:
                    return _no_suggestion(mode, str(why), context)
                waited += (time.perf_counter() - t0) * 1000
                if result is None:
                    return _no_suggestion(mode, "engine error", context)
                if result.extra.get(BEFORE_END):
                    trace["before_end"] = True  # the counts below come with the end
                else:
                    trace.update(prompt_tokens=result.prompt_tokens,
                                 uncached=result.prompt_tokens - result.cached_prompt_tokens,
                                 generated_tokens=result.generated_tokens,
                                 first_token_ms=result.first_token_ms and round(
                                     result.first_token_ms, 1))
                raw, source = result.text, "engine"
                truncated = result.finish_reason == "length"
        first = checked if checked is not None else post.run(raw, truncated)
        self._count_checks(first, prefetch)
        if raw and not first.text:  # why nothing shows (never the text: it is the user's code)
            log.debug("no suggestion at %s v%d: the %s check left nothing of %d characters%s",
                      snapshot.uri, snapshot.version, first.dropped_by, len(raw),
                      " (cut at the token limit)" if truncated else "")
        text, warned, unsafe = first.text, first.warned, first.reason
        alternatives: list[str] = []
        if alts is not None:
            def usable(result: EngineResult) -> str:
                """Through the same checks as the first; offered only when the safety
                check has nothing to say."""
                got = post.run(result.text, result.finish_reason == "length")
                return got.text if got.clean else ""

            # They start when the first has ended and run side by side (see
            # ALTERNATIVES_MIN_WAIT_S for how long they get).
            t_alt = time.perf_counter()
            offered = await alts.texts(t_alt - started, trace, text, usable)
            waited += (time.perf_counter() - t_alt) * 1000
            texts = distinct([text, *offered], settings.max_suggestions)
            if texts and texts[0] != text:  # the first was dropped: an alternative leads
                warned = ()
            text, alternatives = (texts[0], texts[1:]) if texts else ("", [])
            self.telemetry.count("alternatives", len(alternatives))
            trace["alternatives"] = len(alternatives)
        total_ms = (time.perf_counter() - started) * 1000
        self.telemetry.server_time(max(0.0, total_ms - waited))
        timings = {"context": round(context_ms, 2), "engine": round(waited, 2),
                   "total": round(total_ms, 2)}
        self.telemetry.last_timings_ms = timings
        if text and not prefetch:
            self.typing_through.remember(snapshot, offset, (text, *alternatives))
        trace["route"] = route
        return Outcome(
            text=text, mode=mode, timings_ms=timings,
            reason=None if text else unsafe or "the model gave nothing usable",
            context=context, source=source, raw=raw, safety=warned,
            warnings=tuple(f.message() for f in warned
                           if not prefetch and self.safety.first_warning(snapshot.uri, f)),
            route=route, template=template.name, arm=arm, alternatives=alternatives,
            replaces=tuple(post.covered(t) for t in (text, *alternatives)))

    def _count_checks(self, candidate: Candidate, prefetch: bool) -> None:
        """What the checks did to the first answer, in the stats (a prefetched answer is
        checked again when it is shown, and counted then)."""
        if candidate.dropped_by == "whole":
            self.telemetry.count("not_whole")  # the text rules kept it; the syntax did not
        if candidate.dropped_by == "secret":
            self.telemetry.count("secret_dropped")
            return
        if prefetch:
            return
        for finding in candidate.blocked:
            self.telemetry.safety_finding(finding.rule, "blocked")
        for finding in candidate.warned:
            self.telemetry.safety_finding(finding.rule, "warned")
        self.telemetry.count("safety_blocked", int(bool(candidate.blocked)))
        self.telemetry.count("safety_warned", int(bool(candidate.warned)))

    def _request(self, engine: Engine, template: Template, context: Context, mode: Mode,
                 cursor: Cursor, max_tokens: int, settings: CompletionSettings, prefetch: bool,
                 trace: dict[str, Any]) -> EngineRequest:
        """The engine request for ``context``: token ids, stop rules, priority."""
        encoded = prompt_ids(engine, template, context)
        if encoded is not None and encoded.escaped:
            self.telemetry.count("escaped_special_tokens", encoded.escaped)
        if encoded is not None and self.telemetry.tracing:  # what the last call lacked
            trace["new_tokens"] = len(encoded.ids) - _common_prefix(encoded.ids, self._last_ids)
            self._last_ids = encoded.ids
        return EngineRequest(
            request_id=self.request_ids.new(),
            prompt=context.prompt,
            max_tokens=max_tokens,
            temperature=settings.temperature,
            priority=2 if prefetch else (0 if mode == "single-line" else 1),
            stop=template.stop,
            stop_at=stop_rule(mode, cursor),
            prompt_token_ids=encoded.ids if encoded is not None else None,
            stop_token_ids=encoded.stop_ids if encoded is not None else (),
        )

    def _typed_through_outcome(self, text: str, mode: Mode, started: float,
                               replaces: int) -> Outcome:
        self.telemetry.count("typed_through")
        ms = round((time.perf_counter() - started) * 1000, 2)
        return Outcome(text=text, mode=mode,
                       timings_ms={"context": 0.0, "engine": 0.0, "total": ms},
                       reason=None, context=None, source="typed_through",
                       replaces=(replaces,))
