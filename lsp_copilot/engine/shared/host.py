"""The shared engine's process: one vLLM engine, served over a Unix socket to every
`lsp-copilot serve` of this user.

It detaches from the server that started it (its own session; the starter does not wait
for it), binds its socket before vLLM loads so that servers arriving meanwhile see the
load's progress, and exits ``idle_minutes`` after its last server left. Each request runs
as a task of its own: vLLM's priority scheduler orders them across windows, and a
cancelled one (an abort, or a server that went away) frees the engine at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import itertools
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_copilot.engine.base import Engine, EngineRequest, EngineResult
from lsp_copilot.engine.failures import explain_failure
from lsp_copilot.engine.shared import handoff, wire
from lsp_copilot.engine.shared.runtime import EnginePlace, same_user
from lsp_copilot.settings.layers import EngineSetup

log = logging.getLogger(__name__)

TICK_S = 2.0
"""How often a load's progress (CPU, log lines) is told to the servers waiting on it."""
IDLE_CHECK_S = 5.0
CLOSE_LIMIT_S = 60.0
"""An engine that exits frees its memory within this long, or is killed."""
STATS_SETTLE_S = 0.5
FAILED_LINGER_S = 30.0
"""A start that failed before any server connected waits this long for one to read why
(else the server that started it would wait for a socket that is gone)."""
UNUSED_AFTER_S = 2.0
"""No server for this long: another engine's start may stop this one to make room. (A
server attaches, then reconnects for its requests: a gap of milliseconds.)"""
BUSY_SHARE = 0.05
MOVE_LIMIT_S = 60.0
"""Servers told the engine moved finish their calls and reconnect within this long; the
old engine then exits even if one has not (its calls end, its server reattaches)."""
HANDOFF_CHECK_S = 1.0
"""How often an engine whose compiled copy is loading checks whether it took over."""


def process_tree_cpu(pid: int) -> float:
    """CPU seconds a process and its descendants have used (0 if it is gone)."""
    import psutil

    total = 0.0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


def process_tree_rss(pid: int) -> int:
    import psutil

    total = 0
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            total += proc.memory_info().rss
    return total


@dataclass
class Client:
    """One attached server: its requests in flight, by its own ids."""

    number: int
    pid: int | None = None
    tasks: dict[str, asyncio.Task[None]] = field(default_factory=dict)


class EngineHost:
    """Serves one engine to every server of this user that connects."""

    def __init__(self, place: EnginePlace, settings: EngineSetup, label: str,
                 idle_minutes: float, load: Callable[[EngineSetup, Callable[[str], None]], Engine],
                 *, linger: bool = True) -> None:
        self.place, self.settings, self.label = place, settings, label
        self.linger = linger  # a failed start waits for a server to read why
        self.idle_s = idle_minutes * 60
        self._load = load
        self.engine: Engine | None = None
        self.state, self.message = "loading", "starting"
        self.started = time.time()
        self._clients: dict[int, tuple[Client, asyncio.StreamWriter]] = {}
        self._numbers = itertools.count(1)
        self._idle_since: float | None = time.monotonic()
        self._done = asyncio.Event()
        self._told = asyncio.Event()  # a server has read why the start failed
        self._log_size = 0
        self.socket_inode: int | None = None  # of the socket bound for it
        self.socket_path = place.socket  # where it listens (a successor: next_socket first)
        self.successor_started = False  # its compiled copy (engine/shared/handoff.py)
        self.successor_planned = False
        self.lowered: handoff.Priority | None = None  # a copy's priority while it loads
        self._moved_at: float | None = None

    # -- the load ----------------------------------------------------------------------

    async def load(self) -> None:
        loop = asyncio.get_running_loop()

        def report(message: str) -> None:  # from the loading thread
            loop.call_soon_threadsafe(self._broadcast, {"op": "progress", "message": message})

        ticker = asyncio.ensure_future(self._tick())
        try:
            engine = await asyncio.to_thread(self._load, self.settings, report)
            report("warming up")
            await engine.warm_up()
        except Exception as exc:
            log.exception("the shared engine failed to start")
            self._set_state("failed", explain_failure(exc))
            if not self._clients and self.linger:  # its starter connects a moment later
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._told.wait(), FAILED_LINGER_S)
            self._done.set()
            return
        finally:
            ticker.cancel()
        self.engine = engine
        self._set_state("ready", f"ready in {time.time() - self.started:.1f} s")

    async def _tick(self) -> None:
        """Tell waiting servers the load moves: CPU used, or new lines in the log."""
        cpu = process_tree_cpu(os.getpid())
        while True:
            await asyncio.sleep(TICK_S)
            now = process_tree_cpu(os.getpid())
            size = _stderr_size()
            if now - cpu >= BUSY_SHARE * TICK_S or size != self._log_size:
                self._broadcast({"op": "tick"})
            cpu, self._log_size = now, size

    def _set_state(self, state: str, message: str) -> None:
        self.state, self.message = state, message
        log.info("shared engine %s: %s", state, message)
        self._broadcast(self._state_message())

    def _state_message(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": "state", "state": self.state, "message": self.message,
                               "pid": os.getpid(), "name": self.place.name}
        if self.engine is not None:
            out["info"] = self.engine.info.as_dict() | {
                "token_choices": self.engine.info.token_choices}
            out["model_path"] = getattr(self.engine, "served_name", "")
        return out

    def _broadcast(self, message: dict[str, Any]) -> None:
        for _client, writer in list(self._clients.values()):
            _send(writer, message)

    # -- connections -------------------------------------------------------------------

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is None or not same_user(sock):
            log.warning("refused a connection from another user")
            writer.close()
            return
        client = Client(next(self._numbers))
        try:
            while not reader.at_eof():
                try:
                    line = await reader.readline()
                except (ConnectionError, asyncio.LimitOverrunError, ValueError):
                    break
                if not line:
                    break
                try:
                    message = wire.decode(line)
                except ValueError:
                    _send(writer, {"op": "error", "id": None, "message": "malformed message"})
                    continue
                await self._dispatch(client, writer, message)
        finally:
            for task in client.tasks.values():
                task.cancel()  # a server that left: its requests free the engine
            if self._clients.pop(client.number, None) is not None and not self._clients:
                self._idle_since = time.monotonic()
            with contextlib.suppress(Exception):
                writer.close()

    async def _dispatch(self, client: Client, writer: asyncio.StreamWriter,
                        message: dict[str, Any]) -> None:
        op, rid = message["op"], message.get("id")
        if op == "hello":  # a server attaches (a status question does not)
            client.pid = message.get("pid")
            self._clients[client.number] = (client, writer)
            self._idle_since = None
            _send(writer, self._state_message())
            if self.state == "failed":
                self._told.set()
        elif op == "generate":
            try:  # checked before anything starts: every request gets an answer
                request = wire.request_from(message, f"c{client.number}-{rid}")
            except ValueError as exc:
                _send(writer, {"op": "error", "id": rid, "message": str(exc)})
                return
            if self.engine is None:
                _send(writer, {"op": "error", "id": rid, "message": f"engine {self.state}"})
                return
            client.tasks[str(rid)] = asyncio.ensure_future(
                self._generate(client, writer, str(rid), request))
        elif op == "abort":
            task = client.tasks.pop(str(rid), None)
            if task is not None:
                task.cancel()
        elif op == "health":
            client.tasks[f"health-{rid}"] = asyncio.ensure_future(
                self._health(client, writer, rid))
        elif op == "status":
            _send(writer, {"op": "status", "id": rid, **self.status()})
        elif op == "stop":
            if message.get("unused") and not self.unused():
                _send(writer, {"op": "busy", "id": rid, "clients": len(self._clients)})
                return
            _send(writer, {"op": "stopping", "id": rid})
            self._done.set()
        else:
            _send(writer, {"op": "error", "id": rid, "message": f"unknown op {op!r}"})

    async def _generate(self, client: Client, writer: asyncio.StreamWriter, rid: str,
                        request: EngineRequest) -> None:
        assert self.engine is not None
        sent = 0
        result = EngineResult()
        try:  # every step goes to the server, which cuts (and then sends abort)
            async with contextlib.aclosing(self.engine.stream(request)) as steps:
                async for result in steps:
                    new, sent = result.token_choices[sent:], len(result.token_choices)
                    _send(writer, wire.progress_message(rid, result.text, result, new))
            _send(writer, wire.result_message(rid, result) | {"stats": self.engine.stats()})
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await self.engine.abort(request.request_id)
                # A server that cut the answer itself has no "done": the counters it
                # shows (speculative decoding) come with this instead, and once more when
                # vLLM has recorded the last step (its metrics lag the text by a step).
                _send(writer, {"op": "aborted", "id": rid, "stats": self.engine.stats()})
                asyncio.get_running_loop().call_later(STATS_SETTLE_S, self._send_stats, writer)
            raise
        except Exception as exc:
            log.exception("generation failed")
            _send(writer, {"op": "error", "id": rid, "message": f"{type(exc).__name__}: {exc}"})
        finally:
            client.tasks.pop(rid, None)

    def _send_stats(self, writer: asyncio.StreamWriter) -> None:
        if self.engine is not None:
            _send(writer, {"op": "stats", "stats": self.engine.stats()})

    async def _health(self, client: Client, writer: asyncio.StreamWriter, rid: Any) -> None:
        try:
            await self._check(writer, rid)
        finally:
            client.tasks.pop(f"health-{rid}", None)

    async def _check(self, writer: asyncio.StreamWriter, rid: Any) -> None:
        if self.engine is None:
            _send(writer, {"op": "health", "id": rid, "ok": False,
                           "message": f"engine {self.state}"})
            return
        try:
            await self.engine.check_health()
        except Exception as exc:
            _send(writer, {"op": "health", "id": rid, "ok": False,
                           "message": f"{type(exc).__name__}: {exc}"})
            self._done.set()  # a dead engine: exit, the next server starts a new one
            return
        _send(writer, {"op": "health", "id": rid, "ok": True, "stats": self.engine.stats()})

    def unused(self) -> bool:
        """Loaded, and no server has used it for a while: it may make room for another."""
        return (self.state == "ready" and not self._clients and self._idle_since is not None
                and time.monotonic() - self._idle_since >= UNUSED_AFTER_S)

    def status(self) -> dict[str, Any]:
        idle = (time.monotonic() - self._idle_since) if self._idle_since is not None else 0.0
        copy = (self.successor_started, self.successor_planned, self.owns_socket())
        return {"name": self.place.name, "model": self.label, "state": self.state,
                "message": self.message, "pid": os.getpid(), "clients": len(self._clients),
                "client_pids": [c.pid for c, _ in self._clients.values()],
                "memory_mb": round(process_tree_rss(os.getpid()) / 2**20),
                "idle_s": round(idle, 1), "idle_limit_s": self.idle_s,
                "uptime_s": round(time.time() - self.started, 1),
                "compiled": self.settings.engine.enforce_eager is False,
                "successor": handoff.describe(self.place, *copy),
                "successor_pending": handoff.pending(self.place, *copy)}

    async def run_until_done(self) -> None:
        """Until stopped, failed (after telling the waiting servers) or idle too long."""
        while not self._done.is_set():
            check = HANDOFF_CHECK_S if self.successor_started else IDLE_CHECK_S
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._done.wait(), check)
            if self._idle_since is not None and (
                    time.monotonic() - self._idle_since >= self.idle_s):
                log.info("no server for %g minutes: the shared engine exits", self.idle_s / 60)
                break
            if not self.owns_socket() and self._moved():
                log.warning("another engine took %s: this one exits", self.place.socket)
                break

    def _moved(self) -> bool:
        """Another engine took the socket (this one's compiled copy, or a start that found
        this one not answering): its servers move there, then this one may exit."""
        if not self._clients:
            return True
        now = time.monotonic()
        if self._moved_at is None:
            self._moved_at = now
            self._broadcast({"op": "moved"})  # each finishes its calls, then reconnects
        return now - self._moved_at >= MOVE_LIMIT_S

    async def compile_later(self, command: Callable[[int], list[str]]) -> None:
        """Once loaded and the CPU is quiet: a compiled copy of this engine loads in the
        background and takes the socket over (engine/shared/handoff.py)."""
        self.successor_planned = True
        if self.engine is None or self.socket_inode is None:
            return
        if await handoff.quiet_cpu(self._done):
            self.successor_started = await asyncio.to_thread(
                handoff.start, self.place, command(self.socket_inode))
            if not self.successor_started:
                log.warning("the compiled copy did not open its socket: this engine stays")
                self.successor_planned = False
                return
            deadline = time.monotonic() + handoff.COPY_LIMIT_S
            while (self.owns_socket() and self.place.next_socket.exists()
                   and not self._done.is_set()):
                if time.monotonic() > deadline:  # stuck: this engine serves on
                    log.warning("the compiled copy did not take over within %g s: stopped",
                                handoff.COPY_LIMIT_S)
                    await asyncio.to_thread(handoff.stop, self.place)
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._done.wait(), HANDOFF_CHECK_S)

    def take_over(self, replaces: int) -> None:
        """This engine is the compiled copy: its socket becomes the one servers find."""
        if self.engine is None:
            self._done.set()  # failed to load: the engine it was to replace stays
        elif self.lowered is not None and not handoff.restore_priority(self.lowered):
            self._done.set()  # it would serve at idle priority: the eager engine stays
        elif handoff.take_over(self.place, self.socket_path, replaces):
            self.socket_path = self.place.socket
        else:
            self._done.set()

    def owns_socket(self) -> bool:
        """Whether servers still find this engine: its socket may have been replaced (a
        start that found it not answering) or removed; then nobody new can attach."""
        try:
            return self.socket_path.stat().st_ino == self.socket_inode
        except OSError:
            return False

    async def close(self) -> None:
        if self.successor_started and self.owns_socket():  # a copy not yet in its place
            await asyncio.to_thread(handoff.stop, self.place)
        for client, writer in list(self._clients.values()):
            for task in client.tasks.values():
                task.cancel()
            with contextlib.suppress(Exception):
                writer.close()
        if self.engine is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.engine.shutdown(), 30)


def _send(writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    if not writer.is_closing():
        writer.write(wire.encode(message))


def _stderr_size() -> int:
    try:
        return os.fstat(sys.stderr.fileno()).st_size
    except (OSError, ValueError):
        return 0


def bind(place: EnginePlace, path: Path | None = None) -> socket.socket:
    """The engine's socket (or ``path``), 0600 from the start (no window where others
    could connect)."""
    path = path or place.socket
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # stale: the starter found nobody answering it
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(64)
    return sock


def _kill_group() -> None:
    """This engine and its EngineCore, at once: its shutdown hung (its memory must go)."""
    log.error("the shared engine's shutdown took over %g s: killed", CLOSE_LIMIT_S)
    os.killpg(os.getpgid(0), signal.SIGKILL)


def detach() -> None:
    """Leave the starter: it returns at once, and this process is nobody's child (an
    editor or server that exits, or kills its children, leaves the engine running)."""
    if os.fork() > 0:
        os._exit(0)
    with contextlib.suppress(OSError):
        os.setsid()


async def serve(place: EnginePlace, settings: EngineSetup, label: str, idle_minutes: float,
                load: Callable[[EngineSetup, Callable[[str], None]], Engine], *,
                compiled_copy: Callable[[int], list[str]] | None = None,
                replaces: int | None = None) -> int:
    """``compiled_copy``: the command of a compiled copy of this engine, given the inode of
    its socket, to start once loaded; ``replaces``: this engine is such a copy, listening
    on ``place.next_socket`` until it takes over the socket of that inode."""
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # stacks of a hung load
    os.environ.setdefault("PYTHONFAULTHANDLER", "1")  # and of the EngineCore on SIGABRT
    path = place.socket if replaces is None else place.next_socket
    sock = bind(place, path)
    host = EngineHost(place, settings, label, idle_minutes, load, linger=replaces is None)
    host.socket_path, host.socket_inode = path, path.stat().st_ino
    if replaces is not None:  # a compiled copy: its compile must not slow the user's typing
        host.lowered = handoff.lower_priority()
    server = await asyncio.start_unix_server(host.handle, sock=sock, limit=wire.MAX_LINE)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, host._done.set)

    async def load_then_hand_over() -> None:
        await host.load()
        if replaces is not None:
            host.take_over(replaces)
        elif compiled_copy is not None:
            await host.compile_later(compiled_copy)

    loader = asyncio.ensure_future(load_then_hand_over())
    try:
        await host.run_until_done()
    finally:
        # Unlink first: a server arriving now starts a new engine instead of finding this
        # one going away (not the socket of another engine that replaced this one).
        if host.owns_socket():
            with contextlib.suppress(FileNotFoundError):
                host.socket_path.unlink()
        guard = threading.Timer(CLOSE_LIMIT_S, _kill_group)  # a shutdown that hangs
        guard.daemon = True
        guard.start()
        loader.cancel()
        server.close()
        if host.state == "failed":  # the waiting servers read why before the socket goes
            await asyncio.sleep(0.2)
        await host.close()
    return 1 if host.state == "failed" else 0
