"""One completion request's path, shared by the server and `lsp-copilot complete`.

snapshot -> checks -> typing-through -> debounce -> context -> cache -> shared generation
(merge/reuse) -> engine (streaming, early stop) -> post-processing -> safety. Where the
document has a generation to join, the context comes before the debounce (joining needs
the prompt) and the debounce only before a generation of the request's own.
Cancellation is an exception: it propagates; an engine generation nobody waits for any
more is aborted (``flights.py``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from lsp_copilot.acceptance.experiment import Experiment
from lsp_copilot.context.builder import build_context
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.context.result import Context
from lsp_copilot.documents.store import Snapshot
from lsp_copilot.engine.base import EngineRequest, EngineResult, EngineUnavailable
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.engine.routes import Routes, route_kind
from lsp_copilot.language.folders import language_config
from lsp_copilot.language.lookahead import forced_after
from lsp_copilot.language.trigger import Mode, completion_mode
from lsp_copilot.logs import source_text_allowed
from lsp_copilot.pipeline.alternatives import Alternatives, Branch, distinct
from lsp_copilot.pipeline.ask import Ask, Outcome, Raw, Spent, Spot, no_suggestion
from lsp_copilot.pipeline.completion_cache import CompletionCache, cache_key
from lsp_copilot.pipeline.flights import Flights, Superseded, whole_cut
from lsp_copilot.pipeline.prompt import (
    RequestIds,
    common_prefix,
    cursor_with,
    max_tokens_for,
    prompt_for,
    prompt_ids,
)
from lsp_copilot.pipeline.scheduling import Debouncer
from lsp_copilot.pipeline.trace import Trace
from lsp_copilot.pipeline.typing_through import TypingThrough
from lsp_copilot.postprocess.brackets import covered
from lsp_copilot.postprocess.checks import Candidate, PostProcessor, Target
from lsp_copilot.postprocess.safety import SafetyChecker
from lsp_copilot.postprocess.stop import continuation, stop_rule
from lsp_copilot.privacy import Privacy
from lsp_copilot.privacy.documents import PrivateDocuments
from lsp_copilot.privacy.redact import Redactor
from lsp_copilot.settings.completion import CompletionSettings
from lsp_copilot.settings.context import ContextSettings
from lsp_copilot.settings.engine import EngineSettings
from lsp_copilot.settings.general import GeneralSettings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.settings.layers import RequestSettings
from lsp_copilot.settings.privacy import PrivacySettings
from lsp_copilot.telemetry import Telemetry

log = logging.getLogger(__name__)


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
        continuation: bool = True,
    ) -> None:
        """``continuation`` False: a typing generation stops at its answer (a
        measurement's switch)."""
        self.continuation = continuation
        self.routes = routes or Routes(engines)
        self.telemetry = telemetry
        self.settings = self._follow(settings)  # the groups a request reads, kept current
        self._cache = cache
        self.debouncer = Debouncer(clock)
        self.flights = Flights(telemetry)
        self.typing_through = TypingThrough()
        self._last_ids: tuple[int, ...] = ()  # the last engine prompt (for the trace)
        self.request_ids = request_ids or RequestIds()  # the warm-up takes its ids here too
        self.private = PrivateDocuments()  # the server installs the user's rules
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
        self.private.forget(uri)
        self.flights.forget(uri)

    def set_privacy(self, privacy: Privacy) -> None:
        """Install new rules (the server's settings changed); the redactor follows when the
        user's content patterns changed."""
        if privacy.content_patterns != self.private.rules.content_patterns:
            self.redactor = Redactor(privacy.content_patterns)
        self.private.install(privacy)

    def is_private(self, uri: str, version: int, data: bytes) -> bool:
        return self.private.reason(uri, version, data) is not None

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
        trace: Trace = {"t": round(time.monotonic(), 4), "uri": snapshot.uri,
                        "version": snapshot.version, "prefetch": prefetch,
                        "explicit": explicit, "status": "cancelled"}
        began = time.perf_counter()
        pending: list[asyncio.Task[Any]] = []  # alternatives under way
        try:
            outcome = await self._complete(snapshot, offset, prefetch, explicit, trace, pending)
            trace.update({"status": "answered", "mode": outcome.mode, "source": outcome.source,
                          "chars": len(outcome.text), "reason": outcome.reason})
            if outcome.timings_ms:
                timings = outcome.timings_ms
                trace.update({"context": timings["context"], "engine": timings["engine"],
                              "total": timings["total"]})
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
            return no_suggestion("none", "disabled by the `enable` setting")
        if not settings.language_enabled(snapshot.language_id):
            self.telemetry.count("disabled_language")
            return no_suggestion("none", f"completions are off for {snapshot.language_id} "
                                 "(`disabledLanguages`)")
        if snapshot.binary or snapshot.too_large:
            self.telemetry.count("rejected_input")
            return no_suggestion("none", "binary document" if snapshot.binary
                                 else "larger than maxDocumentBytes")
        if snapshot.out_of_sync is not None:
            self.telemetry.count("out_of_sync")
            return no_suggestion("none", f"document out of sync: {snapshot.out_of_sync}")
        secret = self.private.reason(snapshot.uri, snapshot.version, snapshot.data)
        if secret is not None:
            self.telemetry.count("secret_skipped")
            return no_suggestion("none", f"private file: {secret}")
        return None

    async def _complete(
        self, snapshot: Snapshot, offset: int, prefetch: bool, explicit: bool,
        trace: Trace, pending: list[asyncio.Task[Any]],
    ) -> Outcome:
        """The stages in order; each returns an ``Outcome`` or passes the request on."""
        spent = Spent()
        spot = self._spot(snapshot, offset, prefetch, explicit, spent)
        if isinstance(spot, Outcome):
            return spot
        trace["mode"] = spot.mode
        # Debounce first: a keystroke the next one cancels pays for no context. Where the
        # document has a generation to join, joining needs the prompt, so the context
        # comes first and the debounce only if the request asks the engine itself.
        waits = spot.typing and not (spot.settings.completion.merge
                                     and self.flights.joinable(snapshot.uri))
        if waits:
            await self._debounce(spot, trace, spent)
        ask = self._ask(spot, trace, spent, debounced=waits or not spot.typing)
        if isinstance(ask, Outcome):
            return ask
        cache = self._cache() if ask.completion.cache else None
        cached = cache.get(ask.key) if cache is not None else None
        got: Raw | Outcome | None
        if cached is not None:
            self.telemetry.count("cache_hits")
            got = Raw(cached, "cache", alternatives=self._alternatives(
                ask, self._request(ask), None, pending) if ask.several else None)
        else:
            got = await self._joined(ask)
            if got is None:
                got = await self._generated(ask, cache, pending)
        if isinstance(got, Outcome):
            return got
        return await self._finish(ask, got)

    def _spot(self, snapshot: Snapshot, offset: int, prefetch: bool, explicit: bool,
              spent: Spent) -> Spot | Outcome:
        """The arm, the mode and the cursor; no suggestion here at all (a refusal, no
        mode), or the rest of the suggestion on screen (typing-through)."""
        arm, settings = self.settings_for(snapshot, offset)
        refused = self._refusal(snapshot, settings.general)
        if refused is not None:
            return refused
        if not prefetch and not explicit:
            # Every request is a keystroke for the debounce, also those that typing-through,
            # the cache or a shared generation answer (else the next looks like a pause).
            self.debouncer.note(snapshot.uri)
        rules = language_config(snapshot.grammar)  # (looked up once per request)
        mode = completion_mode(snapshot, offset, explicit)
        cursor = cursor_with(snapshot, offset, rules)
        if settings.completion.typing_through and not prefetch and not explicit:
            # The rest of the suggestion on screen stays on offer, also where a new one
            # would not be asked for (after a word of it accepted inside a string).
            through = self.typing_through.rest(snapshot, offset)
            if through is not None:
                self.telemetry.server_time(spent.since_start_ms())
                if mode == "none":
                    mode = "multi-line" if "\n" in through else "single-line"
                return self._typed_through_outcome(
                    through, mode, spent, covered(through, cursor, cursor.rules))
        if mode == "none":
            self.telemetry.count("empty_mode")
            return no_suggestion(mode, "no completion at this position")
        return Spot(snapshot, offset, explicit, prefetch, arm, settings, mode, cursor)

    async def _debounce(self, spot: Spot, trace: Trace, spent: Spent) -> None:
        """Wait for the user's next keystroke, which cancels this request here."""
        settings = spot.settings.completion
        delay = self.debouncer.delay_ms(
            spot.snapshot.uri, settings.debounce_mode, settings.debounce_ms,
            settings.debounce_max_ms, spot.cursor.line_before, spot.cursor.line_after,
            noted=True)
        trace["debounce_ms"] = round(delay, 1)
        if delay > 0:
            self.telemetry.count("debounced")
            began = time.perf_counter()
            await asyncio.sleep(delay / 1000)
            spent.waited_ms += (time.perf_counter() - began) * 1000

    def _ask(self, spot: Spot, trace: Trace, spent: Spent, debounced: bool) -> Ask | Outcome:
        """The engine that answers, the prompt for it and the checks its answer takes."""
        try:
            engine, route = self.routes.engine_for(
                route_kind(spot.mode, spot.explicit, spot.prefetch), arm=spot.arm)
        except EngineUnavailable as exc:
            self.telemetry.count("not_ready")
            return no_suggestion(spot.mode, f"engine not ready: {exc}")
        snapshot, offset = spot.snapshot, spot.offset
        template, context = prompt_for(
            engine, route, spot.settings, snapshot, offset, spot.cursor, spot.mode,
            explicit=spot.explicit, workspace=self.workspace, build=self.context_builder,
            redactor=self.redactor)
        if context.redacted:
            self.telemetry.count("secrets_redacted", len(context.redacted))
        self.telemetry.context_built((layer.name, layer.tokens, layer.truncated)
                                     for layer in context.layers)
        cursor = dataclasses.replace(spot.cursor, prompt_headers=context.headers)
        post = PostProcessor(Target(
            spot.mode, cursor, snapshot, offset, self.safety, spot.settings.privacy.safety,
            secret=lambda text: self.redactor.holds_secret(
                text, snapshot.uri, cursor.line_before), typing=not spot.explicit,
            rules=cursor.rules))
        settings = spot.settings.completion
        max_tokens = max_tokens_for(settings, spot.mode, cursor)
        key = cache_key(engine.info.model, template.name, spot.mode, max_tokens,
                        settings.temperature, context.prompt)
        return Ask(dataclasses.replace(spot, cursor=cursor), route, engine, template, context,
                   post, key, max_tokens, trace, spent, spent.own_ms(), debounced)

    def _alternatives(self, ask: Ask, request: EngineRequest, uri: str | None,
                      pending: list[asyncio.Task[Any]]) -> Alternatives | None:
        """An explicit request's other items, under way (``pending`` holds their tasks)."""
        if not ask.several:
            return None
        alts = Alternatives(self.flights, ask.engine, request, ask.completion, uri,
                            header=ask.post.header_wanted(), lead=self._lead(ask))
        pending += alts.pending
        return alts

    def _lead(self, ask: Ask) -> Branch | None:
        """The branch the grammar requires where one token must follow what is typed
        (``(`` after ``if ``): the prompt ends before a dropped space, so the branch
        writes it back (or a space after a keyword typed without one)."""
        spot, encoder = ask.spot, ask.engine.encoder
        token = forced_after(spot.snapshot.tree, spot.snapshot.data, spot.offset)
        if not token or encoder is None:
            return None
        text = (spot.cursor.prompt_dropped_indent or " ") + token
        ask.trace["grammar_lead"] = True
        return Branch(encoder.text_ids(text), text, 0.0)

    async def _joined(self, ask: Ask) -> Raw | Outcome | None:
        """The answer of the document's generation under way, if it serves this request;
        None: ask the engine."""
        if not ask.completion.merge or ask.spot.explicit:
            return None
        began = time.perf_counter()
        try:
            got = await self.flights.join(
                ask.uri, ask.context, ask.completion, ask.trace,
                deadline=0 if ask.spot.prefetch else ask.completion.deadline_ms,
                cut_whole=whole_cut(ask.post))
        except Superseded as why:
            return no_suggestion(ask.spot.mode, str(why), ask.context)
        ask.spent.waited_ms += (time.perf_counter() - began) * 1000  # waiting on the engine
        if got is None:
            return None
        alike = self.flights.asked_alike(ask.uri, ask.context.at_cursor())
        checked = ask.post.run(got)
        if not checked.text and not alike:
            # What the shared generation wrote is no answer here (a fragment, a loop it
            # ended in): the user is still waiting, so ask the engine afresh with what was
            # typed since.
            self.telemetry.count("merged_unusable")
            ask.trace["join_ended"] = "unusable"
            return None
        self.telemetry.count("merged")
        return Raw(got, "merged", checked=checked)

    async def _generated(self, ask: Ask, cache: CompletionCache | None,
                         pending: list[asyncio.Task[Any]]) -> Raw | Outcome:
        """A generation of its own, after the debounce."""
        settings, spot, trace = ask.completion, ask.spot, ask.trace
        if self.queue_depth >= settings.max_queue:
            self.telemetry.count("overloaded")
            return no_suggestion(spot.mode, "too many requests in flight; try again",
                                  ask.context)
        if not ask.debounced:  # (it waited on the generation it could not use)
            await self._debounce(spot, trace, ask.spent)
        began = t_ids = time.perf_counter()
        request = self._request(ask)
        encode_ms = (time.perf_counter() - t_ids) * 1000
        ask.spent.waited_ms -= encode_ms  # our own work (vLLM would tokenize here too)
        trace["encode_ms"] = round(encode_ms, 2)
        # (They start once this generation's prompt is in the engine.)
        alts = self._alternatives(ask, request, ask.uri, pending)
        try:
            result = await self.flights.fly(
                ask.engine, ask.uri, ask.key, spot.mode, request, ask.context.at_cursor(),
                settings, cache, trace, deadline=settings.deadline_ms if spot.typing else 0,
                cut_whole=whole_cut(ask.post),
                continues=continuation(spot.snapshot) if spot.mode == "single-line"
                and not spot.explicit and not spot.cursor.line_after.strip()
                and self.continuation else None)
        except Superseded as why:
            return no_suggestion(spot.mode, str(why), ask.context)
        ask.spent.waited_ms += (time.perf_counter() - began) * 1000
        if result is None:
            return no_suggestion(spot.mode, "engine error", ask.context)
        trace.update({"prompt_tokens": result.prompt_tokens,
                      "uncached": result.prompt_tokens - result.cached_prompt_tokens,
                      "generated_tokens": result.generated_tokens,
                      "first_token_ms": result.first_token_ms and round(
                          result.first_token_ms, 1)})
        return Raw(result.text, "engine", result.finish_reason == "length",
                   ruled=result.finish_reason == "stop_at", alternatives=alts)

    async def _finish(self, ask: Ask, got: Raw) -> Outcome:
        """The answer through the checks, the alternatives beside it, the outcome."""
        spot, post = ask.spot, ask.post
        first = got.checked if got.checked is not None else post.run(
            got.text, got.truncated, ruled=got.ruled)
        self._count_checks(first, spot.prefetch)
        if got.text and not first.text:  # why nothing shows (its text only if asked)
            log.debug("no suggestion at %s v%d: the %s check left nothing of %d characters%s",
                      ask.uri, spot.snapshot.version, first.dropped_by, len(got.text),
                      " (cut at the token limit)" if got.truncated else "")
            if source_text_allowed(spot.settings.privacy.log_source_text):
                log.debug("the answer %r, at %r|%r", got.text, spot.cursor.line_before,
                          spot.cursor.line_after)
        text, warned, unsafe = first.text, first.warned, first.reason
        alternatives: list[str] = []
        if got.alternatives is not None:
            def usable(result: EngineResult) -> str:
                """Through the same checks as the first; offered only when the safety
                check has nothing to say."""
                got = post.run(result.text, result.finish_reason == "length")
                return got.text if got.clean else ""

            # They start when the first has ended and run side by side (see
            # ALTERNATIVES_MIN_WAIT_S for how long they get).
            t_alt = time.perf_counter()
            offered = await got.alternatives.texts(t_alt - ask.spent.started, ask.trace, text,
                                                   usable)
            ask.spent.waited_ms += (time.perf_counter() - t_alt) * 1000
            texts = distinct([text, *offered], ask.completion.max_suggestions)
            if not warned:  # (a warning goes with the first item: it stays first)
                texts = post.whole_first(texts)
            if texts and texts[0] != text:  # the first was dropped or is not whole as it
                # stands (a header alone): an alternative leads
                warned = ()
            text, alternatives = (texts[0], texts[1:]) if texts else ("", [])
            self.telemetry.count("alternatives", len(alternatives))
            ask.trace["alternatives"] = len(alternatives)
        if not text and not unsafe and not first.blocked and (text := post.statement_end()):
            self.telemetry.count("statement_ends")  # the file's `;` or `,`, not the model's
            ask.trace["statement_end"] = True
        self.telemetry.server_time(ask.spent.own_ms())
        timings = {"context": round(ask.context_ms, 2), "engine": round(ask.spent.waited_ms, 2),
                   "total": round(ask.spent.since_start_ms(), 2)}
        self.telemetry.last_timings_ms = timings
        if text and not spot.prefetch:
            self.typing_through.remember(spot.snapshot, spot.offset, (text, *alternatives))
        ask.trace["route"] = ask.route
        return Outcome(
            text=text, mode=spot.mode, timings_ms=timings,
            reason=None if text else unsafe or "the model gave nothing usable",
            context=ask.context, source=got.source, raw=got.text, safety=warned,
            warnings=tuple(f.message() for f in warned if not spot.prefetch
                           and self.safety.first_warning(ask.uri, f)),
            route=ask.route, template=ask.template.name, arm=spot.arm,
            alternatives=alternatives,
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

    def _request(self, ask: Ask) -> EngineRequest:
        """The engine request for the ask's context: token ids, stop rules, priority."""
        encoded = prompt_ids(ask.engine, ask.template, ask.context)
        if encoded is not None and encoded.escaped:
            self.telemetry.count("escaped_special_tokens", encoded.escaped)
        if encoded is not None and self.telemetry.tracing:  # what the last call lacked
            ask.trace["new_tokens"] = len(encoded.ids) - common_prefix(encoded.ids,
                                                                       self._last_ids)
            self._last_ids = encoded.ids
        spot = ask.spot
        return EngineRequest(
            request_id=self.request_ids.new(),
            prompt=ask.context.prompt,
            max_tokens=ask.max_tokens,
            temperature=ask.completion.temperature,
            priority=2 if spot.prefetch else (0 if spot.mode == "single-line" else 1),
            stop=ask.template.stop,
            stop_at=stop_rule(spot.mode, spot.cursor),
            prompt_token_ids=encoded.ids if encoded is not None else None,
            stop_token_ids=encoded.stop_ids if encoded is not None else (),
        )

    def _typed_through_outcome(self, text: str, mode: Mode, spent: Spent,
                               replaces: int) -> Outcome:
        self.telemetry.count("typed_through")
        ms = round(spent.since_start_ms(), 2)
        return Outcome(text=text, mode=mode,
                       timings_ms={"context": 0.0, "engine": 0.0, "total": ms},
                       reason=None, context=None, source="typed_through",
                       replaces=(replaces,))
