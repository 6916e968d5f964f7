"""The shared engine's messages: one JSON object per line over its Unix socket.

Servers send ``hello``, ``generate``, ``abort``, ``health``, ``status`` and ``stop``
(with ``unused``: only if no server uses it, else the answer is ``busy``); the engine
answers with ``state`` (loading, ready, failed), ``progress``, ``tick`` (a silent sign that
a load moves), ``text`` (a generation so far), ``done``, ``aborted`` (with the engine's
counters, for a generation the server cut; ``stats`` brings them again a moment later),
``error``, ``moved`` (a compiled copy took the socket over: finish the calls under way,
then reconnect) and replies keyed by the request's ``id``. Only generation crosses the socket:
prompts, cutting and everything the pipeline decides stay in each server (``stop_at`` is
never sent: the server applies it to the streamed text and aborts).
"""

from __future__ import annotations

import json
from typing import Any

from lsp_copilot.engine.base import EngineRequest, EngineResult, TokenChoice

MAX_LINE = 16 * 1024 * 1024
"""A prompt of a long model context as token ids fits many times over."""


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    """One message; a line that is no JSON object is a ``ValueError``."""
    message = json.loads(line)
    if not isinstance(message, dict) or not isinstance(message.get("op"), str):
        raise ValueError("not a message")
    return message


def request_message(request: EngineRequest) -> dict[str, Any]:
    return {"op": "generate", "id": request.request_id, "prompt": request.prompt,
            "prompt_token_ids": list(request.prompt_token_ids or ()) or None,
            "max_tokens": request.max_tokens, "temperature": request.temperature,
            "priority": request.priority, "stop": list(request.stop),
            "stop_token_ids": list(request.stop_token_ids), "seed": request.seed,
            "token_choices": request.token_choices}


def request_from(message: dict[str, Any], request_id: str) -> EngineRequest:
    """The engine's side: the same request under a name unique across servers. A field
    missing or of the wrong type is a ``ValueError`` that says which (the host answers it
    with ``error``: a server must never wait on silence)."""
    if not isinstance(message.get("id"), str) or not message["id"]:
        raise ValueError("generate needs an \"id\" (a string)")
    ids = message.get("prompt_token_ids")
    if not isinstance(message.get("prompt"), str) and not ids:
        raise ValueError("generate needs a \"prompt\" (a string) or \"prompt_token_ids\"")
    max_tokens = message.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError("generate needs \"max_tokens\" (a positive integer)")
    try:
        return EngineRequest(
            request_id=request_id, prompt=str(message.get("prompt") or ""),
            max_tokens=max_tokens, temperature=float(message.get("temperature") or 0),
            priority=int(message.get("priority") or 0), stop=tuple(
                str(s) for s in message.get("stop") or ()),
            prompt_token_ids=tuple(int(i) for i in ids) if ids else None,
            stop_token_ids=tuple(int(i) for i in message.get("stop_token_ids") or ()),
            seed=message.get("seed"), token_choices=int(message.get("token_choices") or 0))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"generate has a field of the wrong type: {exc}") from None


def choices_out(positions: tuple[tuple[TokenChoice, ...], ...]) -> list[list[list[Any]]]:
    return [[[c.token_id, c.text, c.logprob] for c in pos] for pos in positions]


def choices_in(raw: list[list[list[Any]]]) -> tuple[tuple[TokenChoice, ...], ...]:
    return tuple(tuple(TokenChoice(int(i), str(t), float(lp)) for i, t, lp in pos)
                 for pos in raw)


COUNTS = ("prompt_tokens", "cached_prompt_tokens", "generated_tokens", "first_token_ms")


def progress_message(request_id: str, text: str, result: EngineResult,
                     new_choices: tuple[tuple[TokenChoice, ...], ...]) -> dict[str, Any]:
    """A generation so far: its text, its counts and the token choices not yet sent."""
    return {"op": "text", "id": request_id, "text": text,
            **{name: getattr(result, name) for name in COUNTS},
            "choices": choices_out(new_choices)}


def result_message(request_id: str, result: EngineResult) -> dict[str, Any]:
    return {"op": "done", "id": request_id, "text": result.text,
            "finish_reason": result.finish_reason, "stopped_early": result.stopped_early,
            **{name: getattr(result, name) for name in COUNTS}}


def result_from(message: dict[str, Any], choices: tuple[tuple[TokenChoice, ...], ...],
                ) -> EngineResult:
    return EngineResult(
        text=str(message.get("text", "")), finish_reason=message.get("finish_reason"),
        stopped_early=bool(message.get("stopped_early")),
        prompt_tokens=int(message.get("prompt_tokens") or 0),
        cached_prompt_tokens=int(message.get("cached_prompt_tokens") or 0),
        generated_tokens=int(message.get("generated_tokens") or 0),
        first_token_ms=message.get("first_token_ms"), token_choices=choices)
