"""Trial (a): fuzzed LSP traffic, valid and invalid, with every request answered."""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from lsp_copilot_bench.robustness.client import ANSWER_TIMEOUT_S, RawClient, RpcError
from lsp_copilot_bench.robustness.trial import SOURCE, Trial, utf16_len

PIECES = ["a", "x", " ", "\n", "    ", "(", ")", ":", "😀", "漢字", "é", "return ", "def ", "'"]


def _random_position(rng: random.Random, text: str) -> dict[str, int]:
    lines = text.split("\n")
    line = rng.randrange(len(lines))
    return {"line": line, "character": rng.randint(0, utf16_len(lines[line]))}


def _insert(text: str, line: int, character: int, new: str) -> str:
    """Reference edit: insert at an LSP (UTF-16) position that lies on a code point."""
    lines = text.split("\n")
    index, units = len(lines[line]), 0
    for i, ch in enumerate(lines[line]):
        if units >= character:
            index = i
            break
        units += utf16_len(ch)
    lines[line] = lines[line][:index] + new + lines[line][index:]
    return "\n".join(lines)


def _malformed(rng: random.Random) -> bytes:
    """Frames a reader must skip and survive (each ends in CRLF, so the next frame's header
    is read as a header: a length that lies about more bytes than follow would swallow
    the next message in any LSP implementation, so none of these does that)."""
    return rng.choice([
        b"garbage line\r\n",
        b"Content-Length: abc\r\n\r\nnot a body\r\n",
        b"Content-Type: application/json\r\n\r\n{}\r\n",
        b"\r\n\r\n",
        b"Content-Length: 5\r\n\r\n{\"jso" + b"n\": 1}\r\n",
        b"Content-Length: -3\r\n\r\n\r\n",
        bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))) + b"\r\n",
    ])


def _invalid_json(rng: random.Random) -> bytes:
    body = rng.choice([b"{", b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\":", b"nul",
                       b"[1, 2", "{\"a\": \"\u00e9\"".encode(), b"\xff\xfe\xfd", b"{}}"])
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def trial_fuzz(client: RawClient, count: int, seed: int = 7) -> Trial:
    rng = random.Random(seed)
    docs: dict[str, tuple[str, int]] = {}  # uri -> (reference text, version)
    futures: list[asyncio.Future[Any]] = []
    kinds: dict[str, int] = {}
    base = "file:///fuzz/doc{}.py"
    popups_before = len(client.messages)
    started = time.perf_counter()
    for i in range(count):
        kind = rng.choices(
            ["open", "change", "close", "inline", "completion", "stats", "bad_params",
             "unknown_request", "unknown_notification", "unopened", "past_end", "malformed",
             "invalid_json", "not_rpc", "backwards", "command", "cancel"],
            weights=[4, 22, 2, 8, 3, 2, 10, 4, 4, 8, 4, 7, 7, 3, 4, 3, 5])[0]
        kinds[kind] = kinds.get(kind, 0) + 1
        uri = base.format(rng.randrange(12))
        if kind == "open" or (kind in ("change", "inline", "completion") and uri not in docs):
            docs[uri] = (SOURCE, 1)
            client.open(uri, SOURCE)
        elif kind == "change":
            text, version = docs[uri]
            pos = _random_position(rng, text)
            piece = rng.choice(PIECES)
            try:
                new_text = _insert(text, pos["line"], pos["character"], piece)
            except IndexError:
                new_text = text
            docs[uri] = (new_text, version + 1)
            client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version + 1},
                "contentChanges": [{"range": {"start": pos, "end": pos}, "text": piece}]})
        elif kind == "close" and uri in docs:
            del docs[uri]
            client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        elif kind in ("inline", "completion"):
            text, _ = docs[uri]
            pos = _random_position(rng, text)
            method = ("textDocument/inlineCompletion" if kind == "inline"
                      else "textDocument/completion")
            params: dict[str, Any] = {"textDocument": {"uri": uri}, "position": pos}
            if kind == "inline":
                params["context"] = {"triggerKind": rng.choice([1, 2])}
            futures.append(client.send(method, params))
        elif kind == "stats":
            futures.append(client.send("lspCopilot/stats", rng.choice([None, {}, [1]])))
        elif kind == "bad_params":
            futures.append(client.send(rng.choice(
                ["textDocument/inlineCompletion", "textDocument/completion"]), rng.choice([
                    {"textDocument": {"uri": uri}, "position": {"line": "3", "character": 0}},
                    {"textDocument": {"uri": uri}, "position": {"line": -1, "character": 0}},
                    {"position": {"line": 0, "character": 0}},
                    {"textDocument": {}, "position": {}},
                    {"textDocument": {"uri": 5}, "position": {"line": 0, "character": 0}},
                    [1, 2, 3], "params", 42, None]), raw_params=True))
        elif kind == "unknown_request":
            futures.append(client.send(f"$/fuzz/{rng.randrange(1000)}", {"x": 1}))
        elif kind == "unknown_notification":
            client.notify(rng.choice(["$/fuzz", "custom/thing", "textDocument/didFoo"]), {})
        elif kind == "unopened":
            ghost = f"file:///fuzz/ghost{rng.randrange(100)}.py"
            client.notify(rng.choice(["textDocument/didChange", "textDocument/didClose",
                                      "textDocument/didSave"]), {
                "textDocument": {"uri": ghost, "version": 3},
                "contentChanges": [{"text": "x = 1\n"}]})
            if rng.random() < 0.5:
                futures.append(client.inline(ghost, 0, 0))
        elif kind == "past_end" and uri in docs:
            _, version = docs[uri]
            far = {"line": 10_000, "character": 5}
            client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version + 1},
                "contentChanges": [{"range": {"start": far, "end": far}, "text": "z"}]})
            futures.append(client.inline(uri, 10_000, 0))
        elif kind == "malformed":
            client.write(_malformed(rng))
        elif kind == "invalid_json":
            client.write(_invalid_json(rng))
        elif kind == "not_rpc":
            client.write_json(rng.choice([[1, 2], 42, "text", {"id": 99999}, {"jsonrpc": "1.0"},
                                          {"jsonrpc": "2.0", "id": 12345678, "result": 1}]))
        elif kind == "backwards" and uri in docs:
            text, version = docs[uri]
            # A stale version with full content: the document must follow the full text.
            client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": max(0, version - 5)},
                "contentChanges": [{"text": text}]})
        elif kind == "command":
            futures.append(client.send("workspace/executeCommand", rng.choice([
                {"command": "lspCopilot.didAccept", "arguments": [{"bad": True}]},
                {"command": "lspCopilot.didAccept", "arguments": []},
                {"command": "no.such.command", "arguments": [1]},
                {"command": "lspCopilot.didAccept"}])))
        elif kind == "cancel":
            client.notify("$/cancelRequest", {"id": rng.choice([1, 10**9, "x", None])})
        if i % 50 == 0:
            await client.drain()
            await asyncio.sleep(0)
    await client.drain()
    sent_s = time.perf_counter() - started
    done, pending = await asyncio.wait(futures, timeout=ANSWER_TIMEOUT_S) if futures else (
        set(), set())
    errors: dict[Any, int] = {}
    for fut in done:
        exc = fut.exception()
        if isinstance(exc, RpcError):
            errors[exc.code] = errors.get(exc.code, 0) + 1
        elif exc is not None:
            errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
    alive = client.proc.returncode is None
    s = await client.stats() if alive else {}
    # Every request answered, none with an internal error (a bad input must get a clear one).
    ok = alive and not pending and not any(isinstance(k, str) or k == -32603 for k in errors)
    total_s = time.perf_counter() - started
    broken = sum(kinds.get(k, 0) for k in ("malformed", "invalid_json", "not_rpc"))
    return Trial("fuzz", ok, (
        f"{count} messages ({broken} malformed/invalid JSON/not JSON-RPC), "
        f"{len(futures)} requests: "
        f"{len(done)} answered, {len(pending)} unanswered; errors by code {errors}; "
        f"server {'alive' if alive else 'DEAD'}, {s.get('documents', '?')} documents open, "
        f"{len(client.messages) - popups_before} showMessage popups; {total_s:.1f} s"),
        {"messages": count, "requests": len(futures), "answered": len(done),
         "unanswered": len(pending), "errors": {str(k): v for k, v in errors.items()},
         "kinds": kinds, "alive": alive, "seconds": round(total_s, 1),
         "popups": len(client.messages) - popups_before,
         "send_seconds": round(sent_s, 1)})

