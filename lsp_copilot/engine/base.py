"""The engine protocol: what the completion pipeline needs from any model backend."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from lsp_copilot.prompts.encoder import PromptEncoder
from lsp_copilot.tokens import TokenCounter


class EngineUnavailable(RuntimeError):
    """The engine is loading, failed or stopped: the caller answers with an empty result."""


class EngineDown(EngineUnavailable):
    """The engine died or stopped answering while a request waited on it."""


class EngineDeadline(EngineUnavailable):
    """An engine call took longer than ``requestTimeoutMs``: it is abandoned, not awaited."""


@dataclass(frozen=True)
class EngineInfo:
    """What `complete --json` and `lspCopilot/stats` report under ``engine``."""

    backend: str
    model: str
    device: str
    prefix_caching: bool
    speculative: str | None
    template: str = "prefix-only"  # the prompt family detected from the model folder
    quantization: str | None = None  # vLLM's method for the weights (`weights` setting)
    dtype: str | None = None  # what vLLM computes in (`dtype` setting; float32 on AVX2 CPUs)
    token_choices: bool = False  # lists the likeliest tokens (alternatives branch from them)

    def as_dict(self) -> dict[str, Any]:
        """What users see (``token_choices`` is the pipeline's business, not theirs)."""
        out = asdict(self)
        del out["token_choices"]
        return out


@dataclass(frozen=True)
class TokenChoice:
    """One of the likeliest tokens at a position of a generation (alternatives branch
    from them)."""

    token_id: int
    text: str
    logprob: float


@dataclass(frozen=True)
class EngineRequest:
    """One generation: ``stop_at`` inspects the text so far and says where to cut it."""

    request_id: str
    prompt: str
    max_tokens: int
    temperature: float = 0.0
    priority: int = 0
    stop: tuple[str, ...] = ()
    # Returns the index at which to cut the text generated so far, or None to go on.
    stop_at: Callable[[str], int | None] | None = None
    # The prompt as token ids (control tokens unsplit, user text never parsed for them);
    # when set, the engine sends these and ``prompt`` is only the text form (cache, audit).
    prompt_token_ids: tuple[int, ...] | None = None
    # Stop tokens by id: vLLM drops special tokens from the text, where ``stop`` can't see.
    stop_token_ids: tuple[int, ...] = ()
    # Sampling seed (temperature > 0): the same prompt and seed give the same text.
    seed: int | None = None
    # > 0: the result lists this many likeliest tokens at each generated position
    # (``token_choices``), where the engine can.
    token_choices: int = 0

    def cut(self, text: str, finished: bool,
            rule: Callable[[str], int | None] | None = None) -> tuple[int | None, str | None]:
        """Where to cut the text generated so far, and why ("stop" or "stop_at"), or
        (None, None) to go on; ``rule`` decides instead of ``stop_at`` (a shared
        generation's, which knows more than the request).

        Stop strings are matched here, not by the engine: vLLM holds back the last
        ``len(longest stop) - 1`` characters of a stream that has stop strings (12 for
        "<|endoftext|>"), so a short answer showed up only when the whole was done. Here
        only a tail that could begin a stop string waits for the next tokens."""
        hits = [i for s in self.stop if (i := text.find(s)) >= 0]
        if hits:
            return min(hits), "stop"
        rule = rule or self.stop_at
        if rule is None:
            return None, None
        seen = text if finished else text[:_open_end(text, self.stop)]
        cut = rule(seen)
        return (cut, "stop_at") if cut is not None else (None, None)


def _open_end(text: str, stops: tuple[str, ...]) -> int:
    """The end of ``text`` without a tail that begins one of ``stops``."""
    for start in range(max(0, len(text) - max(map(len, stops), default=1) + 1), len(text)):
        tail = text[start:]
        if any(s.startswith(tail) for s in stops):
            return start
    return len(text)


@dataclass
class EngineResult:
    text: str = ""
    finish_reason: str | None = None
    stopped_early: bool = False
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    generated_tokens: int = 0
    first_token_ms: float | None = None
    # Per generated position, the likeliest tokens, best first (when the request asked).
    token_choices: tuple[tuple[TokenChoice, ...], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


Cut = Callable[[EngineResult], tuple[int | None, str | None]]
"""Where to cut a generation after a step (its result so far), and why; (None, None): on."""


async def until_cut(engine: Engine, request: EngineRequest, cut: Cut | None = None
                   ) -> EngineResult:
    """The one loop over an engine's steps: after each, the request's cut (or ``cut``)
    decides; leaving the loop closes the stream, which aborts the engine's request."""
    decide = cut or (lambda step: request.cut(step.text, step.finish_reason is not None))
    result = EngineResult()
    async with contextlib.aclosing(engine.stream(request)) as steps:
        async for result in steps:
            at, why = decide(result)
            if at is not None:
                finished = result.finish_reason is not None
                result.text = result.text[:at]
                result.stopped_early = not finished
                result.finish_reason = why if why == "stop" else (result.finish_reason or why)
                break
    return result


class Engine(Protocol):
    """A model backend: it streams, the caller cuts (``until_cut``). Leaving the stream
    early (closing it, or a cancel) aborts the engine's request, as vLLM's
    ``AsyncLLM.generate`` does.

    ``encoder`` and ``busy_seconds`` are abilities some backends have; their defaults here
    say "not this one", and a backend that subclasses the protocol inherits them.
    """

    info: EngineInfo
    counter: TokenCounter
    encoder: PromptEncoder | None = None
    """The model's tokenizer, when this side has it: prompts then go as token ids (control
    tokens unsplit, user text never parsed for them). None: prompts go as text."""

    def stream(self, request: EngineRequest) -> AsyncGenerator[EngineResult, None]:
        """The generation step by step: each step is the result so far (all the text,
        the counts), ``finish_reason`` set on the last; never cut here."""
        ...

    async def generate(self, request: EngineRequest) -> EngineResult:
        """The answer, cut by the request's stop rules (the one loop: ``until_cut``)."""
        return await until_cut(self, request)

    async def abort(self, request_id: str) -> None: ...

    async def warm_up(self) -> None: ...

    async def check_health(self) -> None:
        """Return if the engine answers, raise if it is dead; the caller bounds the wait
        (a stuck engine never returns)."""
        ...

    def busy_seconds(self) -> float | None:
        """CPU seconds the engine's processes have used so far: one that keeps using CPU
        during a slow health check is busy, not stuck. None: it cannot tell (not ours)."""
        return None

    def stats(self) -> dict[str, int]: ...

    async def shutdown(self) -> None: ...
