"""`lsp-copilot bench robustness`: what survives abuse, through the real protocol and engine.

Six trials against one `lsp-copilot serve` process (stdio, the real default engine), one
line each: (a) fuzzed LSP traffic, valid and invalid; (b) hypothesis-generated edit
sequences with non-ASCII text against a reference buffer (in-process against the
DocumentStore: the protocol exposes no document text); (c) 200 simultaneous requests;
(d) the engine process killed mid-stream; (e) secret files opened and typed in; (f) a soak
with the server's RSS measured after a warm-up and at the end.

The client here is a raw JSON-RPC client on purpose: pygls' client refuses to send
malformed frames, invalid JSON or ill-typed params, which is what the fuzzer is for.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import random
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

ANSWER_TIMEOUT_S = 120.0


class RpcError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message", ""))
        self.code = error.get("code")


class RawClient:
    """Writes any bytes to the server; pairs answers with requests by id."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self.messages: list[dict[str, Any]] = []  # window/showMessage params
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(cls, log: Any = None) -> RawClient:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "lsp_copilot", "serve", stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=log if log is not None else asyncio.subprocess.DEVNULL, limit=2**24)
        return cls(proc)

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = await out.readline()
                if not line:
                    self._fail_all()
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line in (b"\r\n", b"\n") and length is not None:
                    break
            message = json.loads(await out.readexactly(length))
            if "method" in message:
                self._on_server_message(message)
                continue
            fut = self._pending.pop(message.get("id"), None)
            if fut is not None and not fut.done():
                if "error" in message:
                    fut.set_exception(RpcError(message["error"]))
                else:
                    fut.set_result(message.get("result"))

    def _fail_all(self) -> None:
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(ConnectionError("the server closed its output"))
        self._pending.clear()

    def _on_server_message(self, message: dict[str, Any]) -> None:
        if message["method"] == "window/showMessage":
            self.messages.append(message.get("params") or {})
        if "id" in message:  # a request to the client (progress tokens, configuration)
            self.write_json({"jsonrpc": "2.0", "id": message["id"], "result": None})

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def write_json(self, message: Any) -> None:
        body = json.dumps(message).encode()
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(
        self, method: str, params: Any = None, *, raw_params: bool = False
    ) -> asyncio.Future[Any]:
        """Send a request; the future holds the result or raises RpcError."""
        msg_id = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = fut
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None or raw_params:
            message["params"] = params
        self.write_json(message)
        return fut

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.write_json(message)

    async def request(self, method: str, params: Any = None,
                      timeout: float = ANSWER_TIMEOUT_S) -> Any:
        return await asyncio.wait_for(self.send(method, params), timeout)

    async def drain(self) -> None:
        assert self.proc.stdin is not None
        await self.proc.stdin.drain()

    async def initialize(self, options: dict[str, Any]) -> None:
        await self.request("initialize", {
            "processId": os.getpid(), "rootUri": None,
            "capabilities": {"window": {"workDoneProgress": True}},
            "initializationOptions": {"lspCopilot": options}})
        self.notify("initialized", {})

    async def stats(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("lspCopilot/stats", timeout=30)
        return result

    async def wait_ready(self, timeout: float = 900) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            s = await self.stats()
            if s["engine_state"] in ("ready", "failed"):
                return s
            if time.monotonic() > deadline:
                raise TimeoutError(f"engine still {s['engine_state']}")
            await asyncio.sleep(0.5)

    def open(self, uri: str, text: str, language: str = "python", version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": language, "version": version, "text": text}})

    def inline(self, uri: str, line: int, character: int) -> asyncio.Future[Any]:
        return self.send("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
            "context": {"triggerKind": 2}})

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            await self.request("shutdown", timeout=30)
            self.notify("exit")
            await self.drain()
        try:
            await asyncio.wait_for(self.proc.wait(), 30)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()
        self._reader.cancel()


def suggestion(result: Any) -> str:
    items = (result or {}).get("items") or []
    return str(items[0].get("insertText") or "") if items else ""


def engine_core_pids(server_pid: int) -> list[int]:
    out = []
    for child in psutil.Process(server_pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "EngineCore" in child.name() or "EngineCore" in " ".join(child.cmdline()):
                out.append(child.pid)
    return out


@dataclass
class Trial:
    name: str
    ok: bool
    summary: str
    numbers: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'}  {self.name:<14} {self.summary}"


# ---------------------------------------------------------------- (a) fuzzed traffic

SOURCE = '''import os


def read_lines(path):
    """Return the lines of the file at path: é, 漢字, 😀."""
    with open(path) as handle:
        return handle.read().splitlines()


def count_words(text):
    words = text.split()
    return '''
PIECES = ["a", "x", " ", "\n", "    ", "(", ")", ":", "😀", "漢字", "é", "return ", "def ", "'"]


def _utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def _random_position(rng: random.Random, text: str) -> dict[str, int]:
    lines = text.split("\n")
    line = rng.randrange(len(lines))
    return {"line": line, "character": rng.randint(0, _utf16_len(lines[line]))}


def _insert(text: str, line: int, character: int, new: str) -> str:
    """Reference edit: insert at an LSP (UTF-16) position that lies on a code point."""
    lines = text.split("\n")
    index, units = len(lines[line]), 0
    for i, ch in enumerate(lines[line]):
        if units >= character:
            index = i
            break
        units += _utf16_len(ch)
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


# --------------------------------------------------------------- (b) edit sequences

def trial_edits(examples: int) -> Trial:
    """Hypothesis edit sequences on DocumentStore (in-process: the protocol shows no text)."""
    try:
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st
    except ImportError:
        return Trial("edits", False, "not run: hypothesis is missing (pip install "
                     "'lsp-copilot[dev]')")

    from lsp_copilot.documents.buffer import Buffer
    from lsp_copilot.documents.store import DocumentStore
    from lsp_copilot.language.ids import parser_for

    pieces = ["a", "_", "1", " ", "    ", "\t", "\n", "\r\n", "😀", "👍🏽", "漢字", "é", "(", ")",
              "[", "]", "{", "}", ":", "'", '"', "#", "def ", "if ", "return ", "class ", "pass"]
    inserted = st.lists(st.sampled_from(pieces), max_size=6).map("".join)
    seeds = ["", SOURCE, 'class A:\n    x = "😀😀"\n\n    def m(self):\n        pass\r\n']
    counts = {"sequences": 0, "edits": 0, "mismatches": 0}

    def utf16_offsets(line: str) -> list[int]:
        """UTF-16 offsets that fall on code-point boundaries of ``line``."""
        out, units = [0], 0
        for ch in line:
            units += _utf16_len(ch)
            out.append(units)
        return out

    def to_index(text: str, line: int, character: int) -> int:
        lines = text.split("\n")
        start = sum(len(x) + 1 for x in lines[:line])
        units = 0
        for i, ch in enumerate(lines[line]):
            if units >= character:
                return start + i
            units += _utf16_len(ch)
        return start + len(lines[line])

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        store = DocumentStore()
        uri = "file:///bench/edits.py"
        text = data.draw(st.sampled_from(seeds))
        store.open(uri, "python", 0, text)
        for version in range(1, data.draw(st.integers(1, 30)) + 1):
            # Positions by "\n"-split lines; CR alone is not a line break for this reference.
            ref_lines = text.split("\n")
            lines_ok = not any("\r" in x[:-1] for x in ref_lines)
            if not lines_ok or data.draw(st.integers(0, 30)) == 0:
                new = data.draw(inserted)
                store.change(uri, version, [(None, new)], "utf-16")
                text = new
            else:
                s_line = data.draw(st.integers(0, len(ref_lines) - 1))
                s_char = data.draw(st.sampled_from(utf16_offsets(ref_lines[s_line].rstrip("\r"))))
                e_line = data.draw(st.integers(s_line, min(s_line + 2, len(ref_lines) - 1)))
                e_offsets = utf16_offsets(ref_lines[e_line].rstrip("\r"))
                e_char = data.draw(st.sampled_from(
                    [o for o in e_offsets if e_line > s_line or o >= s_char] or [s_char]))
                new = data.draw(inserted)
                start, end = to_index(text, s_line, s_char), to_index(text, e_line, e_char)
                store.change(uri, version, [((s_line, s_char, e_line, e_char), new)], "utf-16")
                text = text[:start] + new + text[end:]
            counts["edits"] += 1
            snap = store.snapshot(uri)
            if snap.text != text:
                counts["mismatches"] += 1
                raise AssertionError(f"text differs from the reference after edit {version}")
        counts["sequences"] += 1
        snap = store.snapshot(uri)
        parser = parser_for(snap.grammar or "python")
        assert parser is not None and snap.tree is not None
        fresh = parser.parse(snap.data)
        if not fresh.root_node.has_error:
            assert str(snap.tree.root_node) == str(fresh.root_node), "tree differs"
        else:  # error recovery may differ; the tree must still span the document
            assert snap.tree.root_node.end_byte == fresh.root_node.end_byte, "tree span"
        assert Buffer(snap.text).text == snap.text

    started = time.perf_counter()
    failure = ""
    try:
        run()
    except Exception as exc:  # hypothesis re-raises the shrunk failing example
        failure = f"{type(exc).__name__}: {str(exc)[:200]}"
    seconds = time.perf_counter() - started
    ok = not failure
    return Trial("edits", ok, (
        f"{counts['sequences']} hypothesis sequences, {counts['edits']} edits (UTF-16, emoji, "
        f"CJK, CRLF), in-process DocumentStore: text = reference after every edit, tree = "
        f"fresh parse after every sequence{'' if ok else ' -- ' + failure}; {seconds:.1f} s"),
        {"sequences": counts["sequences"], "edits": counts["edits"], "failure": failure})


# -------------------------------------------------------- (c) 200 simultaneous requests

async def trial_burst(client: RawClient, n: int = 200) -> Trial:
    uris = [f"file:///burst/b{i}.py" for i in range(50)]
    for uri in uris:
        client.open(uri, SOURCE.replace("count_words", f"count_{uri[-5:-3]}"))
    await client.drain()
    before = await client.stats()
    last = SOURCE.split("\n")
    line, char = len(last) - 1, _utf16_len(last[-1])
    started = time.perf_counter()
    futures = [client.inline(uris[i % len(uris)], line, char) for i in range(n)]
    await client.drain()
    done, pending = await asyncio.wait(futures, timeout=ANSWER_TIMEOUT_S)
    burst_s = time.perf_counter() - started
    t0 = time.perf_counter()
    await client.stats()
    stats_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    fresh = await client.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uris[0]}, "position": {"line": 0, "character": 0},
        "context": {"triggerKind": 1}}, timeout=60)
    after_ms = (time.perf_counter() - t0) * 1000
    after = await client.stats()
    failed = sum(1 for f in done if f.exception() is not None)
    with_text = sum(1 for f in done if f.exception() is None and suggestion(f.result()))
    ok = not pending and not failed and fresh is not None
    for uri in uris:
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return Trial("burst", ok, (
        f"{n} simultaneous requests: {len(done)} answered in {burst_s:.1f} s ({with_text} with "
        f"a suggestion, {failed} errors, {len(pending)} unanswered; overloaded "
        f"+{after['overloaded'] - before['overloaded']}, superseded "
        f"+{after['superseded'] - before['superseded']}); right after: stats in "
        f"{stats_ms:.0f} ms, a new completion in {after_ms:.0f} ms"),
        {"requests": n, "answered": len(done), "unanswered": len(pending),
         "with_suggestion": with_text, "seconds": round(burst_s, 2),
         "stats_ms_after": round(stats_ms, 1), "completion_ms_after": round(after_ms, 1),
         "overloaded": after["overloaded"] - before["overloaded"]})


# ------------------------------------------------------------ (d) engine killed

async def _until_suggestion(client: RawClient, uri: str, line: int, char: int,
                            limit_s: float) -> tuple[float | None, int, int]:
    """Seconds until a suggestion comes back; requests sent; requests unanswered."""
    started = time.monotonic()
    sent = hung = 0
    while time.monotonic() - started < limit_s:
        sent += 1
        try:
            result = await asyncio.wait_for(client.inline(uri, line, char), 60)
        except TimeoutError:
            hung += 1
            continue
        if suggestion(result).strip():
            return time.monotonic() - started, sent, hung
        await asyncio.sleep(0.5)
    return None, sent, hung


async def trial_kill(client: RawClient) -> Trial:
    uri = "file:///kill/area.py"
    text = "def area(width, height):\n    return "
    client.open(uri, text)
    await client.drain()
    await client.wait_ready()
    pids = engine_core_pids(client.pid)
    if not pids:
        return Trial("engine-kill", False, "no EngineCore process found")
    before = await client.stats()
    for pid in pids:  # freeze first, so the request is surely mid-stream at the kill
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    request = client.inline(uri, 1, 11)
    await client.drain()
    deadline = time.monotonic() + 30
    while True:
        s = await client.stats()
        if s["engine_requests"] > before["engine_requests"] and s["queue_depth"] >= 1:
            break
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    killed = time.monotonic()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    try:
        first = await asyncio.wait_for(request, 60)
        answered_s: float | None = time.monotonic() - killed
    except TimeoutError:
        first, answered_s = None, None
    back_s, sent, hung = await _until_suggestion(client, uri, 1, 11, limit_s=300)
    back_total = None if back_s is None else time.monotonic() - killed
    after = await client.stats()
    told = [m for m in client.messages if "engine stopped" in str(m.get("message", ""))]
    ok = (answered_s is not None and not suggestion(first) and back_total is not None
          and back_total <= 60 and hung == 0)
    return Trial("engine-kill", ok, (
        f"EngineCore SIGKILLed mid-stream: in-flight request answered "
        f"{'never' if answered_s is None else f'{answered_s:.2f} s'} later (empty); user told "
        f"{len(told)}x; suggestions back "
        f"{'never' if back_total is None else f'{back_total:.1f} s'} after the kill "
        f"({sent} requests meanwhile, {hung} hung); engine_restarts "
        f"+{after['engine_restarts'] - before['engine_restarts']}"),
        {"answered_s": answered_s, "back_s": back_total, "requests": sent, "hung": hung,
         "restarts": after["engine_restarts"] - before["engine_restarts"]})


# ------------------------------------------------------------ (e) secret files

SECRETS = {
    ".env": "DATABASE_URL=postgres://u:p@db/x\nAPI_KEY=",
    "id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n",
    "settings.py": 'AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"\nAWS_SECRET = "',
    "deploy.py": 'TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"\n\ndef deploy():\n    ',
    "server.key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n",
}


async def trial_secrets(client: RawClient, keystrokes: int = 20) -> Trial:
    before = await client.stats()
    requests = 0
    for name, text in SECRETS.items():
        uri = f"file:///secret/{name}"
        client.open(uri, text, "python" if name.endswith(".py") else "plaintext")
        lines = text.split("\n")
        line, char = len(lines) - 1, _utf16_len(lines[-1])
        for k in range(keystrokes):
            ch = "abc(x)"[k % 6]
            pos = {"line": line, "character": char}
            client.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": k + 2},
                "contentChanges": [{"range": {"start": pos, "end": pos}, "text": ch}]})
            char += 1
            await client.request("textDocument/inlineCompletion", {
                "textDocument": {"uri": uri}, "position": {"line": line, "character": char},
                "context": {"triggerKind": 2}}, timeout=60)
            requests += 1
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    after = await client.stats()
    engine = after["engine_requests"] - before["engine_requests"]
    skipped = after["secret_skipped"] - before["secret_skipped"]
    return Trial("secrets", engine == 0 and skipped == requests, (
        f"{len(SECRETS)} secret files, {requests} keystrokes with a request each: "
        f"engine requests +{engine}, secret_skipped +{skipped}"),
        {"requests": requests, "engine_requests": engine, "secret_skipped": skipped})


# ------------------------------------------------------------------ (f) soak

def _rss(pid: int) -> int:
    return int(psutil.Process(pid).memory_info().rss)


async def trial_soak(client: RawClient, total: int, warm_up: int) -> Trial:
    """Completions over a rotating set of documents, opened and closed as an editor would;
    RSS after the warm-up vs at the end (the engine child measured apart)."""
    rng = random.Random(11)
    variants = [SOURCE.replace("count_words", f"count_{i}") for i in range(8)]
    started = time.perf_counter()
    rss_warm = core_warm = 0
    answered = 0
    batch = 8
    sent = 0
    docs_before = (await client.stats())["documents"]
    while sent < total:
        n = min(batch, total - sent)
        futures = []
        for j in range(n):
            k = sent + j
            uri = f"file:///soak/f{k % 40}_{k // 400}.py"  # a new set of URIs every 400
            text = variants[k % len(variants)]
            client.open(uri, text)
            lines = text.split("\n")
            line = rng.choice([len(lines) - 1, 10, 6])
            char = _utf16_len(lines[line])
            futures.append(client.inline(uri, line, char))
        await client.drain()
        done, _ = await asyncio.wait(futures, timeout=ANSWER_TIMEOUT_S)
        for j in range(n):  # closed after the answers: a close cancels what is in flight
            k = sent + j
            client.notify("textDocument/didClose",
                          {"textDocument": {"uri": f"file:///soak/f{k % 40}_{k // 400}.py"}})
        answered += len(done)
        sent += n
        if sent >= warm_up and not rss_warm:
            rss_warm = _rss(client.pid)
            core_warm = sum(_rss(p) for p in engine_core_pids(client.pid))
    rss_end = _rss(client.pid)
    core_end = sum(_rss(p) for p in engine_core_pids(client.pid))
    s = await client.stats()
    growth = (rss_end - rss_warm) / rss_warm * 100 if rss_warm else 0.0
    seconds = time.perf_counter() - started
    ok = answered == total and growth <= 10.0 and s["documents"] == docs_before
    return Trial("soak", ok, (
        f"{total} requests ({answered} answered) in {seconds:.0f} s: server RSS "
        f"{rss_warm / 2**20:.0f} MB after {warm_up} -> {rss_end / 2**20:.0f} MB at the end "
        f"({growth:+.1f}%); EngineCore RSS {core_warm / 2**20:.0f} -> {core_end / 2**20:.0f} MB; "
        f"{s['documents']} documents open after closing all (before: {docs_before}); "
        f"cache hits {s['cache_hits']}, engine requests {s['engine_requests']}"),
        {"requests": total, "answered": answered, "rss_warm_mb": round(rss_warm / 2**20, 1),
         "rss_end_mb": round(rss_end / 2**20, 1), "growth_pct": round(growth, 2),
         "engine_core_rss_mb": [round(core_warm / 2**20), round(core_end / 2**20)],
         "seconds": round(seconds, 1)})


# ------------------------------------------------------------------ driver

async def _run(messages: int, soak: int, examples: int, only: set[str] | None,
               emit: Any, out: Path) -> list[Trial]:
    trials: list[Trial] = []

    def report(trial: Trial) -> None:
        trials.append(trial)
        emit(trial)

    if only is None or "edits" in only:
        report(await asyncio.to_thread(trial_edits, examples))
    if only is not None and only <= {"edits"}:
        return trials
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "robustness-server.log"
    with tempfile.TemporaryDirectory(prefix="lsp-copilot-robustness-") as tmp, \
            open(log_path, "wb") as log:
        print(f"server log: {log_path}", file=sys.stderr)
        client = await RawClient.start(log)
        try:
            # The deadline is a guard against hangs: on a starved machine a completion can
            # take 30-60 s, and the engine-kill trial must see the real ones come back.
            await client.initialize({"cacheDir": tmp, "requestTimeoutMs": 120_000})
            s = await client.wait_ready()
            if s["engine_state"] != "ready":
                raise SystemExit(f"error: the engine did not start: {s['engine_error']}")
            steps = [("fuzz", lambda: trial_fuzz(client, messages)),
                     ("burst", lambda: trial_burst(client)),
                     ("secrets", lambda: trial_secrets(client)),
                     ("engine-kill", lambda: trial_kill(client)),
                     ("soak", lambda: trial_soak(client, soak, max(1, soak // 10)))]
            for name, step in steps:
                if only is not None and name not in only:
                    continue
                if client.proc.returncode is not None:
                    report(Trial(name, False, "not run: the server died"))
                    continue
                ready = await client.wait_ready()  # an earlier trial may have restarted it
                if ready["engine_state"] != "ready":
                    report(Trial(name, False, f"not run: engine {ready['engine_state']}"))
                    continue
                incidents = ready["engine_incidents"]
                trial = await step()
                s = await client.stats()
                if name != "engine-kill" and s["engine_incidents"] != incidents:
                    trial.ok = False
                    trial.summary += (f"; ENGINE INCIDENTS +{s['engine_incidents'] - incidents}:"
                                      f" {s['engine_error']}")
                report(trial)
        finally:
            await client.stop()
    return trials


def run(messages: int = 10_000, soak: int = 5_000, examples: int = 200,
        only: list[str] | None = None, json_out: bool = False,
        out: Path = Path("bench-results")) -> int:
    def emit(trial: Trial) -> None:
        if not json_out:
            print(trial.line(), flush=True)

    trials = asyncio.run(_run(messages, soak, examples, set(only) if only else None, emit,
                              out))
    if json_out:
        print(json.dumps([t.__dict__ for t in trials], indent=2, default=str))
    return 0 if all(t.ok for t in trials) else 1
