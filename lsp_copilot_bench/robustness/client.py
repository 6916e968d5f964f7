"""A raw JSON-RPC client of `lsp-copilot serve`: it writes any bytes, malformed frames
included (pygls' client refuses to), and pairs answers with requests by id."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import sys
import time
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
    async def start(cls, log: Any = None, cwd: Path | None = None,
                    env: dict[str, str] | None = None) -> RawClient:
        """``lsp-copilot serve``; with ``cwd``, as an editor starts it in a workspace: the
        console script (``python -m`` would itself put ``cwd`` first on ``sys.path``)."""
        script = Path(sys.executable).with_name("lsp-copilot")
        command = ([str(script), "serve"] if cwd is not None and script.exists() else
                   [sys.executable, "-m", "lsp_copilot", "serve"])
        proc = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=log if log is not None else asyncio.subprocess.DEVNULL, limit=2**24,
            cwd=cwd, env=None if env is None else {**os.environ, **env})
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

    async def initialize(self, options: dict[str, Any], root: Path | None = None) -> None:
        await self.request("initialize", {
            "processId": os.getpid(), "rootUri": root.as_uri() if root else None,
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

    def inline(self, uri: str, line: int, character: int, trigger: int = 2
               ) -> asyncio.Future[Any]:
        """An inline completion request: ``trigger`` 2 a typing pause, 1 the user asked."""
        return self.send("textDocument/inlineCompletion", {
            "textDocument": {"uri": uri}, "position": {"line": line, "character": character},
            "context": {"triggerKind": trigger}})

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


def _is_engine_core(proc: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return "EngineCore" in proc.name() or "EngineCore" in " ".join(proc.cmdline())
    return False


def engine_core_pids(server_pid: int) -> list[int]:
    """The processes that run the server's EngineCores: its own EngineCore children, those
    of the shared engines it is attached to, or such an engine's host itself when it runs
    its EngineCore in its own process (a CPU)."""
    from lsp_copilot.engine.shared.control import ask
    from lsp_copilot.engine.shared.runtime import places, runtime_dir

    out = []
    with contextlib.suppress(psutil.Error):
        out = [c.pid for c in psutil.Process(server_pid).children(recursive=True)
               if _is_engine_core(c)]
    for place in places(runtime_dir()):
        reply = ask(place, {"op": "status", "id": "status"})
        if reply is None or server_pid not in reply.get("client_pids", ()):
            continue
        with contextlib.suppress(psutil.Error):
            host = psutil.Process(reply["pid"])
            cores = [c.pid for c in host.children(recursive=True) if _is_engine_core(c)]
            out += cores or [host.pid]
    return out
