"""A remote that answers too much, and credentials in remoteUrl: bounded reads, and a
URL that logs and messages show without its user:password (against the FAKE vLLM server
of tests/support/fake_vllm.py; the adversarial trial does the same through the server)."""

from __future__ import annotations

import asyncio
import base64
import logging
from typing import Any

import pytest

from lsp_copilot.engine.base import EngineRequest
from lsp_copilot.engine.remote import transport
from lsp_copilot.engine.remote.backend import RemoteEngine
from lsp_copilot.engine.remote.config import shown_url, split_userinfo
from lsp_copilot.engine.remote.errors import RemoteError
from lsp_copilot.settings.core import parse_settings
from lsp_copilot.tokens import TokenCounters
from tests.support.fake_vllm import FakeVllmServer, Seen, stream

PASSWORD = "Ur1Pa55wd9Qx"


def _engine(url: str, counters: TokenCounters) -> RemoteEngine:
    s, errors = parse_settings({"engineBackend": "remote", "remoteUrl": url,
                                "remoteApiKeyEnv": "", "remoteRetries": 0,
                                "remoteFirstTokenTimeoutMs": 2000, "remoteTimeoutMs": 5000})
    assert not errors, errors
    return RemoteEngine.create(s, lambda _: None, counters)


def test_userinfo_leaves_the_url_for_basic_auth() -> None:
    assert split_userinfo(f"http://admin:{PASSWORD}@h.example:8000") == (
        "http://h.example:8000", ("admin", PASSWORD))
    assert split_userinfo("https://h.example") == ("https://h.example", None)
    assert shown_url("http://a%40b:p%3Aw@h/x") == "http://h/x"


async def test_remote_url_credentials_are_sent_as_basic_auth_and_never_logged(
        caplog: pytest.LogCaptureFixture, token_counters: TokenCounters) -> None:
    fake = await FakeVllmServer(require_key=False).start()
    fake.script = [stream([" 1", "\n"])]
    try:
        url = fake.url.replace("http://", f"http://admin:{PASSWORD}@")
        with caplog.at_level(logging.DEBUG):
            engine = await asyncio.to_thread(_engine, url, token_counters)
            result = await engine.generate(EngineRequest("r1", "def f():\n", 8))
            await engine.shutdown()
    finally:
        await fake.stop()
    assert result.text == " 1\n"
    expected = "Basic " + base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
    assert fake.completions()[0].headers["authorization"] == expected
    assert PASSWORD not in caplog.text and PASSWORD not in engine.info.device


def _endless_event(size: int) -> Any:
    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"
                     b'data: {"choices": [{"index": 0, "text": "')
        for _ in range(size // 65536):
            writer.write(b"x" * 65536)
            await writer.drain()

    return reply


async def test_an_event_larger_than_any_answer_is_dropped_unread(
        token_counters: TokenCounters) -> None:
    fake = await FakeVllmServer(require_key=False).start()
    fake.script = [_endless_event(transport.MAX_EVENT_BYTES * 8)]
    try:
        engine = await asyncio.to_thread(_engine, fake.url, token_counters)
        with pytest.raises(RemoteError, match="MB: dropped"):
            await engine.generate(EngineRequest("r1", "def f():\n", 8))
        await engine.shutdown()
    finally:
        await fake.stop()


async def test_lines_are_bounded_one_by_one_and_in_all() -> None:
    async def chunks(parts: list[bytes]) -> Any:
        for part in parts:
            yield part

    got = [line async for line in transport.bounded_lines(chunks([b"a\nb", b"c\r\n", b"d"]))]
    assert got == ["a", "bc", "d"]
    many = [b"data: {}\n" * 1000] * (transport.MAX_STREAM_BYTES // 9000 + 2)
    with pytest.raises(transport.TooLarge):
        _ = [line async for line in transport.bounded_lines(chunks(many))]
    assert await transport.read_capped(chunks([b"x" * 50_000] * 4)) == b"x" * (64 << 10)
