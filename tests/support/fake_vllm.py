"""A FAKE vLLM server (scripted HTTP on loopback) for the remote backend's unit tests:
retries, backoff, timeouts, TLS and key handling need failures on demand, which a real
server does not give."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

KEY = "test-key-5f1d0c9a"  # what the fake server expects; must never be logged

MODELS = {"object": "list", "data": [{"id": "coder", "object": "model", "root": "coder"}]}


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


Reply = Callable[[asyncio.StreamWriter, Seen], Awaitable[None]]


@dataclass
class FakeVllmServer:
    """Answers /v1/models and /tokenize itself; /v1/completions from a script of replies."""

    script: list[Reply] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    ssl_context: ssl.SSLContext | None = None
    require_key: bool = True
    port: int = 0
    _server: asyncio.base_events.Server | None = None

    async def start(self) -> FakeVllmServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0,
                                                  ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()

    @property
    def url(self) -> str:
        return f"{'https' if self.ssl_context else 'http'}://127.0.0.1:{self.port}"

    def completions(self) -> list[Seen]:
        return [s for s in self.seen if s.path == "/v1/completions"]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            writer.close()
            return
        lines = head.decode().split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {k.lower(): v.strip() for k, v in
                   (line.split(":", 1) for line in lines[1:] if ":" in line)}
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        seen = Seen(method, path, headers, json.loads(raw) if raw else None)
        self.seen.append(seen)
        try:
            if self.require_key and headers.get("authorization") != f"Bearer {KEY}":
                await status(401, {"error": "Unauthorized"})(writer, seen)
            elif path == "/v1/models":
                await status(200, MODELS)(writer, seen)
            elif path == "/tokenize":
                await status(200, {"count": 2 * len(seen.body["prompt"].split())})(writer, seen)
            elif path != "/v1/completions":
                await status(404, {"detail": "Not Found"})(writer, seen)
            elif self.script:
                await self.script.pop(0)(writer, seen)
            else:
                await stream(["ok"])(writer, seen)
        except (ConnectionError, asyncio.CancelledError):
            pass  # the client left, or the test ended: a fake server just stops
        finally:
            writer.close()


def status(code: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        data = json.dumps(body).encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        writer.write(f"HTTP/1.1 {code} X\r\ncontent-type: application/json\r\n"
                     f"content-length: {len(data)}\r\n{extra}connection: close\r\n\r\n".encode()
                     + data)
        await writer.drain()

    return reply


def broken_status(code: int) -> Reply:
    """A non-200 answer whose body breaks off before its announced length."""
    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        writer.write(f"HTTP/1.1 {code} X\r\ncontent-type: application/json\r\n"
                     "content-length: 1000\r\n\r\n{\"error\": ".encode())
        await writer.drain()
        writer.transport.abort()

    return reply


def chunk(text: str | None, usage: dict[str, Any] | None = None,
           finish: str | None = None) -> bytes:
    choices = [] if text is None else [{"index": 0, "text": text, "finish_reason": finish}]
    return f"data: {json.dumps({'choices': choices, 'usage': usage})}\n\n".encode()


def stream(pieces: list[str], delay: float = 0.0, drop_after: int | None = None,
           cached: int | None = 7) -> Reply:
    """SSE like vLLM's: continuous usage per chunk, then a usage chunk with cached tokens."""

    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"connection: close\r\n\r\n: a comment line\n\n")
        for i, piece in enumerate(pieces):
            if drop_after is not None and i == drop_after:
                writer.transport.abort()  # the connection breaks mid-stream
                return
            await asyncio.sleep(delay)
            usage = {"prompt_tokens": 11, "completion_tokens": i + 1}
            finish = "length" if i == len(pieces) - 1 else None
            writer.write(chunk(piece, usage, finish))
            await writer.drain()
        final: dict[str, Any] = {"prompt_tokens": 11, "completion_tokens": len(pieces)}
        if cached is not None:
            final["prompt_tokens_details"] = {"cached_tokens": cached}
        writer.write(chunk(None, final) + b"data: [DONE]\n\n")
        await writer.drain()

    return reply


def hang() -> Reply:
    async def reply(writer: asyncio.StreamWriter, seen: Seen) -> None:
        await asyncio.sleep(5)

    return reply
