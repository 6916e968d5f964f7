"""A hostile OpenAI-compatible server on loopback, for the adversarial trial.

It stands where a team's vLLM deployment would (``engineBackend: remote``): it records
every prompt the server sends (the bytes that leave the machine, to look for planted
secrets in) and answers each completion in the way ``mode`` says, well-behaved or hostile
(an endless body, one enormous event, garbage, invisible characters). Benchmark code
only: no setting of the product can reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

MODELS = {"object": "list", "data": [{"id": "hostile-coder", "object": "model",
                                      "root": "hostile-coder"}]}

BIDI = "\u202e\u2066\u200b\u200d\ufeff\u2069\u202c"
"""Trojan-source characters: right-to-left override, isolates, zero-width ones."""

ANSWERS = {
    "ok": " radius * radius\n",
    "bidi": f" radius {BIDI[0]}* radius{BIDI[1:4]} # {BIDI[4:]}ok\n",
    "secret": ' radius * 2  # "AKIAQYLPMN5HHHFPZAM2"\n',
}
"""What each well-formed mode streams (a bidi answer hides characters in an expression).
Each starts with a space: the server's prompt ends before the space typed after
``return``, as a BPE model's tokens expect."""

HUGE_EVENT_BYTES = 64 * 1024 * 1024
"""One server-sent event this long, with no newline: a client must stop reading it."""


@dataclass
class HostileRemote:
    mode: str = "ok"
    prompts: list[str] = field(default_factory=list)
    requests: int = 0
    port: int = 0
    _server: asyncio.base_events.Server | None = None

    async def start(self) -> HostileRemote:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def url(self, userinfo: str = "") -> str:
        return f"http://{userinfo + '@' if userinfo else ''}127.0.0.1:{self.port}"

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 5)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, v in
                       (line.split(":", 1) for line in lines[1:] if ":" in line)}
            raw = await reader.readexactly(int(headers.get("content-length", "0")))
            body: Any = json.loads(raw) if raw else {}
            if path == "/v1/models":
                await _json(writer, 200, MODELS)
            elif path == "/tokenize":
                await _json(writer, 200, {"count": max(1, len(str(body.get("prompt", ""))) // 4)})
            elif path == "/health":
                await _json(writer, 200, {})
            elif path == "/v1/completions" and method == "POST":
                self.requests += 1
                prompt = body.get("prompt")
                self.prompts.append(prompt if isinstance(prompt, str) else json.dumps(prompt))
                await self._complete(writer)
            else:
                await _json(writer, 404, {"detail": "Not Found"})
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError,
                ValueError):
            pass  # the client left (as it should, from a hostile answer)
        finally:
            writer.close()

    async def _complete(self, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                     b"connection: close\r\n\r\n")
        if self.mode in ANSWERS:
            answer = ANSWERS[self.mode]
            for at in range(0, len(answer), 4):
                writer.write(_event(answer[at:at + 4]))
            writer.write(_event(None, finish="stop") + b"data: [DONE]\n\n")
        elif self.mode == "garbage":
            writer.write(b"data: {not json\n\ndata: [1, 2]\n\n\x00\xff\xfe garbage\n\n"
                         b"data: {\"choices\": \"no\"}\n\ndata: [DONE]\n\n")
        elif self.mode == "huge-event":
            writer.write(b'data: {"choices": [{"index": 0, "text": "')
            chunk = b"x" * (1024 * 1024)
            for _ in range(HUGE_EVENT_BYTES // len(chunk)):
                writer.write(chunk)
                await writer.drain()
        elif self.mode == "endless":  # small events forever, slowly: only a limit ends it
            while True:
                writer.write(_event("radius "))
                await writer.drain()
                await asyncio.sleep(0.01)
        await writer.drain()


def _event(text: str | None, finish: str | None = None) -> bytes:
    choices = [] if text is None and finish is None else [
        {"index": 0, "text": text or "", "finish_reason": finish}]
    usage = {"prompt_tokens": 10, "completion_tokens": 1}
    return f"data: {json.dumps({'choices': choices, 'usage': usage})}\n\n".encode()


async def _json(writer: asyncio.StreamWriter, code: int, body: Any) -> None:
    data = json.dumps(body).encode()
    writer.write(f"HTTP/1.1 {code} X\r\ncontent-type: application/json\r\n"
                 f"content-length: {len(data)}\r\nconnection: close\r\n\r\n".encode() + data)
    await writer.drain()
