"""Logging policy: where logs go, what each line carries, and what they never contain.

- Every process logs to a rotating file (``logFile``; default ``<cache>/logs/lsp-copilot.log``)
  so that a user can find what happened after the fact, whatever the editor kept.
- The server also logs to stderr, which editors show in their own log pane; the
  one-shot commands (complete, context, doctor) print their result and nothing else.
- Every line written while a request is handled carries the request's JSON-RPC id.
- Logs never contain the user's code unless asked for (``logSourceText``).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import logging.handlers
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import IO

from lsp_copilot.paths import cache_dir

SOURCE_TEXT_LOGGERS = ("pygls", "pygls.protocol", "pygls.feature_manager", "pygls.server")
"""pygls logs every message body (didOpen text, completions) at DEBUG and INFO."""

LOG_FILE_ENV = "LSP_COPILOT_LOG_FILE"
LEVEL_ENV = "LSP_COPILOT_LOG"
LOG_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s%(request)s: %(message)s"
MAX_BYTES = 5 * 1024 * 1024
BACKUPS = 3
"""Rotation: at most 4 files of 5 MB (the log and three older ones)."""

REQUEST_ID: ContextVar[object | None] = ContextVar("lsp_copilot_request_id", default=None)
"""The id of the request being handled. A context variable (not state): asyncio copies
it into every task a handler starts, so a request's engine calls are tagged too."""


def source_text_allowed(setting: bool) -> bool:
    """Whether the log may hold source and model text: only when the user asks
    (``logSourceText``, or LSP_COPILOT_LOG_SOURCE_TEXT=1)."""
    return setting or os.environ.get("LSP_COPILOT_LOG_SOURCE_TEXT") == "1"


def source_text_logging(enabled: bool) -> None:
    """Let pygls log message bodies only when the user asks (``source_text_allowed``);
    they then follow the log level."""
    enabled = source_text_allowed(enabled)
    for name in SOURCE_TEXT_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if enabled else logging.WARNING)


def default_log_file() -> Path:
    """``$LSP_COPILOT_LOG_FILE``, else ``logs/lsp-copilot.log`` in the cache folder."""
    explicit = os.environ.get(LOG_FILE_ENV)
    if explicit:
        return Path(explicit).expanduser()
    return cache_dir() / "logs" / "lsp-copilot.log"


def level_number(name: str) -> int:
    return int(getattr(logging, name.upper(), logging.INFO))


@contextlib.contextmanager
def request_scope(request_id: object) -> Iterator[None]:
    """Tag what is logged inside (and in tasks started inside) with ``request_id``."""
    token = REQUEST_ID.set(request_id)
    try:
        yield
    finally:
        REQUEST_ID.reset(token)


class RequestTag(logging.Filter):
    """Adds ``%(request)s``: `` [req ID]`` inside a request, empty elsewhere."""

    def filter(self, record: logging.LogRecord) -> bool:
        rid = REQUEST_ID.get()
        record.request = "" if rid is None else f" [req {rid}]"
        return True


def _formatted(handler: logging.Handler) -> logging.Handler:
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(RequestTag())
    return handler


class PrivateRotatingFile(logging.handlers.RotatingFileHandler):
    """A rotating log whose every file is the user's alone (0600): the first one, the one
    each rotation opens anew (the standard handler opens it with the umask: world-readable
    on most systems) and the older copies. Logs may hold paths, errors and, when asked
    for, source text."""

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o600)  # a file made before by something else
        return open(fd, "a", encoding=self.encoding, errors=self.errors)

    def doRollover(self) -> None:
        super().doRollover()
        for number in range(1, self.backupCount + 1):
            with contextlib.suppress(OSError):
                os.chmod(f"{self.baseFilename}.{number}", 0o600)


def open_log_file(path: Path) -> logging.Handler:
    """A rotating handler on ``path``, owner-only (its folder created 0700; the default
    folder made 0700 even if an older version made it open); raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.parent == cache_dir() / "logs":  # ours alone: a folder the user named is theirs
        with contextlib.suppress(OSError):
            os.chmod(path.parent, 0o700)
    handler = PrivateRotatingFile(path, maxBytes=MAX_BYTES, backupCount=BACKUPS,
                                  encoding="utf-8")
    return _formatted(handler)


class Logs:
    """The process's log destinations, owned by the command that runs (one per process).

    The root logger is the process's by nature; this object decides what is attached to
    it, and swaps the file when the editor's ``logFile`` setting changes.
    """

    def __init__(self, level: str, stream: IO[str] | None) -> None:
        self.level = level
        self.path: Path | None = None
        self._file: logging.Handler | None = None
        root = logging.getLogger()
        root.setLevel(level_number(level))
        for old in list(root.handlers):  # a second setup in one process (tests) replaces
            if isinstance(old, logging.StreamHandler) and getattr(old, "lsp_copilot", False):
                root.removeHandler(old)
        if stream is not None:
            handler = _formatted(logging.StreamHandler(stream))
            handler.lsp_copilot = True  # type: ignore[attr-defined]
            root.addHandler(handler)
        logging.captureWarnings(True)  # library warnings are log lines, not terminal noise
        # pygls logs every message it sends, source text included: off unless asked for.
        source_text_logging(False)

    def use_file(self, path: Path | None = None) -> Path | None:
        """Log to ``path`` (default: ``default_log_file()``); on failure keep the old file,
        say why in the log, and return None."""
        path = (path or default_log_file()).expanduser()
        if self.path is not None and path.resolve() == self.path.resolve():
            return self.path
        try:
            handler = open_log_file(path)
        except OSError as exc:
            logging.getLogger(__name__).warning("cannot write the log file %s: %s", path, exc)
            return None
        handler.lsp_copilot = True  # type: ignore[attr-defined]
        root = logging.getLogger()
        if self._file is not None:
            root.removeHandler(self._file)
            self._file.close()
        root.addHandler(handler)
        self._file, self.path = handler, path
        return path

    def set_level(self, level: str) -> None:
        self.level = level
        logging.getLogger().setLevel(level_number(level))

    def close(self) -> None:
        if self._file is not None:
            logging.getLogger().removeHandler(self._file)
            self._file.close()
            self._file = None


def discard_output(stream: IO[str]) -> None:
    """Point ``stream``'s descriptor at /dev/null: its reader has gone (a closed pipe), and
    what is still buffered must not raise again when Python flushes it at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


class QuietOutput:
    """For one-shot commands: the result on the real stdout, everything else in the log.

    vLLM's EngineCore is a child process that inherits our file descriptors, and
    libraries print progress bars and warnings straight to them, so redirecting Python's
    streams is not enough: fds 1 and 2 themselves point at the log file, and the result
    (and our own error messages) go to private copies of the terminal's descriptors.
    """

    def __init__(self, log_file: Path | None) -> None:
        target = str(log_file) if log_file is not None else os.devnull
        try:
            fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError:
            fd = os.open(os.devnull, os.O_WRONLY)
        sys.stdout.flush()
        sys.stderr.flush()
        self.stdout: IO[str] = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
        self.stderr: IO[str] = os.fdopen(os.dup(2), "w", encoding="utf-8", buffering=1)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        self._saved = sys.stdout
        sys.stdout = self.stdout  # print() is the command's result

    def close(self) -> None:
        """Flush the result; the descriptors stay redirected until the process ends, so a
        child that outlives us (a dying EngineCore) still writes to the log."""
        sys.stdout = self._saved
        for stream in (self.stdout, self.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()



class EditorLog(logging.Handler):
    """Sends the server's own warnings and errors to the editor too (``window/logMessage``),
    so a user who never opens the log file still sees them in the editor's log pane.
    Libraries' warnings stay in the log: pygls warns at every late ``$/cancelRequest``,
    which some editors send for most requests.

    ``send(level, message)`` must run on the event loop's thread; records logged from
    other threads (the engine load) are handed over to it.
    """

    def __init__(self, send: Callable[[int, str], None],
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(logging.WARNING)
        self._send = send
        self._loop = loop
        self._busy = threading.local()  # a send that logs must not send again
        self.addFilter(RequestTag())

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def emit(self, record: logging.LogRecord) -> None:
        if (getattr(self._busy, "on", False) or self._loop is None or self._loop.is_closed()
                or not record.name.startswith("lsp_copilot")):
            return
        message = f"lsp-copilot{getattr(record, 'request', '')}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            message += f" ({type(exc).__name__}: {exc}; traceback in the log file)"
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            self._deliver(record.levelno, message)
        else:
            self._loop.call_soon_threadsafe(self._deliver, record.levelno, message)

    def _deliver(self, level: int, message: str) -> None:
        self._busy.on = True
        try:
            self._send(level, message)
        except Exception:  # the transport is gone (exit): the log file has it anyway
            pass
        finally:
            self._busy.on = False
