"""The completion pipeline shared by the server and `lsp-copilot complete`.

snapshot -> checks -> typing-through -> context -> cache -> shared flight (merge/reuse)
-> debounce -> engine (streaming, early stop) -> post-processing.
Cancellation is an exception: it propagates; an engine generation nobody waits for any
more is aborted (at once when a request needs something else, after the merge window
when the client cancelled, since the next keystroke's request may still reuse it).
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
from lsp_copilot.context.budgets import budgets_for
from lsp_copilot.context.builder import build_context
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.context.result import Context
from lsp_copilot.documents.store import Snapshot
from lsp_copilot.engine.base import (
    Engine,
    EngineDeadline,
    EngineRequest,
    EngineResult,
    EngineUnavailable,
)
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.engine.routes import MAIN, Routes, route_kind
from lsp_copilot.language.trigger import Mode, completion_mode
from lsp_copilot.pipeline.alternatives import (
    Branch,
    alternative_requests,
    branch_request,
    branches,
    choices_request,
    distinct,
)
from lsp_copilot.pipeline.cache import CompletionCache, cache_key
from lsp_copilot.pipeline.scheduling import Debouncer, Flight
from lsp_copilot.postprocess.cursor import Cursor
from lsp_copilot.postprocess.finalize import finalize
from lsp_copilot.postprocess.safety import Finding, SafetyChecker
from lsp_copilot.postprocess.stop import stop_rule
from lsp_copilot.privacy import Privacy
from lsp_copilot.prompts.templates import Template, template_for
from lsp_copilot.settings.core import Settings
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


@dataclass(frozen=True)
class _Shown:
    """The last suggestion answered for a document, for typing-through."""

    prefix: bytes
    suffix: bytes
    texts: tuple[str, ...]  # the suggestions answered, the one the user took first
    mode: Mode


ALTERNATIVES_WAIT_FACTOR = 3
ALTERNATIVES_MIN_WAIT_S = 5.0
"""Alternatives still running when the first suggestion is ready get three times as long
as it took (they are several continuations side by side, each about as long as the first
answer), and at least this (on two cores, just after the engine loaded, the listing request
and three continuations side by side took over 4 s where the first answer took 2): then
those still running are dropped, the first is never held for the slowest. (They end as
soon as they are done: on a GPU, in a fraction of a second.)"""

JOIN_AHEAD_CHARS = 1
"""A request joins a generation only if it typed at most this much past its text."""

SUFFIX_LINES = 4
"""Lines after the cursor line that post-processing compares the answer with."""


def cursor_at(snapshot: Snapshot, offset: int) -> Cursor:
    """The text around ``offset`` that post-processing needs.

    When the cursor follows whitespace, the prompt ends one character earlier (recorded
    as ``prompt_dropped_indent``): BPE models carry a word's leading space in its token
    (``:\n    x`` is ``:``, ``\n   ``, `` x``), so a prompt ending in that space is one
    they rarely saw, and SmolLM2 answers it with a blank or dedented line. The model
    writes the space back and post-processing takes it off.
    """
    data = snapshot.data
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    end = len(data) if end < 0 else end
    above = data[:start].rstrip()  # up to the nearest non-blank line above
    following = end
    for _ in range(SUFFIX_LINES):
        nxt = data.find(b"\n", following + 1)
        following = len(data) if nxt < 0 else nxt
    before = data[start:offset].decode("utf-8", "replace")
    return Cursor(
        line_before=before,
        line_after=data[offset:end].decode("utf-8", "replace").rstrip("\r"),
        line_above=above[above.rfind(b"\n") + 1:].decode("utf-8", "replace"),
        suffix_lines=data[end + 1:following].decode("utf-8", "replace"),
        prompt_dropped_indent=before[-1:] if before[-1:] in (" ", "\t") else "",
    )


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


class Completer:
    """Runs completions; per-request scheduling (supersede) sits in front of it."""

    def __init__(
        self,
        engines: EngineManager,
        telemetry: Telemetry,
        settings: Callable[[], Settings],
        cache: Callable[[], CompletionCache | None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
        routes: Routes | None = None,
    ) -> None:
        self.engines = engines
        self.routes = routes or Routes(engines)
        self.telemetry = telemetry
        self._settings = settings
        self._cache = cache
        self.debouncer = Debouncer(clock)
        self._flights: dict[str, Flight] = {}  # uri -> the document's current generation
        self._shown: dict[str, _Shown] = {}
        self._secret: dict[tuple[str, int], str | None] = {}
        self._last_ids: tuple[int, ...] = ()  # the last engine prompt (for the trace)
        self._generating = 0  # engine generations under way (for the trace)
        self.privacy = Privacy()  # the server installs the user's rules
        self.safety = SafetyChecker()
        self.workspace: Workspace | None = None  # index, open buffers, edits (context engine)
        self.experiment: Experiment | None = None  # the server builds it from the settings
        # Swappable so that `bench quality` runs a prefix-only baseline through this path.
        self.build_context: Callable[..., Context] = build_context

    @property
    def queue_depth(self) -> int:
        return sum(1 for f in self._flights.values() if not f.done)

    def forget(self, uri: str) -> None:
        """The document closed: free what we keep for it."""
        self._shown.pop(uri, None)
        self.debouncer.forget(uri)
        self._secret = {k: v for k, v in self._secret.items() if k[0] != uri}
        flight = self._flights.pop(uri, None)
        if flight is not None and flight.task is not None and not flight.done:
            flight.task.cancel()

    def _secret_reason(self, snapshot: Snapshot) -> str | None:
        return self.secret_reason(snapshot.uri, snapshot.version, snapshot.data)

    def secret_reason(self, uri: str, version: int, data: bytes) -> str | None:
        """Why the document must stay private (cached per version: content is scanned)."""
        key = (uri, version)
        if key not in self._secret:
            if len(self._secret) > 256:
                self._secret.clear()
            self._secret[key] = self.privacy.reason(uri, data)
        return self._secret[key]

    def set_privacy(self, privacy: Privacy) -> None:
        self.privacy, self._secret = privacy, {}

    def is_private(self, uri: str, version: int, data: bytes) -> bool:
        return self.secret_reason(uri, version, data) is not None

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

    async def _complete(
        self, snapshot: Snapshot, offset: int, prefetch: bool, explicit: bool,
        trace: dict[str, Any], pending: list[asyncio.Task[Any]],
    ) -> Outcome:
        settings, arm = self._settings(), ""
        if self.experiment is not None:  # each line of a document keeps its arm
            arm, settings = self.experiment.choose(
                snapshot.uri, snapshot.data.count(b"\n", 0, offset))
        started = time.perf_counter()
        waited = 0.0  # debounce and engine time, excluded from server time
        if not prefetch and not explicit:
            # Every request is a keystroke for the debounce, also those that typing-through,
            # the cache or a shared generation answer (else the next looks like a pause).
            self.debouncer.note(snapshot.uri)
        if not settings.enable:
            return Outcome("", "none", reason="disabled by the `enable` setting", source="none")
        if not settings.language_enabled(snapshot.language_id):
            self.telemetry.count("disabled_language")
            return Outcome("", "none", reason=f"completions are off for {snapshot.language_id} "
                           "(`disabledLanguages`)", source="none")
        if snapshot.binary or snapshot.too_large:
            self.telemetry.count("rejected_input")
            why = "binary document" if snapshot.binary else "larger than maxDocumentBytes"
            return Outcome("", "none", reason=why, source="none")
        if snapshot.out_of_sync is not None:
            self.telemetry.count("out_of_sync")
            return Outcome("", "none", reason=f"document out of sync: {snapshot.out_of_sync}",
                           source="none")
        secret = self._secret_reason(snapshot)
        if secret is not None:
            self.telemetry.count("secret_skipped")
            return Outcome("", "none", reason=f"private file: {secret}", source="none")
        mode = completion_mode(snapshot, offset)
        cursor = cursor_at(snapshot, offset)
        if explicit and mode == "single-line" and not (cursor.line_before.strip()
                                                       or cursor.line_after.strip()):
            mode = "multi-line"  # asked for on an empty line: as much as the block wants
        if mode == "none":
            self.telemetry.count("empty_mode")
            return Outcome("", mode, reason="no completion at this position", source="none")
        trace["mode"] = mode

        if settings.typing_through and not prefetch and not explicit:
            through = self._typed_through(snapshot, offset)
            if through is not None:
                self.telemetry.server_time((time.perf_counter() - started) * 1000)
                return self._typed(through, mode, started)

        try:
            engine, route = self.routes.engine_for(route_kind(mode, explicit, prefetch))
        except EngineUnavailable as exc:
            self.telemetry.count("not_ready")
            return Outcome("", mode, reason=f"engine not ready: {exc}", source="none")

        prompt_offset = offset - len(cursor.prompt_dropped_indent.encode())
        # `template` names the main model's family; another route's model keeps its own.
        template = template_for(settings.template if settings.template != "auto"
                                and route == MAIN else engine.info.template)
        context = self.build_context(
            snapshot, prompt_offset, engine.counter, template,
            budgets_for(settings, engine.info.device).for_request(mode, explicit), mode,
            workspace=self.workspace, shares=settings.context_shares,
        )
        self.telemetry.context_built((layer.name, layer.tokens, layer.truncated)
                                     for layer in context.layers)
        # A single line stops at its end; the larger limit lets a block header that
        # would stand alone get its body (see postprocess.stop_rule).
        max_tokens = (
            max(settings.max_tokens_single_line, settings.max_tokens_multi_line)
            if mode == "single-line" and not cursor.line_after.strip()
            else settings.max_tokens_single_line if mode == "single-line"
            else settings.max_tokens_multi_line
        )
        key = cache_key(engine.info.model, template.name, mode, max_tokens,
                        settings.temperature, context.prompt)
        cache = self._cache() if settings.cache else None
        context_ms = (time.perf_counter() - started) * 1000

        raw: str | None = cache.get(key) if cache is not None else None
        source = "cache"
        truncated = False  # (known for the engine's own answers only)
        several = explicit and settings.max_suggestions > 1
        alts: list[asyncio.Task[EngineResult | None]] = []
        if raw is not None:
            self.telemetry.count("cache_hits")
            if several:
                alts, listing = self._alternatives(engine, self._request(
                    engine, template, context, mode, cursor, max_tokens, settings, prefetch,
                    trace), settings, None)
                pending += [*alts, listing]
        else:
            t_merge = time.perf_counter()
            got = await self._from_flight(snapshot.uri, context, settings, trace) if (
                settings.merge and not explicit) else None
            waited += (time.perf_counter() - t_merge) * 1000  # waiting on the engine
            if got is not None:
                raw, source = got, "merged"
                self.telemetry.count("merged")
            else:
                if self.queue_depth >= settings.max_queue:
                    self.telemetry.count("overloaded")
                    return Outcome("", mode, reason="too many requests in flight; try again",
                                   context=context, source="none")
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
                    alts, listing = self._alternatives(engine, request, settings, snapshot.uri)
                    pending += [*alts, listing]
                result = await self._fly(
                    engine, snapshot.uri, key, mode, request, context.at_cursor(), settings,
                    cache, trace,
                    deadline=0 if prefetch or explicit else settings.deadline_ms,
                    whole_cut=self._whole_cut(mode, cursor, snapshot, offset))
                waited += (time.perf_counter() - t0) * 1000
                if result is not None:
                    trace.update(prompt_tokens=result.prompt_tokens,
                                 uncached=result.prompt_tokens - result.cached_prompt_tokens,
                                 generated_tokens=result.generated_tokens,
                                 first_token_ms=result.first_token_ms and round(
                                     result.first_token_ms, 1))
                if result is None:
                    return Outcome("", mode, reason="engine error", context=context,
                                   source="none")
                raw, source = result.text, "engine"
                truncated = result.finish_reason == "length"
        text = finalize(raw, mode, cursor, snapshot, offset, truncated)
        if not text and raw.strip() and finalize(raw, mode, cursor, truncated=truncated):
            self.telemetry.count("not_whole")  # the text rules kept it; the syntax did not
        candidates = [text]
        if alts:
            # They start when the first has ended and run side by side (see
            # ALTERNATIVES_MIN_WAIT_S for how long they get).
            t_alt = time.perf_counter()
            done, _ = await asyncio.wait(
                alts, timeout=max(ALTERNATIVES_MIN_WAIT_S,
                                  ALTERNATIVES_WAIT_FACTOR * (t_alt - started)))
            waited += (time.perf_counter() - t_alt) * 1000
            results = [r for t in alts if t in done and not t.cancelled()  # in rank order
                       and t.exception() is None and (r := t.result()) is not None]
            trace["alternatives_late"] = len(alts) - len(done)
            candidates += [finalize(r.text, mode, cursor, snapshot, offset,
                                    r.finish_reason == "length") for r in results]
        text, warned, unsafe = self._review(snapshot, offset, text, settings.safety, prefetch)
        alternatives: list[str] = []
        if alts:
            # An alternative is offered only when the safety check has nothing to say.
            texts = distinct([text, *(t for t in candidates[1:] if t and self._clean(
                snapshot, offset, t, settings.safety))], settings.max_suggestions)
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
            self._remember_shown(snapshot, offset, (text, *alternatives), mode)
        trace["route"] = route
        return Outcome(text, mode, timings, None if text else unsafe or "the model gave nothing "
                       "usable", context, source, raw, warned, tuple(
                           f.message() for f in warned
                           if not prefetch and self.safety.first_warning(snapshot.uri, f)),
                       route, template.name, arm, alternatives=alternatives)

    def _review(self, snapshot: Snapshot, offset: int, text: str, level: str, prefetch: bool
                ) -> tuple[str, tuple[Finding, ...], str | None]:
        """The suggestion as the ``safety`` setting lets it be shown, the findings to warn
        about, and why it was dropped (when it was)."""
        review = self.safety.review(snapshot, offset, text, level)
        if not prefetch:  # (a prefetched answer is reviewed again when it is shown)
            for finding in review.blocked:
                self.telemetry.safety_finding(finding.rule, "blocked")
            for finding in review.warned:
                self.telemetry.safety_finding(finding.rule, "warned")
            self.telemetry.count("safety_blocked", int(bool(review.blocked)))
            self.telemetry.count("safety_warned", int(bool(review.warned)))
        why = None
        if review.blocked and not review.text:
            why = "blocked by `safety`: " + ", ".join(sorted({f.rule for f in review.blocked}))
        return review.text, review.warned, why

    def _clean(self, snapshot: Snapshot, offset: int, text: str, level: str) -> bool:
        """Whether the safety check leaves ``text`` as it is, with nothing to warn about."""
        review = self.safety.review(snapshot, offset, text, level)
        return review.text == text and not review.blocked and not review.warned

    def _request(self, engine: Engine, template: Template, context: Context, mode: Mode,
                 cursor: Cursor, max_tokens: int, settings: Settings, prefetch: bool,
                 trace: dict[str, Any]) -> EngineRequest:
        """The engine request for ``context``: token ids, stop rules, priority."""
        ids, stop_ids = self._token_ids(engine, template, context)
        if ids is not None and self.telemetry.tracing:  # what the last call lacked
            trace["new_tokens"] = len(ids) - _common_prefix(ids, self._last_ids)
            self._last_ids = ids
        return EngineRequest(
            request_id=f"lsp-copilot-{next(_ids)}",
            prompt=context.prompt,
            max_tokens=max_tokens,
            temperature=settings.temperature,
            priority=2 if prefetch else (0 if mode == "single-line" else 1),
            stop=template.stop,
            stop_at=stop_rule(mode, cursor),
            prompt_token_ids=ids,
            stop_token_ids=stop_ids,
        )

    def _alternatives(self, engine: Engine, request: EngineRequest, settings: Settings,
                      uri: str | None) -> tuple[list[asyncio.Task[EngineResult | None]],
                                                asyncio.Task[Any]]:
        """maxSuggestions - 1 alternatives to ``request`` (see alternatives.py), and the
        task that lists the tokens they branch from. They start once the document's
        generation (``uri``'s flight, if any) has ended: its prompt is then in the prefix
        cache, and on two cores the first answer is not slowed by them."""
        count = settings.max_suggestions - 1

        async def choices() -> list[Branch] | None:
            current = self._flights.get(uri) if uri is not None else None
            if current is not None and current.task is not None and not current.done:
                await asyncio.wait({current.task})
            if not engine.info.token_choices:
                return None
            listed = await self._generate(engine, choices_request(request, count + 1), None, "")
            return branches(listed.token_choices, request, count)

        listing = asyncio.ensure_future(choices())
        sampled = alternative_requests(request, count, settings.alternative_temperature)

        async def alternative(index: int) -> EngineResult | None:
            found = await asyncio.shield(listing)
            if found is None:  # the engine lists no tokens: sampled alternatives
                return await self._generate(engine, sampled[index], None, "")
            if index >= len(found):
                return None
            branch = found[index]
            result = await self._generate(engine, branch_request(request, branch, index + 1),
                                          None, "")
            result.text = branch.text + result.text
            return result

        # (The flight is looked up when the listing starts: _fly registers it just after.)
        return [asyncio.ensure_future(alternative(i)) for i in range(count)], listing

    def _token_ids(self, engine: Engine, template: Template, context: Context
                   ) -> tuple[tuple[int, ...] | None, tuple[int, ...]]:
        """The prompt as token ids with the engine's tokenizer, and the stop tokens' ids;
        (None, ()) for an engine without one (it then gets the text)."""
        encoder = engine.encoder
        if encoder is None:
            return None, ()
        encoded = encoder.encode(context.pieces or (context.prompt,))
        if encoded.escaped:
            self.telemetry.count("escaped_special_tokens", encoded.escaped)
        return encoded.ids, encoder.stop_ids(template.stop)

    # -- typing-through -------------------------------------------------------------

    def _remember_shown(self, snapshot: Snapshot, offset: int, texts: tuple[str, ...],
                        mode: Mode) -> None:
        self._shown[snapshot.uri] = _Shown(snapshot.data[:offset], snapshot.data[offset:],
                                           texts, mode)

    def prefer(self, uri: str, text: str) -> None:
        """The user took (part of) ``text``, one of the suggestions answered last, or what
        was left of it: typing-through continues that one, not the first."""
        shown = self._shown.get(uri)
        if shown is None:
            return
        for candidate in shown.texts:
            if text and candidate.endswith(text):
                rest = tuple(t for t in shown.texts if t is not candidate)
                self._shown[uri] = dataclasses.replace(shown, texts=(candidate, *rest))
                return

    def _typed_through(self, snapshot: Snapshot, offset: int) -> str | None:
        shown = self._shown.get(snapshot.uri)
        if shown is None:
            return None
        data = snapshot.data
        if (len(data) - offset != len(shown.suffix) or not data.endswith(shown.suffix)
                or not data.startswith(shown.prefix) or offset < len(shown.prefix)):
            return None
        typed = data[len(shown.prefix):offset].decode("utf-8", "replace")
        for text in shown.texts:
            if text.startswith(typed) and len(typed) < len(text):
                return text[len(typed):]
        return None

    def _typed(self, text: str, mode: Mode, started: float) -> Outcome:
        self.telemetry.count("typed_through")
        ms = round((time.perf_counter() - started) * 1000, 2)
        return Outcome(text, mode, {"context": 0.0, "engine": 0.0, "total": ms}, None, None,
                       "typed_through")

    # -- shared generations -----------------------------------------------------------

    async def _from_flight(self, uri: str, context: Context, settings: Settings,
                           trace: dict[str, Any]) -> str | None:
        """Text for the context's prompt from the document's in-flight generation, if it
        has it."""
        flight = self._flights.get(uri)
        if flight is None or flight.task is None:
            return None
        relation = flight.relation(*context.at_cursor())
        if relation is not None and relation[0] == "forward" and (
                len(relation[1]) > len(flight.text) + JOIN_AHEAD_CHARS):
            # The user is ahead of the generation (seen: one that had produced nothing for
            # seconds held every later keystroke): a fresh one reuses its cached prefix.
            trace["behind_flight"] = len(relation[1]) - len(flight.text)
            relation = None
        if relation is None:
            if flight.consumers == 0 and not flight.done:
                # Nobody can use it any more: free the engine now, not after the debounce.
                flight.task.cancel()
            return None
        kind, delta = relation
        trace["joined_flight"] = kind
        self._attach(flight)
        diverged = False
        try:
            while True:
                flight.changed.clear()
                text = flight.text
                if kind == "forward" and not (text.startswith(delta) or delta.startswith(text)):
                    diverged = True  # the generation went elsewhere
                    return None
                if flight.done:
                    break
                await flight.wait_change()
            result = flight.task.result() if not flight.task.cancelled() else None
        except asyncio.CancelledError:
            raise
        except Exception:
            return None
        finally:
            trace.update(flight.progress())
            self._detach(flight, settings, now=diverged)
        if result is None:
            return None
        if kind == "forward":
            if not result.text.startswith(delta):
                return None
            rest = result.text[len(delta):]
            # Typed up to where the deadline cut it: not the model's end, ask again.
            return None if flight.cut_by_deadline and not rest.strip() else rest
        return delta + result.text

    def _attach(self, flight: Flight) -> None:
        flight.consumers += 1
        if flight.abort_timer is not None:
            flight.abort_timer.cancel()
            flight.abort_timer = None

    def _detach(self, flight: Flight, settings: Settings, now: bool = False) -> None:
        """``now``: the generation went where the user did not: abort it at once."""
        flight.consumers -= 1
        if flight.consumers > 0 or flight.done or flight.task is None:
            return
        task = flight.task
        if settings.merge and settings.merge_window_ms > 0 and not now:
            # The next keystroke's request may still reuse it: abort after the window.
            flight.abort_timer = asyncio.get_running_loop().call_later(
                settings.merge_window_ms / 1000, task.cancel)
        else:
            task.cancel()

    @staticmethod
    def _whole_cut(mode: Mode, cursor: Cursor, snapshot: Snapshot, offset: int
                   ) -> Callable[[str], int | None]:
        """Where a generation the deadline stops may end: its last line end after which
        the answer is whole (checked with the finished answer's own rules), or None."""
        checked = [0]  # the newline last tried: each line end is tried once

        def cut(text: str) -> int | None:
            end = text.rfind("\n")
            if end <= checked[0]:
                return None
            checked[0] = end
            return end if finalize(text[:end], mode, cursor, snapshot, offset) else None

        return cut

    async def _fly(
        self, engine: Engine, uri: str, key: str, mode: Mode, request: EngineRequest,
        at_cursor: tuple[str, str], settings: Settings, cache: CompletionCache | None,
        trace: dict[str, Any],
        deadline: int, whole_cut: Callable[[str], int | None],
    ) -> EngineResult | None:
        """Start the document's new generation (aborting the old one) and wait for it.

        Past ``deadline`` ms (0: none) the generation stops at the first line end where
        the answer is whole, as llama.cpp's server does with ``t_max_predict_ms``: never
        mid-line, never a fragment."""
        old = self._flights.get(uri)
        if old is not None and old.task is not None and not old.done:
            old.task.cancel()  # superseded by a request it cannot serve: abort at once
        flight = Flight(key=key, prompt=at_cursor[0], mode=mode, tail=at_cursor[1])
        inner_stop = request.stop_at

        def stop_at(text: str) -> int | None:
            flight.publish(text)
            cut = inner_stop(text) if inner_stop else None
            if cut is None and deadline and flight.elapsed_ms() >= deadline:
                cut = whole_cut(text)  # the user is waiting: show what is whole
                flight.cut_by_deadline = cut is not None
            return cut

        request = EngineRequest(**{**request.__dict__, "stop_at": stop_at})
        trace["engine_busy"] = self._generating  # generations this one shares the engine with
        flight.task = asyncio.ensure_future(self._generate(
            engine, request, cache, key, lambda: not flight.cut_by_deadline))
        self._flights[uri] = flight
        self._attach(flight)
        try:
            return await asyncio.shield(flight.task)
        except asyncio.CancelledError:
            if flight.task.cancelled():
                current = asyncio.current_task()
                if current is None or not current.cancelling():
                    return None
            raise
        except EngineDeadline:
            # requestTimeoutMs, too, cuts only at a line end: what was whole by then.
            end = flight.text.rfind("\n")
            if end <= 0:
                return None
            flight.cut_by_deadline = True
            self.telemetry.count("deadline_answers")
            return EngineResult(text=flight.text[:end], stopped_early=True)
        except Exception:
            return None
        finally:
            trace.update(flight.progress())
            self._detach(flight, settings)

    async def _generate(
        self, engine: Engine, request: EngineRequest, cache: CompletionCache | None, key: str,
        cacheable: Callable[[], bool] = lambda: True,
    ) -> EngineResult:
        self.telemetry.count("engine_requests")
        self._generating += 1
        try:
            result = await engine.generate(request)
        except asyncio.CancelledError:
            self.telemetry.count("engine_aborted")
            raise
        except EngineUnavailable as exc:  # deadline or engine down: the supervisor says why
            self.telemetry.count("engine_errors")
            log.warning("engine request ended: %s", exc)
            raise
        except Exception:
            self.telemetry.count("engine_errors")
            log.exception("engine request failed")
            raise
        finally:
            self._generating -= 1
        self.telemetry.count("prompt_tokens", result.prompt_tokens)
        if request.prompt_token_ids:
            self.telemetry.count("token_id_prompts")
            self.telemetry.count("prompt_token_ids", len(request.prompt_token_ids))
        self.telemetry.count("cached_prompt_tokens", result.cached_prompt_tokens)
        self.telemetry.count("generated_tokens", result.generated_tokens)
        if result.stopped_early:
            self.telemetry.count("engine_stopped_early")
        if not cacheable():  # an answer cut by the deadline: not the model's whole answer
            self.telemetry.count("deadline_answers")
        elif cache is not None and result.finish_reason != "length":
            # Cut by maxTokens, the text is whole only as post-processing trims it knowing
            # so; read back from the cache it was judged complete, and dropped.
            cache.put(key, result.text)
        return result
