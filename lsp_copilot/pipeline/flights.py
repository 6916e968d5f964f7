"""Shared generations: one engine generation per document, which every request it can serve
joins instead of starting another, and the counted engine call that all generations make.

A request whose prompt extends (typed forward) or is a prefix of (deleted back) the
generation's prompt attaches to it. A generation nobody waits for any more is aborted: at
once when a request needs something else, after the merge window when the client
cancelled (the next keystroke's request may still reuse it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from lsp_copilot.context.result import Context
from lsp_copilot.engine.base import (
    Cut,
    Engine,
    EngineDeadline,
    EngineRequest,
    EngineResult,
    EngineUnavailable,
    until_cut,
)
from lsp_copilot.language.trigger import Mode
from lsp_copilot.pipeline.completion_cache import CompletionCache
from lsp_copilot.pipeline.trace import Trace
from lsp_copilot.postprocess.checks import PostProcessor
from lsp_copilot.settings.completion import CompletionSettings
from lsp_copilot.telemetry import Telemetry

log = logging.getLogger(__name__)

Continuation = Callable[[str, int], int | None]
"""Where a generation that answered up to a newline (its index) stops, or None."""
JOIN_AHEAD_CHARS = 1
"""A request joins a generation only if it typed at most this much past its text."""
CLOSED = "the document closed"
REPLACED = "a newer request for the document replaced its generation"


class Superseded(Exception):
    """The request's generation was aborted for the document's sake (a newer request, or
    the document closed) while the request itself was not cancelled: no answer, and no
    engine error either."""


@dataclass
class Flight:
    """One engine generation, shared by every request that can use its text."""

    prompt: str  # the prompt up to the cursor
    mode: str
    tail: str = ""  # the prompt after the cursor (a fill-in-the-middle suffix)
    task: asyncio.Task[EngineResult] | None = None
    text: str = ""
    consumers: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    abort_timer: asyncio.TimerHandle | None = None
    started: float = field(default_factory=time.perf_counter)
    first_text_ms: float | None = None  # since ``started``: when the first text came
    updates: int = 0  # text updates seen (about one per model step)
    cut_by_deadline: bool = False  # answered with what it had when the deadline came
    # Goes on past its answer to where this says (``stop.continuation_end``): the request
    # at the end of the line, or after Enter, finds the next line under way or written.
    continues: Continuation | None = None
    answer: str | None = None  # its answer, once whole (set only when it ``continues``)
    answered: asyncio.Event = field(default_factory=asyncio.Event)
    aborted_for: str = ""  # why another request or the document aborted it
    step: EngineResult | None = None  # the engine's latest step (its counts so far)

    def publish(self, text: str) -> None:
        if self.first_text_ms is None and text:
            self.first_text_ms = (time.perf_counter() - self.started) * 1000
        self.updates += 1
        self.text = text
        self.changed.set()

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    def progress(self) -> Trace:
        """How far the generation got (for the trace of a request that did not see it end)."""
        return {"flight_ms": round((time.perf_counter() - self.started) * 1000, 1),
                "flight_first_text_ms": self.first_text_ms and round(self.first_text_ms, 1),
                "flight_updates": self.updates, "flight_chars": len(self.text)}

    @property
    def done(self) -> bool:
        return self.task is None or self.task.done()

    async def answer_or_end(self) -> None:
        """Wait until the answer is whole (it goes on with the next line) or the end."""
        await self._event_or_end(self.answered)

    async def wait_change(self) -> None:
        """Wait for new text or the end; call ``changed.clear()`` before reading ``text``."""
        await self._event_or_end(self.changed)

    async def _event_or_end(self, event: asyncio.Event) -> None:
        if self.done or event.is_set():
            return
        waiter = asyncio.ensure_future(event.wait())
        assert self.task is not None
        try:
            await asyncio.wait({waiter, self.task}, return_when=asyncio.FIRST_COMPLETED)
        finally:  # also when our request is cancelled: a pending waiter would leak
            waiter.cancel()

    def cutter(self, request: EngineRequest, deadline: int,
               cut_whole: Callable[[str], int | None]) -> Cut:
        """Where the engine's steps are cut: the request's stop rule, and what the flight
        adds (the text shared with the requests that joined, the deadline, the next line
        after the answer, ``Flights.fly``)."""
        inner_stop, continues = request.stop_at, self.continues

        def rule(text: str) -> int | None:
            self.publish(text)
            if self.answer is not None and continues is not None:
                return continues(text, len(self.answer))
            cut = inner_stop(text) if inner_stop else None
            if cut is None and deadline and self.elapsed_ms() >= deadline:
                cut = cut_whole(text)  # the user is waiting: show what is whole
                self.cut_by_deadline = cut is not None
            ended = self.step is not None and self.step.finish_reason is not None
            if cut is None or continues is None or self.cut_by_deadline or ended or (
                    text[cut:cut + 1] != "\n"):
                return cut
            self.answer = text[:cut]
            self.answered.set()
            return continues(text, cut)

        def cut(step: EngineResult) -> tuple[int | None, str | None]:
            self.step = step
            at, why = request.cut(step.text, step.finish_reason is not None, rule)
            return at, "deadline" if self.cut_by_deadline and why == "stop_at" else why

        return cut

    def relation(self, prompt: str, tail: str = "") -> tuple[str, str] | None:
        """('forward', typed) or ('back', deleted) when a request whose prompt is
        ``prompt`` up to the cursor and ``tail`` after it can reuse this flight."""
        if tail != self.tail:
            return None
        if prompt.startswith(self.prompt):
            typed = prompt[len(self.prompt) :]
            if "\n" in typed and self.mode == "single-line" and not (
                    self.continues and ends_with_enter(typed)):
                return None
            return "forward", typed
        if self.prompt.startswith(prompt):
            deleted = self.prompt[len(prompt) :]
            if "\n" in deleted:
                return None
            return "back", deleted
        return None


def ends_with_enter(typed: str) -> bool:
    """``typed`` ends with one Enter and the indentation the editor put after it."""
    return typed.count("\n") == 1 and not typed.partition("\n")[2].strip()


def whole_cut(post: PostProcessor) -> Callable[[str], int | None]:
    """Where a generation the deadline stops may end: its last line end after which
    the answer is whole (the finished answer's own text and whole checks), or None."""
    checked = [0]  # the newline last tried: each line end is tried once

    def cut(text: str) -> int | None:
        end = text.rfind("\n")
        if end <= checked[0]:
            return None
        checked[0] = end
        return end if post.run(text[:end], until="whole").text else None

    return cut


def _typed_length(typed: str) -> int:
    """How far a request typed past a flight's prompt: the indentation the editor put
    after Enter is not the user's typing."""
    return len(typed.partition("\n")[0]) + 1 if ends_with_enter(typed) else len(typed)


class Flights:
    """The engine generations under way: each document's current one, and every call."""

    def __init__(self, telemetry: Telemetry) -> None:
        self.telemetry = telemetry
        self._by_uri: dict[str, Flight] = {}  # uri -> the document's current generation
        self._generating = 0  # engine generations under way (for the trace)
        # Whether an answer may be kept in the completion cache (the completer refuses
        # one holding a secret or a placeholder: the cache is on disk).
        self.cacheable_text: Callable[[str], bool] = lambda text: True

    @property
    def running(self) -> int:
        """Documents whose generation is still under way."""
        return sum(1 for f in self._by_uri.values() if not f.done)

    def forget(self, uri: str) -> None:
        """The document closed: abort its generation."""
        flight = self._by_uri.pop(uri, None)
        if flight is not None and flight.task is not None and not flight.done:
            flight.aborted_for = CLOSED
            flight.task.cancel()

    def joinable(self, uri: str) -> bool:
        """The document has a generation a request may join (under way, or ended and
        kept for ``mergeWindowMs``): whether it serves depends on the request's prompt."""
        flight = self._by_uri.get(uri)
        return flight is not None and flight.task is not None

    def asked_alike(self, uri: str, at_cursor: tuple[str, str]) -> bool:
        """The document's generation was asked with this very prompt: a fresh one would
        write the same (greedy), so it is no second chance."""
        flight = self._by_uri.get(uri)
        return flight is not None and (flight.prompt, flight.tail) == at_cursor

    async def until_done(self, uri: str) -> None:
        """Wait until the document's generation under way (if any) has ended."""
        current = self._by_uri.get(uri)
        if current is not None and current.task is not None and not current.done:
            await asyncio.wait({current.task})

    async def join(self, uri: str, context: Context, settings: CompletionSettings,
                   trace: Trace, deadline: int = 0,
                   cut_whole: Callable[[str], int | None] | None = None) -> str | None:
        """Text for the context's prompt from the document's generation under way, if it
        has it; ``Superseded`` when the generation was aborted for the document's sake.

        Past ``deadline`` ms of waiting (0: none) it answers with what the generation has
        written that is whole here (``cut_whole``, this request's own checks), as a
        generation of its own would: the one it joined was asked elsewhere (a keystroke
        earlier, before Enter) and keeps its own deadline's judgement of that place."""
        began = time.perf_counter()
        if not self.joinable(uri):
            return None
        flight = self._by_uri[uri]
        assert flight.task is not None
        relation = self._relation(flight, context, trace)
        if relation is None:
            if flight.consumers == 0 and not flight.done:
                # Nobody can use it any more: free the engine now, not after the debounce.
                flight.task.cancel()
            return None
        kind, delta = relation
        trace["joined_flight"] = kind
        self.telemetry.count("flights_joined")  # now, not when its text comes (`merged`)
        self._attach(flight)
        view = _Joined(kind, delta, trace, respace=kind == "forward" and (
            flight.continues is not None and "\n" in delta and not delta.strip()))
        try:
            answer = await self._follow(flight, view, began, deadline, cut_whole)
            if answer is not None or view.diverged:
                return answer
            result = flight.task.result() if not flight.task.cancelled() else None
        except asyncio.CancelledError:
            raise
        except Exception:
            trace["join_ended"] = "failed"
            return None
        finally:
            trace.update(flight.progress())
            self._detach(flight, settings, now=view.diverged)
        if result is None:
            trace["join_ended"] = "aborted"
            if flight.aborted_for:  # asked afresh, it would abort the one that replaced it
                raise Superseded(flight.aborted_for)
            return None
        return view.final(result.text, flight.cut_by_deadline)

    @staticmethod
    def _relation(flight: Flight, context: Context, trace: Trace
                  ) -> tuple[str, str] | None:
        """``Flight.relation`` for the context, and None when the user is ahead of the
        generation (seen: one that had produced nothing for seconds held every later
        keystroke): a fresh one reuses its cached prefix."""
        relation = flight.relation(*context.at_cursor())
        if relation is not None and relation[0] == "forward" and (
                _typed_length(relation[1]) > len(flight.text) + JOIN_AHEAD_CHARS):
            trace["behind_flight"] = len(relation[1]) - len(flight.text)
            return None
        return relation

    async def _follow(self, flight: Flight, view: _Joined, began: float, deadline: int,
                      cut_whole: Callable[[str], int | None] | None) -> str | None:
        """Follow the joined generation as it writes: this request's answer once it has
        one (whole before the end when the generation goes on past it, or what is whole
        at ``deadline``), else None: it went elsewhere (``view.diverged``) or it ended
        (its result answers)."""
        while True:
            flight.changed.clear()
            text, typed = view.seen(flight.text)
            if view.kind == "forward" and not (
                    text.startswith(typed) or typed.startswith(text)):
                view.diverged = True  # the generation went elsewhere
                view.trace["join_ended"] = "diverged"
                return None
            if flight.done:
                return None
            if deadline and cut_whole is not None and (
                    time.perf_counter() - began) * 1000 >= deadline:
                rest = view.rest(text, typed)
                cut = cut_whole(rest)
                if cut is not None:
                    view.trace["join_ended"] = "deadline"
                    self.telemetry.count("deadline_answers")
                    return rest[:cut]
            answer = view.answered(flight.answer)
            if answer is not None:
                return answer
            await flight.wait_change()

    def _attach(self, flight: Flight) -> None:
        flight.consumers += 1
        if flight.abort_timer is not None:
            flight.abort_timer.cancel()
            flight.abort_timer = None

    def _detach(self, flight: Flight, settings: CompletionSettings, now: bool = False) -> None:
        """``now``: the generation went where the user did not: abort it at once."""
        flight.consumers -= 1
        if flight.consumers > 0 or flight.done or flight.task is None:
            return
        if flight.answer is not None and not now:
            return  # answered, it writes the next line (bounded) unless a request diverges
        task = flight.task
        if settings.merge and settings.merge_window_ms > 0 and not now:
            # The next keystroke's request may still reuse it: abort after the window.
            flight.abort_timer = asyncio.get_running_loop().call_later(
                settings.merge_window_ms / 1000, task.cancel)
        else:
            task.cancel()

    async def fly(
        self, engine: Engine, uri: str, key: str, mode: Mode, request: EngineRequest,
        at_cursor: tuple[str, str], settings: CompletionSettings, cache: CompletionCache | None,
        trace: Trace, deadline: int, cut_whole: Callable[[str], int | None],
        continues: Continuation | None = None,
    ) -> EngineResult | None:
        """Start the document's new generation (aborting the old one) and wait for its
        answer.

        Past ``deadline`` ms (0: none) the generation stops at the first line end where
        the answer is whole (``cut_whole``), as llama.cpp's server does with
        ``t_max_predict_ms``: never mid-line, never a fragment. ``continues``: once the
        answer ends at a line end, it is returned and the generation goes on to where
        ``continues`` says the next line ends, for the keystrokes that finish this line
        and press Enter. None: the engine failed; ``Superseded``: the generation was
        aborted for a newer request or a closed document."""
        old = self._by_uri.get(uri)
        if old is not None and old.task is not None and not old.done:
            old.aborted_for = REPLACED
            old.task.cancel()  # superseded by a request it cannot serve: abort at once
        flight = Flight(prompt=at_cursor[0], mode=mode, tail=at_cursor[1],
                        continues=continues)
        trace["engine_busy"] = self._generating  # generations this one shares the engine with
        flight.task = asyncio.ensure_future(self.generate(
            engine, request, cache, key, lambda: not flight.cut_by_deadline,
            flight.cutter(request, deadline, cut_whole)))
        self._by_uri[uri] = flight
        self._attach(flight)
        try:
            await flight.answer_or_end()
            if flight.answer is not None and not flight.done:  # it goes on to the next line
                trace["before_end"] = True  # (with the counts so far)
                return dataclasses.replace(flight.step or EngineResult(), text=flight.answer,
                                           stopped_early=True)
            result = await asyncio.shield(flight.task)
            if flight.answer is not None:
                result = dataclasses.replace(result, text=flight.answer)
            return result
        except asyncio.CancelledError:
            if flight.task.cancelled():
                current = asyncio.current_task()
                if current is None or not current.cancelling():
                    raise Superseded(flight.aborted_for or REPLACED) from None
            raise
        except EngineDeadline:
            # requestTimeoutMs, too, cuts only at a line end: what was whole by then.
            if flight.answer is not None:
                return EngineResult(text=flight.answer, stopped_early=True)
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

    async def generate(
        self, engine: Engine, request: EngineRequest, cache: CompletionCache | None = None,
        key: str = "", cacheable: Callable[[], bool] = lambda: True, cut: Cut | None = None,
    ) -> EngineResult:
        """One engine call, counted; its answer cached under ``key`` (with a ``cache``);
        ``cut``: where to cut it after each step (else the request's stop rules)."""
        self.telemetry.count("engine_requests")
        self._generating += 1
        try:
            result = await until_cut(engine, request, cut)
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
            if self.cacheable_text(result.text):
                cache.put(key, result.text)
            else:
                self.telemetry.count("secret_not_cached")
        return result


class _Joined:
    """A joined generation's text as one request reads it: the part the user already
    typed (``forward``) or deleted (``back``) relates the two prompts."""

    def __init__(self, kind: str, delta: str, trace: Trace, respace: bool) -> None:
        self.kind = kind
        self.delta = delta  # what the user typed (forward) or deleted (back)
        self.trace = trace
        # Enter where the generation went on along the line (`a,` then ` b: int,`):
        # inside brackets a line break and a space are the same code, so its text serves
        # the new line (the whole check judges it there).
        self.respace = respace
        self.diverged = False  # the generation went elsewhere than the user typed

    def seen(self, text: str) -> tuple[str, str]:
        """``text`` as this request reads it, and what the user typed of it."""
        if self.respace and text[:1] in " \t" and text.lstrip(" \t")[:1] != "\n":
            self.trace["join_respaced"] = True
            return text.lstrip(" \t"), ""
        return text, self.delta

    def rest(self, text: str, typed: str) -> str:
        """What of the generation's ``text`` (read by ``seen``) is this request's."""
        return text[len(typed):] if self.kind == "forward" else self.delta + text

    def answered(self, answer: str | None) -> str | None:
        """This request's part of the generation's whole answer (it goes on writing the
        next line, which is for later), or None while there is none."""
        if answer is None:
            return None
        if self.kind == "back":
            return self.delta + answer
        answer, typed = self.seen(answer)
        if answer.startswith(typed) and answer[len(typed):].strip():
            return answer[len(typed):]
        return None

    def final(self, text: str, cut_by_deadline: bool) -> str | None:
        """This request's part of the finished generation's ``text``, or None when that
        is not an answer here."""
        if self.kind != "forward":
            return self.delta + text
        text, typed = self.seen(text)
        if not text.startswith(typed):
            self.trace["join_ended"] = "stopped_before"  # it ended before what was typed
            return None
        rest = text[len(typed):]
        # Typed all of it: what follows (the next line) is a question of its own.
        # Typed up to where the deadline cut it, not the model's end: ask again.
        if (typed or cut_by_deadline) and not rest.strip():
            self.trace["join_ended"] = "typed_all"
            return None
        return rest
