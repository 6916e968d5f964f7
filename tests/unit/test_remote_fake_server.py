"""The remote backend's HTTP logic against a FAKE vLLM server (scripted HTTP on loopback).

Retries, backoff, timeouts, TLS verification and key handling need failures on demand,
which a real server does not give. The real `vllm serve` path is in
tests/e2e/test_remote_backend.py.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import logging
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from lsp_copilot.engine.base import EngineRequest
from lsp_copilot.engine.factory import EngineFactory
from lsp_copilot.engine.failures import explain_failure
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.engine.remote.backend import RemoteEngine
from lsp_copilot.engine.remote.config import routing_key
from lsp_copilot.engine.remote.errors import RemoteError
from lsp_copilot.settings.core import Settings, parse_settings
from lsp_copilot.tokens import TokenCounters
from tests.support.fake_vllm import (
    KEY,
    FakeVllmServer,
    Seen,
    broken_status,
    chunk,
    hang,
    status,
    stream,
)


def settings(url: str, **extra: Any) -> Settings:
    raw = {"engineBackend": "remote", "remoteUrl": url, "remoteApiKeyEnv": "FAKE_VLLM_KEY",
           "remoteBackoffMs": 10, "remoteConnectTimeoutMs": 500,
           "remoteFirstTokenTimeoutMs": 500, "remoteTimeoutMs": 3000, **extra}
    parsed, errors = parse_settings(raw)
    assert not errors, errors
    return parsed


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_VLLM_KEY", KEY)


@pytest.fixture
async def fake() -> Any:
    server = await FakeVllmServer().start()
    yield server
    await server.stop()


MakeEngine = Callable[[Settings], Awaitable[tuple[RemoteEngine, list[float]]]]


@pytest.fixture
def make_engine(token_counters: TokenCounters) -> MakeEngine:
    """Connects a remote engine (counting with the session's counters) whose retry
    backoff is recorded instead of slept."""
    async def make(s: Settings) -> tuple[RemoteEngine, list[float]]:
        engine = await asyncio.to_thread(RemoteEngine.create, s, lambda _: None,
                                        token_counters)
        delays: list[float] = []

        async def record(delay: float) -> None:
            delays.append(delay)

        engine._sleep = record
        return engine, delays

    return make


def request(**extra: Any) -> EngineRequest:
    return EngineRequest(request_id="r1", prompt="def f():\n", max_tokens=16, **extra)


async def test_fake_server_streams_and_counts_usage(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    fake.script = [stream(["    return", " 1", "\n"])]
    engine, _ = await make_engine(settings(fake.url))
    assert engine.model == "coder" and engine.info.backend == "remote"
    result = await engine.generate(request(priority=1, stop=("\n\n",)))
    await engine.shutdown()
    assert result.text == "    return 1\n"
    assert (result.prompt_tokens, result.generated_tokens, result.cached_prompt_tokens) == (
        11, 3, 7)
    assert result.finish_reason == "length" and result.first_token_ms is not None
    sent = fake.completions()[0]
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["x-session-id"] == routing_key()
    assert sent.headers["x-request-id"] == "r1"
    body = sent.body
    assert "suffix" not in body  # vLLM rejects it: the prompt is sent finished
    assert body["prompt"] == "def f():\n" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    # Stop strings are matched here: the server would hold back a stream's last characters.
    assert "stop" not in body and body["priority"] == 1 and body["model"] == "coder"


async def test_fake_server_stop_strings_are_matched_while_streaming(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    fake.script = [stream(["a", "b<", "|end", "|>c", "d"], delay=0.05)]
    engine, _ = await make_engine(settings(fake.url))
    seen: list[str] = []

    def watch(text: str) -> int | None:
        seen.append(text)
        return None

    result = await engine.generate(request(stop=("<|end|>",), stop_at=watch))
    await engine.shutdown()
    assert result.text == "ab" and result.finish_reason == "stop" and result.stopped_early
    assert seen == ["a", "ab", "ab"]  # the open "<", "<|end" never shown


async def test_fake_server_gets_token_ids_when_the_prompt_has_them(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    engine, _ = await make_engine(settings(fake.url))
    await engine.generate(request(prompt_token_ids=(1, 990, 17), stop_token_ids=(0, 2)))
    await engine.shutdown()
    body = fake.completions()[0].body
    # vLLM takes token ids as the prompt: control tokens stay unsplit, text stays text.
    assert body["prompt"] == [1, 990, 17] and body["stop_token_ids"] == [0, 2]
    assert engine.encoder is None and engine.info.template == "prefix-only"  # "coder": no family


async def test_fake_server_stop_at_closes_the_stream_early(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    fake.script = [stream(["a", "b\n", "c", "d"], delay=0.05)]
    engine, _ = await make_engine(settings(fake.url))
    result = await engine.generate(
        request(stop_at=lambda t: t.index("\n") if "\n" in t else None))
    await engine.shutdown()
    assert result.text == "ab" and result.stopped_early and result.finish_reason == "stop_at"
    # Known from the chunks read so far; cached tokens only come in the final chunk.
    assert result.generated_tokens == 2 and result.cached_prompt_tokens == 0


async def test_fake_server_5xx_and_429_are_retried_with_backoff(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    fake.script = [status(503, {"error": {"message": "busy"}}),
                   status(502, {"error": {"message": "bad gateway"}}),
                   stream(["x"])]
    engine, delays = await make_engine(settings(fake.url, remoteRetries=3))
    result = await engine.generate(request())
    assert result.text == "x"
    assert len(fake.completions()) == 3 and engine.stats()["remote_retries"] == 2
    # Exponential with jitter in [0.5, 1]: 10 ms then 20 ms nominal.
    assert 0.005 <= delays[0] <= 0.010 and 0.010 <= delays[1] <= 0.020

    fake.script = [status(429, {"error": "slow down"}, {"retry-after": "0.3"}), stream(["y"])]
    result = await engine.generate(request())
    await engine.shutdown()
    assert result.text == "y" and delays[-1] == pytest.approx(0.3)


async def test_fake_server_retries_give_up_with_the_reason(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    fake.script = [status(500, {"error": {"message": "engine dead"}})] * 3
    engine, delays = await make_engine(settings(fake.url, remoteRetries=2))
    with pytest.raises(RemoteError, match=r"engine dead.*after 3 attempts"):
        await engine.generate(request())
    assert len(fake.completions()) == 3 and len(delays) == 2
    assert delays[1] > delays[0] / 2  # doubled (with jitter) each time
    assert engine.stats()["remote_errors"] == 1
    await engine.shutdown()


async def test_fake_server_an_error_answer_that_breaks_off_is_retried(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    """The body of a 503 cut mid-way is a failed request like any other: retried, then
    answered (it escaped as a bare transport error, never retried nor counted)."""
    fake.script = [broken_status(503), stream(["ok"])]
    engine, delays = await make_engine(settings(fake.url, remoteRetries=2))
    result = await engine.generate(request())
    await engine.shutdown()
    assert result.text == "ok" and len(fake.completions()) == 2 and len(delays) == 1


async def test_fake_server_no_retry_after_tokens_came(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    fake.script = [stream(["one", "two", "three"], delay=0.02, drop_after=1), stream(["no"])]
    engine, delays = await make_engine(settings(fake.url, remoteRetries=3))
    with pytest.raises(RemoteError, match="broke after tokens came"):
        await engine.generate(request())
    await engine.shutdown()
    assert len(fake.completions()) == 1 and delays == []


async def test_fake_server_client_errors_are_not_retried(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    fake.script = [status(400, {"error": {"message": "prompt too long"}})]
    engine, delays = await make_engine(settings(fake.url))
    with pytest.raises(RemoteError, match="400: prompt too long"):
        await engine.generate(request())
    await engine.shutdown()
    assert len(fake.completions()) == 1 and delays == []


async def test_fake_server_older_vllm_refusing_priority(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    fake.script = [status(400, {"error": {"message": "Priority scheduling is not enabled."}}),
                   stream(["z"]), stream(["w"])]
    engine, delays = await make_engine(settings(fake.url))
    assert (await engine.generate(request(priority=1))).text == "z"
    assert (await engine.generate(request(priority=1))).text == "w"
    await engine.shutdown()
    bodies = [s.body for s in fake.completions()]
    assert "priority" in bodies[0] and "priority" not in bodies[1] and "priority" not in bodies[2]
    assert delays == []  # not a retry: the same request, without priority


async def test_fake_server_first_token_timeout(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    fake.script = [hang(), stream(["late"], delay=0.0)]
    engine, _ = await make_engine(settings(fake.url, remoteFirstTokenTimeoutMs=200,
                                                remoteRetries=1))
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await engine.generate(request())
    assert result.text == "late" and engine.stats()["remote_timeouts"] == 1
    assert 0.2 <= loop.time() - started < 2.0

    fake.script = [hang(), hang()]
    with pytest.raises(RemoteError, match="timed out waiting for the"):
        await engine.generate(request())
    await engine.shutdown()


async def test_fake_server_total_timeout_bounds_a_slow_stream(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    fake.script = [stream(["a"] * 50, delay=0.05)]
    engine, _ = await make_engine(settings(fake.url, remoteTimeoutMs=400))
    with pytest.raises(RemoteError, match="remoteTimeoutMs"):
        await engine.generate(request())
    await engine.shutdown()


async def test_fake_server_cancel_closes_the_connection(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    closed = asyncio.Event()
    streaming = asyncio.Event()

    async def endless(writer: asyncio.StreamWriter, seen: Seen) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n")
        try:
            while True:
                writer.write(chunk("t", {"prompt_tokens": 1, "completion_tokens": 1}))
                await writer.drain()
                streaming.set()
                await asyncio.sleep(0.001)
        except ConnectionError:
            closed.set()  # the client went away: what vLLM turns into an abort

    fake.script = [endless]
    engine, _ = await make_engine(settings(fake.url))
    task = asyncio.ensure_future(engine.generate(request()))
    await asyncio.wait_for(streaming.wait(), 10)
    for _ in range(20):  # tokens keep arriving: an abort must not be lost between two reads
        await asyncio.sleep(0)
    await engine.abort("r1")
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(closed.wait(), 10)
    await engine.shutdown()


async def test_fake_server_unreachable_and_bad_keys_are_explained(
        fake: FakeVllmServer, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture, make_engine: MakeEngine) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.delenv("FAKE_VLLM_KEY", raising=False)
    with pytest.raises(RemoteError, match="wants an API key: set the environment variable "
                                          "FAKE_VLLM_KEY"):
        await make_engine(settings(fake.url))
    monkeypatch.setenv("FAKE_VLLM_KEY", "wrong-" + KEY)
    with pytest.raises(RemoteError, match=r"refused the API key from \$FAKE_VLLM_KEY") as err:
        await make_engine(settings(fake.url))
    assert KEY not in str(err.value) and KEY not in caplog.text
    port = fake.port
    await fake.stop()  # Server.close() stops listening at once: no wait needed
    with pytest.raises(RemoteError, match=r"cannot connect to http://127\.0\.0\.1") as err:
        await make_engine(settings(f"http://127.0.0.1:{port}"))
    assert explain_failure(err.value).startswith("remote backend: cannot connect")


async def test_fake_server_manager_reports_failure_and_stays_up(
        fake: FakeVllmServer, monkeypatch: pytest.MonkeyPatch,
        token_counters: TokenCounters) -> None:
    monkeypatch.setenv("FAKE_VLLM_KEY", "wrong")
    manager = EngineManager(EngineFactory(token_counters))
    result = await manager.start(settings(fake.url).engine_setup, lambda _: None)
    assert not result.ok and manager.state == "failed"
    assert "refused the API key" in (manager.error or "")
    monkeypatch.setenv("FAKE_VLLM_KEY", KEY)
    result = await manager.retry()  # the user's lspCopilot.restartEngine, once the key is set
    assert result is not None and result.ok and manager.engine().info.model == "coder"
    await manager.shutdown()


async def test_fake_server_health_check(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    engine, _ = await make_engine(settings(fake.url))
    await engine.check_health()  # the fake has no /health: /v1/models answers instead
    assert [s.path for s in fake.seen[-2:]] == ["/health", "/v1/models"]
    port = fake.port
    await fake.stop()
    await engine.shutdown()
    with pytest.raises(RemoteError, match=f"127.0.0.1:{port} does not answer"):
        await engine.check_health()


async def test_fake_server_going_away_is_noticed_by_the_supervisor(
        fake: FakeVllmServer, key_env: None, token_counters: TokenCounters) -> None:
    manager = EngineManager(EngineFactory(token_counters))
    s = settings(fake.url, healthCheckIntervalMs=50, engineMaxRestarts=0)
    assert (await manager.start(s.engine_setup, lambda _: None)).ok and manager.state == "ready"
    await fake.stop()  # the deployment goes away while the editor runs
    deadline = asyncio.get_running_loop().time() + 10
    while manager.state == "ready":
        assert asyncio.get_running_loop().time() < deadline, "the supervisor never noticed"
        await asyncio.sleep(0.05)
    assert "does not answer" in (manager.error or ""), manager.error
    await manager.shutdown()


async def test_fake_server_key_never_sent_in_clear_to_another_host(
        key_env: None, make_engine: MakeEngine) -> None:
    with pytest.raises(RemoteError, match="must use https://"):
        await make_engine(settings("http://vllm.example.invalid:8000"))


async def test_fake_server_model_choice(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    with pytest.raises(RemoteError, match=r"'other' is not served.*it serves: coder"):
        await make_engine(settings(fake.url, remoteModel="other"))
    engine, _ = await make_engine(settings(fake.url, remoteModel="coder"))
    # No tokenizer can be found for "coder": cl100k scaled by the server's /tokenize.
    assert "via /tokenize" in engine.counter.name
    assert engine.counter.count("alpha beta gamma") >= 1


def _certificates(tmp: Path) -> tuple[Path, Path, Path]:
    """A private CA and a server certificate for 127.0.0.1 signed by it."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    def name(cn: str) -> Any:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(name("fake CA")).issuer_name(name("fake CA"))
          .public_key(ca_key.public_key()).serial_number(1)
          .not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(name("127.0.0.1")).issuer_name(name("fake CA"))
            .public_key(key.public_key()).serial_number(2)
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    ca_file, cert_file, key_file = tmp / "ca.pem", tmp / "server.pem", tmp / "server.key"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return ca_file, cert_file, key_file


async def test_fake_server_tls_is_verified(
        tmp_path: Path, key_env: None, make_engine: MakeEngine) -> None:
    ca_file, cert_file, key_file = _certificates(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    server = await FakeVllmServer(ssl_context=context, script=[stream(["secure"])]).start()
    try:
        # A certificate no trusted CA signed: refused, with the way out.
        with pytest.raises(RemoteError, match=r"could not be verified.*remoteCaBundle"):
            await make_engine(settings(server.url))
        assert not server.completions()
        engine, _ = await make_engine(settings(server.url, remoteCaBundle=str(ca_file)))
        assert (await engine.generate(request())).text == "secure"
        await engine.shutdown()
    finally:
        await server.stop()


def test_remote_settings_restart_the_engine() -> None:
    from lsp_copilot.settings.core import ENGINE_FIELDS

    assert {"engine_backend", "remote_url", "remote_api_key_env"} <= ENGINE_FIELDS


def test_a_key_pasted_into_the_env_name_setting_is_refused_and_not_echoed() -> None:
    pasted = "sk-live-abcdef0123456789"
    parsed, errors = parse_settings({"remoteApiKeyEnv": pasted})
    assert parsed.remote_api_key_env == "LSP_COPILOT_API_KEY"
    assert errors and "not the key itself" in errors[0] and pasted not in errors[0]
    _, errors = parse_settings({"remoteUrl": "ftp://x"})
    assert errors and "https://" in errors[0]


async def test_an_abort_is_not_lost_when_the_awaited_line_completes_at_the_same_time(
        fake: FakeVllmServer, key_env: None, make_engine: MakeEngine) -> None:
    """Python 3.11's wait_for returns the result and drops such a cancel: the stream ran on."""
    engine, _ = await make_engine(settings(fake.url))
    line: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    reading = asyncio.ensure_future(engine._within(line, float("inf"), "the next token"))
    for _ in range(3):  # let it start and block on the line
        await asyncio.sleep(0)
    assert not reading.done()
    line.set_result("data: {}")
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    await engine.shutdown()
