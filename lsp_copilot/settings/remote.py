"""Remote backend settings: a vLLM deployment (OpenAI-compatible HTTP) instead of the
embedded engine. Every one is read when the backend connects, so a change restarts it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsp_copilot.settings.checks import (
    ENV_NAME,
    HEADER_NAME,
    IS_STR,
    URL,
    Check,
    int_range,
    one_of,
    setting,
)


def _remote(default: Any, doc: str, check: Check, *, redact: bool = False) -> Any:
    """A remote backend setting: read when the backend connects, so it restarts it."""
    return setting(default, "Remote backend: " + doc, check, redact=redact,
                   restarts_engine=True)


@dataclass(frozen=True)
class RemoteSettings:
    """Remote backend: a vLLM deployment instead of the embedded engine."""

    engine_backend: str = setting(
        "embedded",
        "embedded (vLLM in this process) or remote (a vLLM deployment at remoteUrl).",
        one_of("embedded", "remote"), restarts_engine=True,
    )
    remote_url: str = _remote(
        "", "root URL of the vLLM OpenAI-compatible server (https://...).", URL
    )
    remote_model: str = _remote(
        "", "served model name; empty: the first one the server lists.", IS_STR
    )
    remote_api_key_env: str = _remote(
        "LSP_COPILOT_API_KEY", "NAME of the environment variable holding the API key (sent "
        "as Bearer; never put the key itself in settings).", ENV_NAME, redact=True
    )
    remote_connect_timeout_ms: int = _remote(
        2000, "time to connect, in ms.", int_range(50, 120_000)
    )
    remote_first_token_timeout_ms: int = _remote(
        5000, "time from request to first token, in ms.", int_range(50, 600_000)
    )
    remote_timeout_ms: int = _remote(
        15000, "time for a whole completion, retries included, in ms.",
        int_range(100, 600_000)
    )
    remote_retries: int = _remote(
        2, "retries after connection errors, 429 and 5xx, only before the first token.",
        int_range(0, 10)
    )
    remote_backoff_ms: int = _remote(
        100, "first retry delay, doubled each retry (with jitter), in ms.",
        int_range(0, 10_000)
    )
    remote_ca_bundle: str = _remote(
        "", "extra PEM CA bundle to trust (TLS is always verified).", IS_STR
    )
    remote_routing_header: str = _remote(
        "X-Session-ID", "header carrying a stable anonymous per-user id, so that a "
        "session-affinity router keeps your prefix cache on one replica; empty: none.",
        HEADER_NAME
    )
    remote_tokenizer: str = _remote(
        "", "local tokenizer.json (or its folder) for token budgets; empty: found "
        "automatically, else cl100k calibrated with the server's /tokenize.", IS_STR
    )
