"""The HTTP side of the remote backend: the client's arguments, the served models, what a
refused request or a failed connection means, and the server-sent events of a stream."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx

from lsp_copilot.engine.remote.config import RemoteConfig, routing_key
from lsp_copilot.engine.remote.errors import RemoteError, RemoteRetryable

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
"""Worth another try (overload, a replica restarting, a gateway between replicas)."""


def client_args(config: RemoteConfig) -> dict[str, Any]:
    """Keyword arguments of ``httpx.Client`` and ``httpx.AsyncClient`` for the deployment."""
    headers = {"User-Agent": "lsp-copilot"}
    key = config.api_key()
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    if config.routing_header:
        headers[config.routing_header] = routing_key()
    return {
        "base_url": config.base_url,
        "headers": headers,
        "verify": config.ssl_context(),
        "timeout": httpx.Timeout(
            connect=config.connect_timeout_s,
            read=config.first_token_timeout_s,
            write=config.first_token_timeout_s,
            pool=config.connect_timeout_s,
        ),
        "follow_redirects": False,  # a redirect would carry the key somewhere else
        # remoteUrl's user:password, as httpx would have sent them (its basic auth wins over
        # the key's header), but out of the URL that every log line shows.
        **({"auth": httpx.BasicAuth(*config.basic_auth)} if config.basic_auth else {}),
    }


def list_models(client: httpx.Client, config: RemoteConfig) -> list[dict[str, Any]]:
    """``/v1/models``: what the deployment serves (the engine's first reachability check)."""
    try:
        response = client.get("/v1/models")
    except httpx.ConnectError as exc:  # (retryable: the deployment may come up later)
        raise RemoteRetryable(connect_message(exc, config)) from None
    except httpx.TimeoutException:
        raise RemoteRetryable(
            f"no answer from {config.base_url} within "
            f"{config.connect_timeout_s + config.first_token_timeout_s:.1f} s "
            "(remoteConnectTimeoutMs, remoteFirstTokenTimeoutMs)") from None
    except httpx.HTTPError as exc:
        raise RemoteError(f"cannot reach {config.base_url}: {type(exc).__name__}: "
                          f"{exc}") from None
    if response.status_code != 200:
        raise RemoteError(describe_status(response.status_code, response.content, config))
    try:
        data = response.json().get("data", [])
    except (ValueError, AttributeError):
        raise RemoteError(f"{config.base_url}/v1/models did not answer JSON: is remoteUrl "
                          "an OpenAI-compatible server?") from None
    return [m for m in data if isinstance(m, dict) and m.get("id")]


def pick_model(models: list[dict[str, Any]], config: RemoteConfig) -> tuple[str, str]:
    """The served model ``remoteModel`` names (the first one if it is empty), and the
    folder or hub id the server loaded it from (``root``, may be empty)."""
    names = [str(m["id"]) for m in models]
    if not names:
        raise RemoteError(f"{config.base_url} serves no model")
    chosen = next((m for m in models if m["id"] == config.model), None) if (
        config.model) else models[0]
    if chosen is None:
        raise RemoteError(f"remoteModel {config.model!r} is not served at "
                          f"{config.base_url}; it serves: {', '.join(names)}")
    return str(chosen["id"]), str(chosen.get("root") or "")


def _error_text(response_body: bytes) -> str:
    """The server's own message (OpenAI error shape), short."""
    try:
        data = json.loads(response_body)
    except ValueError:
        return response_body.decode("utf-8", "replace").strip()[:300]
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            return str(error.get("message") or error.get("detail") or error)[:300]
        return str(error)[:300]
    return str(data)[:300]


def retry_after(response: httpx.Response) -> float | None:
    """The server's ``Retry-After`` in seconds, if it sent one."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def describe_status(status: int, body: bytes, config: RemoteConfig) -> str:
    """A reason and a fix for a refused request (never the key itself)."""
    detail = _error_text(body)
    if status == 401:
        if config.api_key() is None:
            where = (f"set the environment variable {config.api_key_env} (remoteApiKeyEnv) "
                     "in the environment the editor starts the server from"
                     if config.api_key_env else "set remoteApiKeyEnv to the name of an "
                     "environment variable that holds it")
            return f"the vLLM server at {config.base_url} wants an API key: {where}"
        return (f"the vLLM server at {config.base_url} refused the API key from "
                f"${config.api_key_env} (401 Unauthorized): check its value")
    if status == 403:
        return f"the vLLM server at {config.base_url} denied access (403): {detail}"
    if status == 404:
        return (f"{config.base_url} answered 404 ({detail}): check remoteUrl (the server's "
                "root, without /v1/completions) and remoteModel")
    return f"the vLLM server at {config.base_url} answered {status}: {detail}"


def connect_message(exc: BaseException, config: RemoteConfig) -> str:
    """Why a connection failed, and what to check."""
    text = str(exc)
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return (f"the TLS certificate of {config.host} could not be verified ({text}). If "
                "your deployment uses a private CA, set remoteCaBundle to its PEM file; "
                "verification cannot be turned off")
    return (f"cannot connect to {config.base_url} ({type(exc).__name__}: {text or 'refused'}). "
            "Is the vLLM server running, and is remoteUrl right?")


# -- server-sent events ---------------------------------------------------------------


MAX_EVENT_BYTES = 1 << 20
"""One server-sent event longer than this (vLLM's carry a few tokens: hundreds of bytes)
is not a completion: the stream is dropped rather than buffered."""
MAX_STREAM_BYTES = 16 << 20
"""A whole answer larger than this is dropped too: a server that streams forever must not
grow the editor's server without bound (the token limit ends a real answer far sooner)."""
MAX_ERROR_BYTES = 64 << 10


class TooLarge(RemoteError):
    """The server sent more than an answer can be."""


async def bounded_lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The lines of a streamed body, each at most MAX_EVENT_BYTES and all together at most
    MAX_STREAM_BYTES (``TooLarge`` past either); ``response.aiter_lines`` has no limit."""
    pending = b""
    total = 0
    async for chunk in chunks:
        total += len(chunk)
        if total > MAX_STREAM_BYTES:
            raise TooLarge(f"the answer passed {MAX_STREAM_BYTES >> 20} MB: dropped")
        pending += chunk
        *lines, pending = pending.split(b"\n")
        if len(pending) > MAX_EVENT_BYTES:
            raise TooLarge(f"one event passed {MAX_EVENT_BYTES >> 20} MB: dropped")
        for line in lines:
            yield line.rstrip(b"\r").decode("utf-8", "replace")
    if pending:
        yield pending.rstrip(b"\r").decode("utf-8", "replace")


async def read_capped(chunks: AsyncIterator[bytes], limit: int = MAX_ERROR_BYTES) -> bytes:
    """At most ``limit`` bytes of a body (an error's): the rest is not read."""
    out = b""
    async for chunk in chunks:
        out += chunk
        if len(out) >= limit:
            return out[:limit]
    return out


async def next_line(lines: AsyncIterator[str]) -> str:
    return await lines.__anext__()


def is_done(line: str) -> bool:
    """The stream's last event, ``data: [DONE]``."""
    return line.startswith("data:") and line[len("data:"):].strip() == "[DONE]"


def parse_event(line: str) -> dict[str, Any] | None:
    """One server-sent event line: its JSON chunk, or None for anything else."""
    if not line.startswith("data:"):
        return None  # blank separators, comments (": ping"), event/id fields
    payload = line[len("data:"):].strip()
    try:
        value = json.loads(payload)
    except ValueError:
        log.warning("skipping an unreadable event from the server")
        return None
    return value if isinstance(value, dict) else None
