"""A server's side of the shared engine: find it or start it, then use it as an Engine.

``SharedStarter.attach`` (blocking, in the manager's loading thread) connects to the
engine of these settings; when none answers it takes the engine's lock, and the one server
that holds it starts the engine (a stale socket from a crash is replaced) while the others
wait on the lock and then attach. It returns once the engine is ready, passing the load's
progress on. ``SharedEngine`` then streams generations over its own connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import itertools
import json
import logging
import os
import signal
import socket
import subprocess
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from lsp_copilot.engine import defaults, device
from lsp_copilot.engine.base import (
    Engine,
    EngineDown,
    EngineInfo,
    EngineRequest,
    EngineResult,
    EngineUnavailable,
)
from lsp_copilot.engine.failures import StartFailed
from lsp_copilot.engine.shared import wire
from lsp_copilot.engine.shared.control import connect, stop_unused
from lsp_copilot.engine.shared.host import process_tree_cpu
from lsp_copilot.engine.shared.runtime import (
    EnginePlace,
    engine_fields,
    engine_name,
    private_dir,
    same_user,
)
from lsp_copilot.process import python_command
from lsp_copilot.prompts.encoder import PromptEncoder
from lsp_copilot.settings.layers import EngineSetup
from lsp_copilot.tokens import TokenCounter, TokenCounters

log = logging.getLogger(__name__)

Reporter = Any  # Callable[[str], None]; "" is a silent sign of progress
SOCKET_WAIT_S = 60.0
"""How long a started engine may take to open its socket (before vLLM is imported)."""


class SharedEngineError(StartFailed):
    """The shared engine could not start, or went away while a server waited on it."""


def place_for(settings: EngineSetup) -> EnginePlace:
    from lsp_copilot.engine.device import detect
    from lsp_copilot.models.presets import default_preset

    label = settings.engine.model or default_preset(detect(settings.engine.device).device).name
    return EnginePlace(private_dir(), engine_name(settings, label))


def log_tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


class SharedStarter:
    """Attaches a server to the shared engine of its settings, starting it if need be."""

    def __init__(self) -> None:
        self.host_pid: int | None = None
        self._sock: socket.socket | None = None

    def attach(self, settings: EngineSetup, report: Reporter,
               counters: TokenCounters) -> SharedEngine:
        place = place_for(settings)
        report(f"attaching to the shared engine {place.name}")
        sock = connect(place.socket)
        if sock is None:
            with _locked(place.lock):  # one server starts it; the others wait, then attach
                sock = connect(place.socket)
                if sock is None:
                    for name in stop_unused(place.folder, keep=place.name):
                        report(f"stopped the unused shared engine {name} to make room")
                    report("starting the shared engine")
                    sock = self._start(place, settings)
        self._sock = sock
        try:
            state = self._wait_ready(sock, report, place)
        finally:
            self._sock = None
            sock.close()
        return SharedEngine(place, state, counters)

    def _start(self, place: EnginePlace, settings: EngineSetup) -> socket.socket:
        from lsp_copilot.logs import default_log_file

        logs = default_log_file().parent
        logs.mkdir(parents=True, exist_ok=True, mode=0o700)
        # In the runtime folder, without it on sys.path: never the editor's folder (the
        # user's project), whose calendar.py would replace the standard library's.
        command = python_command("-m", "lsp_copilot", "engine", "host",
                                 "--name", place.name, "--label", place.name.rsplit("-", 1)[0],
                                 "--settings", json.dumps(engine_fields(settings)),
                                 "--idle-minutes", str(settings.supervision.engine_idle_minutes))
        env = defaults.with_environment(dict(os.environ, PYTHONFAULTHANDLER="1"),
                                        settings.engine, device.detect(
                                            settings.engine.device).device)
        log_path = place.log(logs)
        fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with open(fd, "ab") as out:
            starter = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=out, start_new_session=True, env=env,
                                       cwd=place.folder)
            code = starter.wait()  # the engine detaches at once: this returns
        if code != 0:
            raise SharedEngineError(f"the shared engine did not start (exit {code}): "
                                    f"{log_tail(log_path)}")
        deadline = time.monotonic() + SOCKET_WAIT_S
        while time.monotonic() < deadline:
            sock = connect(place.socket)
            if sock is not None:
                return sock
            time.sleep(0.1)
        raise SharedEngineError(f"the shared engine did not open {place.socket} within "
                                f"{SOCKET_WAIT_S:g} s: {log_tail(log_path)}")

    def _wait_ready(self, sock: socket.socket, report: Reporter,
                    place: EnginePlace) -> dict[str, Any]:
        sock.sendall(wire.encode({"op": "hello", "pid": os.getpid()}))
        stream = sock.makefile("rb")
        for line in stream:
            message = wire.decode(line)
            op = message["op"]
            if op == "state":
                self.host_pid = message.get("pid")
                if message["state"] == "ready":
                    return message
                if message["state"] == "failed":
                    raise SharedEngineError(str(message.get("message")))
                report("")  # attached to a load under way: it moves
            elif op == "progress":
                report(str(message.get("message", "")))
            elif op == "tick":
                report("")
        raise SharedEngineError(f"the shared engine {place.name} exited while loading")

    def busy_seconds(self) -> float | None:
        return process_tree_cpu(self.host_pid) if self.host_pid else None

    def kill(self) -> None:
        """A start that hangs: its stacks to its log (SIGUSR1: the host; SIGABRT: the
        EngineCore, which has PYTHONFAULTHANDLER), then its whole process group."""
        pid = self.host_pid
        if pid is None:
            return
        import psutil

        with contextlib.suppress(Exception):
            children = psutil.Process(pid).children(recursive=True)
            os.kill(pid, signal.SIGUSR1)
            for child in children:
                with contextlib.suppress(psutil.Error):
                    child.send_signal(signal.SIGABRT)
            psutil.wait_procs(children, timeout=2.0)
        with contextlib.suppress(OSError):
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        sock = self._sock
        if sock is not None:  # wakes the loading thread that waits on it
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def _locked(path: Path) -> Any:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock (also when the process dies)


class SharedEngine(Engine):
    """The shared engine as this server's pipeline sees it."""

    def __init__(self, place: EnginePlace, state: dict[str, Any],
                 counters: TokenCounters) -> None:
        self.place = place
        self.pid: int | None = state.get("pid")
        info = dict(state.get("info") or {})
        self.info = EngineInfo(**info)
        model_path = str(state.get("model_path") or "")
        self.counter: TokenCounter = counters.for_model(model_path)
        self.encoder: PromptEncoder | None = PromptEncoder.for_model(model_path)
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._pending: dict[str, asyncio.Queue[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self._closed: str | None = None
        self._moved = False  # the engine handed its socket over: reconnect when idle
        self._reconnect: asyncio.Future[None] | None = None
        self._connecting = asyncio.Lock()
        self._stats: dict[str, int] = {}

    async def _connection(self) -> asyncio.StreamWriter:
        async with self._connecting:  # one connection, also when a call and the move race
            if self._closed is not None:
                raise EngineDown(self._closed)
            if self._moved and not self._pending:
                await self._leave_old()
            if self._writer is None:
                try:
                    reader, writer = await asyncio.open_unix_connection(
                        str(self.place.socket), limit=wire.MAX_LINE)
                except OSError as exc:
                    self._closed = f"the shared engine is gone ({exc})"
                    raise EngineDown(self._closed) from None
                peer = writer.get_extra_info("socket")
                if peer is None or not same_user(peer):  # not ours: never send it code
                    writer.close()
                    self._closed = (f"the process on {self.place.socket} is not this "
                                    "user's: refused")
                    raise EngineDown(self._closed)
                writer.write(wire.encode({"op": "hello", "pid": os.getpid()}))
                self._writer = writer
                self._reader_task = asyncio.ensure_future(self._read(reader))
            return self._writer

    def _move_if_idle(self) -> None:
        """The engine moved: with no call left on the old connection, connect to the copy
        now (the old engine may exit, and the copy counts this server among its clients
        rather than idling out before the next call)."""
        if self._moved and not self._pending and self._reconnect is None:
            self._reconnect = asyncio.ensure_future(self._connect_to_copy())

    async def _connect_to_copy(self) -> None:
        try:
            await self._connection()
        except EngineDown:
            pass  # the next call reports it (and the pipeline restarts the engine)
        finally:
            self._reconnect = None

    async def _leave_old(self) -> None:
        """The engine moved (its compiled copy took the socket over) and no call is left on
        the old connection: the next one connects to the socket, which is the copy's."""
        self._moved = False
        writer, self._writer = self._writer, None
        if self._reader_task is not None:
            self._reader_task.cancel()
        if writer is not None:
            writer.close()

    async def _read(self, reader: asyncio.StreamReader) -> None:
        reason = "the shared engine closed the connection"
        try:
            async for line in reader:
                try:
                    message = wire.decode(line)
                except ValueError:
                    continue
                stats = message.get("stats")
                if isinstance(stats, dict):  # with answers, health, and requests it cut
                    with contextlib.suppress(TypeError, ValueError):
                        self._stats = {str(k): int(v) for k, v in stats.items()}
                queue = self._pending.get(str(message.get("id")))
                if queue is not None:
                    queue.put_nowait(message)
                elif message["op"] == "moved":
                    self._moved = True
                    self._move_if_idle()
                elif message["op"] == "state" and message.get("state") == "ready":
                    self.pid = message.get("pid", self.pid)  # the copy, after a move
                elif message["op"] == "state":
                    reason = f"the shared engine is {message.get('state')}"
        except (ConnectionError, ValueError) as exc:
            reason = f"the shared engine's connection failed: {exc}"
        if self._moved:  # the old engine left before its calls ended: they are lost, the
            self._writer = None  # next call goes to the copy
        else:
            self._closed = reason
        for queue in self._pending.values():
            queue.put_nowait({"op": "closed", "message": reason})

    async def _ask(self, message: dict[str, Any]) -> asyncio.Queue[dict[str, Any]]:
        writer = await self._connection()
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._pending[str(message["id"])] = queue
        writer.write(wire.encode(message))
        return queue

    async def stream(self, request: EngineRequest) -> AsyncGenerator[EngineResult, None]:
        """The host's steps as they come; leaving early sends ``abort``."""
        rid = request.request_id
        queue = await self._ask(wire.request_message(request))
        choices: tuple[Any, ...] = ()
        done = False
        try:
            while True:
                message = await queue.get()
                op = message["op"]
                if op == "text":
                    choices += wire.choices_in(message.get("choices") or [])
                    yield wire.result_from(message, choices)
                elif op == "done":
                    done = True
                    result = wire.result_from(message, choices)
                    result.finish_reason = result.finish_reason or "stop"
                    yield result
                    return
                elif op == "error":
                    done = True
                    raise EngineUnavailable(str(message.get("message")))
                elif op == "closed":
                    done = True
                    raise EngineDown(str(message.get("message")))
        finally:
            if not done:  # cut here, or cancelled: the engine stops
                self._send({"op": "abort", "id": rid})
            self._pending.pop(rid, None)
            self._move_if_idle()

    def _send(self, message: dict[str, Any]) -> None:
        if self._writer is not None and not self._writer.is_closing():
            self._writer.write(wire.encode(message))

    async def abort(self, request_id: str) -> None:
        self._send({"op": "abort", "id": request_id})

    async def warm_up(self) -> None:
        """The engine warmed itself; connect now, so the first request finds it open."""
        await self._connection()

    async def check_health(self) -> None:
        hid = f"health-{next(self._ids)}"
        queue = await self._ask({"op": "health", "id": hid})
        try:
            reply = await queue.get()
        finally:
            self._pending.pop(hid, None)
            self._move_if_idle()
        if reply["op"] != "health" or not reply.get("ok"):
            raise EngineUnavailable(str(reply.get("message") or "the shared engine is down"))

    def busy_seconds(self) -> float | None:
        return process_tree_cpu(self.pid) if self.pid else None

    def stats(self) -> dict[str, int]:
        return dict(self._stats)

    def condemn(self) -> None:
        """Dead or stuck for this server: end it with its whole process group (other
        servers lose their connection and reattach to the replacement, one starts it)."""
        if self.pid is None:
            return
        with contextlib.suppress(OSError):  # its socket stays: the next start replaces it
            os.killpg(os.getpgid(self.pid), signal.SIGKILL)

    async def shutdown(self) -> None:
        """Leave the engine (it stays warm for other servers and the next start)."""
        self._closed = self._closed or "detached"
        if self._reconnect is not None:
            self._reconnect.cancel()
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
        if self._reader_task is not None:
            self._reader_task.cancel()
