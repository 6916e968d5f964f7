"""The remote backend against a REAL `vllm serve` (this machine's build, default model) on
loopback.

One vLLM server for the module, started with an API key from the environment
(VLLM_API_KEY) and prefix caching with cached-token details; one lsp-copilot server
configured with ``engineBackend = "remote"`` talks to it through the real protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.support import vllm_serve
from tests.support.lsp import (
    SERVER,
    engine_core_pids,
    fixture_uri,
    frozen,
    initialize,
    open_doc,
    settled,
    stats,
)

# Module-scoped fixtures (the deployment and its client) share the tests' event loop.
pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="module")]

# LSP_COPILOT_TEST_VLLM_URL / _KEY / _MODEL / _LOG: use a `vllm serve` already running
# (with --enable-log-requests, its log in _LOG) instead of starting one.
EXISTING = os.environ.get("LSP_COPILOT_TEST_VLLM_URL")
GOOD_KEY = os.environ.get("LSP_COPILOT_TEST_VLLM_KEY") or secrets.token_hex(16)
SERVER_ENV = {
    **os.environ,
    "LSP_COPILOT_TEST_GOOD_KEY": GOOD_KEY,
    "LSP_COPILOT_TEST_BAD_KEY": "not-" + GOOD_KEY,
}
SERVER_ENV.pop("LSP_COPILOT_TEST_UNSET_KEY", None)
MODEL_NAME = os.environ.get("LSP_COPILOT_TEST_VLLM_MODEL", "smollm2-remote")
# A loaded 2-core machine decodes a few tokens per second: generous limits.
SLOW_MACHINE = {"remoteFirstTokenTimeoutMs": 120_000, "remoteTimeoutMs": 300_000,
                "requestTimeoutMs": 300_000, "healthCheckTimeoutMs": 120_000}


@dataclass(frozen=True)
class Served:
    url: str
    log: Path
    pid: int | None = None  # None: a deployment the test did not start

    def aborts(self) -> int:
        """Requests vLLM aborted because their client went away (--enable-log-requests)."""
        return len(re.findall(r"Request \S+ aborted\.", self.log.read_text(errors="replace")))

    def received(self) -> int:
        """Requests vLLM's API server took in (--enable-log-requests)."""
        return len(re.findall(r"Received request ", self.log.read_text(errors="replace")))

    @contextlib.contextmanager
    def core_frozen(self) -> Iterator[None]:
        """Stop the deployment's EngineCore (SIGSTOP) until the block ends: its API server
        takes requests in and aborts them, but nothing is generated meanwhile."""
        pids = engine_core_pids(self.pid) if self.pid is not None else []
        if self.pid is not None:
            assert pids, "vllm serve's EngineCore should run in a child process"
        with frozen(pids):
            yield


@pytest.fixture(scope="module")  # its memory is free for the modules after
def vllm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`vllm serve` of the default model on a free loopback port; stopped at the end, also
    when a test fails."""
    if EXISTING:
        yield Served(EXISTING, Path(os.environ["LSP_COPILOT_TEST_VLLM_LOG"]))
        return
    from lsp_copilot.models.resolve import resolve_model

    model, _ = resolve_model(None)
    port = vllm_serve.free_port()
    work = tmp_path_factory.mktemp("vllm-serve")
    proc = vllm_serve.start(model, MODEL_NAME, port, work, GOOD_KEY)
    url = f"http://127.0.0.1:{port}"
    try:
        vllm_serve.wait_healthy(proc, url, work / "serve.log")
        yield Served(url, work / "serve.log", proc.pid)
    finally:
        vllm_serve.stop(proc)


def remote_settings(url: str, **extra: Any) -> dict[str, Any]:
    return {"lspCopilot": {"engineBackend": "remote", "remoteUrl": url,
                           "remoteApiKeyEnv": "LSP_COPILOT_TEST_GOOD_KEY",
                           # one suggestion: each test counts the engine calls it makes
                           "cache": False, "maxSuggestions": 1, **SLOW_MACHINE, **extra}}


@pytest_lsp.fixture(scope="module",
                    config=ClientServerConfig(server_command=SERVER, server_env=SERVER_ENV))
async def remote_client(lsp_client: LanguageClient, vllm: Served):  # type: ignore[no-untyped-def]
    """An lsp-copilot server whose engine is the vLLM server above."""
    await initialize(lsp_client, "visual-studio-code", remote_settings(vllm.url))
    s = await until(lsp_client, lambda s: s["engine_state"] in ("ready", "failed"))
    assert s["engine_state"] == "ready", s
    yield
    await lsp_client.shutdown_session()


async def until(client: LanguageClient, ok: Callable[[dict[str, Any]], bool],
                timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while not ok(s := await stats(client)):
        assert time.monotonic() < deadline, f"condition never held: {s}"
        await asyncio.sleep(0.1)
    return s


def metric(url: str, name: str, label: str = "") -> float:
    """One counter or gauge from vLLM's Prometheus endpoint (summed over engines)."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and label in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def _params(uri: str, line: int, char: int) -> types.InlineCompletionParams:
    return types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line, char),
        context=types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Invoked))


WORDS = '''import os


def read_lines(path):
    """Return the lines of the file at path."""
    with open(path) as handle:
        return handle.read().splitlines()


def count_words(text):
    words = text.split()
    return len(
'''


async def test_remote_backend_completes_through_the_protocol(
        remote_client: LanguageClient, vllm: Served) -> None:
    before = await stats(remote_client)
    assert before["engine"]["backend"] == "remote" and before["engine"]["model"] == MODEL_NAME
    uri = fixture_uri("e2e_remote_words.py")
    open_doc(remote_client, uri, WORDS)
    prompted = metric(vllm.url, "vllm:prompt_tokens_total")
    result = await remote_client.text_document_inline_completion_async(
        _params(uri, 11, len("    return len(")))
    assert result is not None and result.items, "expected a suggestion from the real model"
    text = result.items[0].insert_text
    assert isinstance(text, str) and text.strip() and "\n" not in text, text
    after = await settled(remote_client)
    assert after["engine_requests"] == before["engine_requests"] + 1
    assert after["prompt_tokens"] > before["prompt_tokens"]
    assert after["generated_tokens"] > before["generated_tokens"]
    assert after["remote_errors"] == 0
    # The server's tokenizer is readable here, so the prompt went as token ids, and the
    # deployment counted exactly the ids we sent.
    assert after["prompt_token_ids"] - before["prompt_token_ids"] == (
        after["prompt_tokens"] - before["prompt_tokens"])
    # The deployment computed it: its own prompt-token counter moved as much as ours.
    deadline = time.monotonic() + 30
    while (metric(vllm.url, "vllm:prompt_tokens_total") - prompted
           < after["prompt_tokens"] - before["prompt_tokens"]):
        assert time.monotonic() < deadline, "vLLM never counted the prompt"
        await asyncio.sleep(0.1)


async def test_remote_cancel_closes_the_stream_and_vllm_aborts(
        remote_client: LanguageClient, vllm: Served) -> None:
    uri = fixture_uri("e2e_remote_cancel.py")
    open_doc(remote_client, uri, "class Inventory:\n    def __init__(self):\n")
    before = await stats(remote_client)
    deadline = time.monotonic() + 60
    while metric(vllm.url, "vllm:num_requests_running") > 0:  # earlier aborts settle
        assert time.monotonic() < deadline, "vLLM is still busy with an earlier request"
        await asyncio.sleep(0.1)
    aborted, received = vllm.aborts(), vllm.received()
    # The deployment generates nothing until the cancel has closed the stream: the
    # request is still running when it comes, however fast the deployment is.
    with vllm.core_frozen():
        fut = asyncio.ensure_future(remote_client.protocol.send_request_async(
            types.TEXT_DOCUMENT_INLINE_COMPLETION, _params(uri, 2, 0),
            msg_id="remote-cancel-1"))
        await until(remote_client,
                    lambda s: s["engine_requests"] == before["engine_requests"] + 1)
        deadline = time.monotonic() + 120
        while vllm.received() < received + 1:  # it reached vLLM
            assert time.monotonic() < deadline and not fut.done(), "the request never came"
            await asyncio.sleep(0.02)
        remote_client.protocol.notify(types.CANCEL_REQUEST,
                                      types.CancelParams(id="remote-cancel-1"))
        with pytest.raises(JsonRpcException) as err:
            await fut
        assert err.value.code == types.LSPErrorCodes.RequestCancelled
        after = await until(remote_client,
                            lambda s: s["engine_aborted"] == before["engine_aborted"] + 1, 30)
        assert after["cancelled"] == before["cancelled"] + 1
    # Closing the stream is what vLLM sees as the abort; nothing runs on after it.
    deadline = time.monotonic() + 30
    while vllm.aborts() < aborted + 1:
        assert time.monotonic() < deadline, "vLLM never logged the abort"
        await asyncio.sleep(0.1)
    while metric(vllm.url, "vllm:num_requests_running") > 0:  # the gauge follows a step later
        assert time.monotonic() < deadline, "the aborted request still runs"
        await asyncio.sleep(0.1)


async def test_remote_stats_count_cached_prompt_tokens(vllm: Served) -> None:
    """The real server's usage, including prefix-cache hits, reaches EngineResult."""
    from lsp_copilot.engine.base import EngineRequest
    from lsp_copilot.engine.remote.backend import RemoteEngine
    from lsp_copilot.settings.core import parse_settings
    from lsp_copilot.tokens import TokenCounters

    os.environ["LSP_COPILOT_TEST_GOOD_KEY"] = GOOD_KEY
    settings, errors = parse_settings(remote_settings(vllm.url))
    assert not errors
    engine = await asyncio.to_thread(RemoteEngine.create, settings.engine_setup, lambda _: None,
                                    TokenCounters())
    # The tokenizer is found where the server loaded the model (same machine).
    assert engine.counter.name.startswith("tokenizers:")
    body = "".join(f"def handler_{i}(event):\n    return event.get('{i}')\n\n" for i in range(24))
    first = await engine.generate(EngineRequest("remote-cache-1", body + "def a(x):\n", 2))
    second = await engine.generate(EngineRequest("remote-cache-2", body + "def b(y):\n", 2))
    await engine.shutdown()
    # Counted with the same tokenizer as the server (special tokens aside).
    assert abs(first.prompt_tokens - engine.counter.count(body + "def a(x):\n")) <= 2
    assert first.prompt_tokens > 200
    assert second.generated_tokens == 2 and second.first_token_ms is not None
    # Block size 32: all whole blocks of the shared body come from the prefix cache.
    assert second.cached_prompt_tokens >= (engine.counter.count(body) // 32 - 1) * 32
    assert second.cached_prompt_tokens > first.cached_prompt_tokens


async def test_remote_bad_settings_are_explained_and_the_server_keeps_running(
        remote_client: LanguageClient, vllm: Served) -> None:
    uri = fixture_uri("e2e_remote_settings.py")  # nothing shown here yet: no typing-through
    open_doc(remote_client, uri, WORDS)

    async def configure(expect: str, state: str = "failed", **extra: Any) -> dict[str, Any]:
        remote_client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings=remote_settings(vllm.url, **extra)))
        s = await until(remote_client, lambda s: s["engine_state"] == state
                        and expect in (s["engine_error"] or ""), 60)
        # Still answering: an empty suggestion, at once, not a hang.
        result = await asyncio.wait_for(remote_client.text_document_inline_completion_async(
            _params(uri, 11, len("    return len("))), 30)
        assert result is None or not result.items
        return s

    s = await configure("refused the API key from $LSP_COPILOT_TEST_BAD_KEY",
                        remoteApiKeyEnv="LSP_COPILOT_TEST_BAD_KEY")
    assert GOOD_KEY not in s["engine_error"]
    await configure("wants an API key: set the environment variable LSP_COPILOT_TEST_UNSET_KEY",
                    remoteApiKeyEnv="LSP_COPILOT_TEST_UNSET_KEY")
    port = vllm_serve.free_port()
    # Nothing listens there (yet): tried again until something does.
    await configure(f"cannot connect to http://127.0.0.1:{port}", "restarting",
                    remoteUrl=f"http://127.0.0.1:{port}", remoteRetries=0)
    shown = [m.message for m in remote_client.messages]
    assert any(re.search("could not start: remote backend: cannot connect", m) for m in shown)
    assert not any(GOOD_KEY in m for m in shown)

    # Fixed settings bring the engine back, without restarting the language server.
    remote_client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings=remote_settings(vllm.url)))
    await until(remote_client, lambda s: s["engine_state"] == "ready", 60)
    result = await remote_client.text_document_inline_completion_async(
        _params(uri, 11, len("    return len(")))
    assert result is not None and result.items and result.items[0].insert_text.strip()

