"""Fallback through the real protocol: the main engine is a REAL `vllm serve` (remote
backend), every route falls back to an embedded engine (SmolLM2-135M). The deployment is
paused (SIGSTOP: it takes connections and answers nothing), resumed, stopped and started
again; the circuit breaker notices (periodic health checks are off here), requests go to the
embedded engine while it is open, and come back once a probe answers. (A failed call
also has the supervisor check the deployment's health at once: a paused one is taken out
until it answers again, which falls back the same way.) The editor hears once when its
suggestions fall back and once when they are back."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.support import vllm_serve
from tests.support.lsp import ROOT, SERVER, initialize, stats

# The server fixture is per module, so the test runs on the module's event loop (its client
# answers only there).
pytestmark = [pytest.mark.engine, pytest.mark.asyncio(loop_scope="module")]

KEY = secrets.token_hex(16)
ENV = {**os.environ, "LSP_COPILOT_TEST_FALLBACK_KEY": KEY}
FALLBACK = "smollm2-135m"
KINDS = ("singleLine", "multiLine", "explicit", "prefetch")
SOURCE = "def area(width, height):\n    return "


@dataclass
class Deployment:
    url: str
    port: int
    work: Path
    model: str
    proc: Any = None

    def start(self) -> None:
        self.proc = vllm_serve.start(self.model, "remote-smollm", self.port, self.work, KEY)

    def wait(self) -> None:
        vllm_serve.wait_healthy(self.proc, self.url, self.work / "serve.log")

    def signal(self, sig: signal.Signals) -> None:
        os.killpg(self.proc.pid, sig)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    from lsp_copilot.models.resolve import resolve_model

    model, _ = resolve_model(FALLBACK)
    port = vllm_serve.free_port()
    served = Deployment(f"http://127.0.0.1:{port}", port,
                        tmp_path_factory.mktemp("vllm-fallback"), model)
    served.start()
    try:
        served.wait()
        yield served
    finally:
        vllm_serve.stop(served.proc)


@pytest_lsp.fixture(scope="module",
                    config=ClientServerConfig(server_command=SERVER, server_env=ENV))
async def client(lsp_client: LanguageClient, deployment: Deployment):  # type: ignore[no-untyped-def]
    settings = {"lspCopilot": {
        "engineBackend": "remote", "remoteUrl": deployment.url,
        "remoteApiKeyEnv": "LSP_COPILOT_TEST_FALLBACK_KEY", "remoteRetries": 0,
        "routes": {kind: ["main", FALLBACK] for kind in KINDS},
        "breakerFailures": 2, "breakerCooldownMs": 2_000,
        "healthCheckIntervalMs": 3_600_000,  # the breaker alone notices
        "remoteFirstTokenTimeoutMs": 8_000, "remoteTimeoutMs": 60_000,
        "requestTimeoutMs": 120_000, "cache": False, "maxSuggestions": 1, "prefetch": False}}
    await initialize(lsp_client, "visual-studio-code", settings)
    deadline = time.monotonic() + 600
    while True:
        s = await asyncio.wait_for(stats(lsp_client), 60)
        fallbacks = s["routes"]["explicit"]["fallbacks"]
        if s["engine_state"] == "ready" and fallbacks and fallbacks[0]["state"] == "ready":
            break
        assert s["engine_state"] != "failed" and time.monotonic() < deadline, s
        await asyncio.sleep(0.5)
    yield
    await lsp_client.shutdown_session()


def _answered(s: dict[str, Any]) -> dict[str, int]:
    return {a["route"]: a["requests"] for a in s["routes"]["explicit"]["answered"]}


async def _ask(client: LanguageClient, uri: str) -> tuple[str | None, str]:
    """One explicit request: the route that took it and its text."""
    before = _answered(await asyncio.wait_for(stats(client), 60))
    result = await asyncio.wait_for(client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(1, len("    return ")),
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Invoked))), 180)
    after = _answered(await asyncio.wait_for(stats(client), 60))
    route = next((r for r, n in after.items() if n > before.get(r, 0)), None)
    items = result.items if isinstance(result, types.InlineCompletionList) else result or []
    text = items[0].insert_text if items else ""
    return route, text if isinstance(text, str) else ""


async def _until(client: LanguageClient, uri: str, route: str, limit_s: float
                 ) -> tuple[float, str]:
    """Ask until ``route`` answers with a suggestion; seconds it took, and the text."""
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        took, text = await _ask(client, uri)
        if took == route and text.strip():
            return time.monotonic() - started, text
    pytest.fail(f"{route} never answered within {limit_s:g} s: {await stats(client)}")


def _told(client: LanguageClient, since: int) -> list[tuple[types.MessageType, str]]:
    return [(m.type, m.message) for m in client.messages[since:]
            if "not answering" in m.message or "answers again" in m.message]


async def test_the_deployment_paused_stopped_and_restarted_falls_back_and_returns(
        client: LanguageClient, deployment: Deployment) -> None:
    uri = (ROOT / "tests" / "fixtures" / "e2e_fallback.py").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                             text=SOURCE)))
    await _until(client, uri, "main", 120)
    timings: dict[str, float] = {}

    # Paused: connections are taken and nothing answers; two first-token timeouts open it.
    seen = len(client.messages)
    deployment.signal(signal.SIGSTOP)
    timings["paused: to fall back"], _ = await _until(client, uri, FALLBACK, 120)
    s = await stats(client)
    assert s["routes"]["explicit"]["breaker"] in ("open", "half-open")
    assert s["breaker_opened"] >= 1 and s["route_fallbacks"] >= 1
    deployment.signal(signal.SIGCONT)
    resumed = time.monotonic()
    await _until(client, uri, "main", 120)
    timings["resumed: to return"] = time.monotonic() - resumed
    told = _told(client, seen)
    assert [kind for kind, _ in told] == [types.MessageType.Warning, types.MessageType.Info], told
    assert FALLBACK in told[0][1]

    # Stopped: connections are refused; started again, a probe finds it back.
    seen = len(client.messages)
    vllm_serve.stop(deployment.proc)
    timings["stopped: to fall back"], _ = await _until(client, uri, FALLBACK, 120)
    deployment.start()
    await asyncio.to_thread(deployment.wait)
    ready = time.monotonic()
    await _until(client, uri, "main", 120)
    timings["restarted: to return"] = time.monotonic() - ready
    told = _told(client, seen)
    assert [kind for kind, _ in told] == [types.MessageType.Warning, types.MessageType.Info], told
    print("fallback timings (s):", {k: round(v, 1) for k, v in timings.items()})
