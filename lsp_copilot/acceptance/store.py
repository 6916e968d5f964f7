"""One SQLite file of suggestion outcomes, bounded in rows, never holding code text.

Writes run on the event loop: one INSERT and the bound's DELETE in WAL mode with
``synchronous=NORMAL`` (no fsync per commit) take about 0.1-0.2 ms on a loaded 2-core
machine, at most a few times a second (a user's feedback rate): cheaper than handing each
row to a thread.

The store never raises into the server, and each kind of trouble is logged once per file:

- A full disk (SQLite's "database or disk is full", or ENOSPC): the row is dropped, and so
  are those of the next RETRY_S seconds without trying; then one row tries again,
  silently. SQLite rolls the failed insert back, so what was saved stays readable.
- A damaged file ("file is not a database", "database disk image is malformed"): records
  are off for this file until the server restarts (or ``acceptanceFile`` changes); the
  file is left as it is, since its rows may be recoverable (sqlite3's ``.recover``). The
  warning, and ``lsp-copilot stats`` (``read`` raises StoreError), say to move it away: the
  next server starts a new file. Rows are dropped, not kept in memory: the live counts of
  ``lspCopilot/stats`` go on either way.
- Anything else (another server holding the lock past BUSY_TIMEOUT_S): that row is
  dropped.

Dropped rows count in ``failed`` (``write_errors`` in ``lspCopilot/stats``).
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import astuple, dataclass, fields
from pathlib import Path

from lsp_copilot.paths import cache_dir

log = logging.getLogger(__name__)

OUTCOMES = ("accepted", "partly_accepted", "rejected", "typed_through")
KEYS = ("model", "template", "route", "mode", "language", "latency", "experiment", "arm")
"""What an outcome is broken down by; ``experiment`` names the pair of arms compared."""

FILE_NAME = "acceptance.sqlite3"
BUSY_TIMEOUT_S = 0.05
"""Another editor's server may hold the write lock: wait this long at most, on the loop."""
RETRY_S = 300.0
"""After a full disk, rows are dropped without trying for this long, then one tries again.
Retrying rather than stopping for good: a server runs for days, a user frees space without
restarting the editor, and a failed insert costs under a millisecond and changes nothing
in the file. Sparingly: a full disk stays full for minutes, not between two keystrokes."""
ADVICE = ("its rows may be recoverable (sqlite3's .recover); move it away and the server "
          "starts a new file when it next starts")
"""What a damaged file's warning and ``lsp-copilot stats`` tell the user."""


class StoreError(Exception):
    """The outcomes file cannot be read; the message says what the user can do."""


def default_path() -> Path:
    """In the cache folder (LSP_COPILOT_CACHE_DIR, else XDG, else ~/.cache/lsp-copilot)."""
    return cache_dir() / FILE_NAME


@dataclass(frozen=True)
class Record:
    """One shown suggestion's fate. Lengths are counts; no text of the suggestion."""

    ts: float
    outcome: str
    model: str = ""
    template: str = ""
    route: str = ""
    mode: str = ""
    language: str = ""
    latency: str = ""
    experiment: str = ""
    arm: str = ""
    shown_chars: int = 0
    accepted_chars: int = 0
    latency_ms: float = 0.0  # request to answer (0: not known, rows of older versions)
    cluster: str = ""  # an experiment's unit of assignment (a hash of the line), else ""
    rank: int = 0  # its place among the items of its answer (0: the first)
    items: int = 1  # the items its answer offered (an explicit request's alternatives)


COLUMNS = tuple(f.name for f in fields(Record))
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS outcomes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL, outcome TEXT NOT NULL,
    {", ".join(f"{k} TEXT NOT NULL DEFAULT ''" for k in KEYS)},
    shown_chars INTEGER NOT NULL DEFAULT 0, accepted_chars INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS outcomes_ts ON outcomes(ts);
"""
_ADDED = {"latency_ms": "REAL NOT NULL DEFAULT 0", "cluster": "TEXT NOT NULL DEFAULT ''",
          "rank": "INTEGER NOT NULL DEFAULT 0", "items": "INTEGER NOT NULL DEFAULT 1"}
"""Columns newer than the first schema: added to an older file when it is opened."""


def _columns(db: sqlite3.Connection) -> list[str]:
    return [row[1] for row in db.execute("PRAGMA table_info(outcomes)")]


def _migrate(db: sqlite3.Connection) -> None:
    have = set(_columns(db))
    for name, kind in _ADDED.items():
        if name not in have:
            db.execute(f"ALTER TABLE outcomes ADD COLUMN {name} {kind}")


def _kind(exc: Exception) -> str:
    """``full``, ``damaged`` or ``other``: by SQLite's error code where Python gives it
    (3.11+), else by its message."""
    if isinstance(exc, OSError):
        return "full" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "other"
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int):
        primary = code & 0xFF
        if primary == sqlite3.SQLITE_FULL:
            return "full"
        if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
            return "damaged"
        return "other"
    text = str(exc)
    if "disk is full" in text:
        return "full"
    return "damaged" if "malformed" in text or "not a database" in text else "other"


class OutcomeStore:
    """Opened on first write; a fault drops rows and logs once (see the module's doc)."""

    def __init__(self, path: Path | None = None, max_rows: int = 100_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.wanted = path  # None: the cache folder's file
        self.path = path  # the file opened (or to open)
        self.max_rows = max_rows
        self.clock = clock
        self.written = 0
        self.failed = 0  # rows dropped by a fault
        self._db: sqlite3.Connection | None = None
        self._broken = False  # off for this file: damaged, or it cannot be created
        self._paused_until = 0.0  # a full disk: no try before this (``clock``)
        self._warned: set[str] = set()  # kinds of trouble logged for this file

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is not None or self._broken:
            return self._db
        path = self.path = self.wanted or default_path()
        db: sqlite3.Connection | None = None
        old = os.umask(0o077)  # owner only, like the completion cache
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            _migrate(db)
        except (OSError, sqlite3.Error) as exc:
            if db is not None:
                db.close()
            self._fault(exc, opening=True)
            return None
        finally:
            os.umask(old)
        self._db = db
        return db

    def use(self, path: Path | None, max_rows: int) -> None:
        """Settings changed: a new file is opened at the next write."""
        self.max_rows = max_rows
        if path != self.wanted:
            self.close()
            self.wanted, self._broken, self._paused_until = path, False, 0.0
            self._warned.clear()

    def add(self, record: Record) -> bool:
        """Insert one row, then drop the oldest beyond ``max_rows`` (0: keep none).
        False: not written (recording off, or a fault); never raises."""
        if self.max_rows <= 0:
            return False
        if self._broken or self.clock() < self._paused_until:
            self.failed += 1
            return False
        db = self._connect()
        if db is None:
            self.failed += 1
            return False
        try:
            cur = db.execute(
                f"INSERT INTO outcomes ({', '.join(COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(COLUMNS))})", astuple(record))
            # Ids only grow: everything at or below (newest - max_rows) is beyond the bound.
            db.execute("DELETE FROM outcomes WHERE id <= ?",
                       ((cur.lastrowid or 0) - self.max_rows,))
        except (OSError, sqlite3.Error) as exc:
            self.failed += 1
            self._fault(exc, opening=False)
            return False
        self._paused_until = 0.0
        self.written += 1
        return True

    def _fault(self, exc: Exception, opening: bool) -> None:
        """Decide what follows a fault (module doc) and warn once per kind and file."""
        kind = _kind(exc)
        if kind == "full":
            self._paused_until = self.clock() + RETRY_S
            message = (f"acceptance records: the disk is full ({self.path}: {exc}); records "
                       f"are dropped, tried again every {RETRY_S / 60:g} minutes; those "
                       "saved stay in the file")
        elif kind == "damaged":
            self._broken = True
            self.close()  # no more writes into it; the file stays as it is
            message = (f"acceptance records off: {self.path} is damaged ({exc}) and left as "
                       f"it is: {ADVICE}")
        elif opening:  # a folder that cannot be created, a file that cannot be opened
            self._broken = True
            message = f"acceptance records off ({self.path}): {exc}"
        else:
            message = f"acceptance record dropped ({self.path}): {exc}"
        if kind in self._warned:
            log.debug("%s", message)
        else:
            self._warned.add(kind)
            log.warning("%s", message)

    def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            try:
                db.close()
            except sqlite3.Error as exc:  # (a damaged file): never raised into the server
                log.debug("acceptance store close: %s", exc)


def read(path: Path | None = None, since: float | None = None) -> list[Record]:
    """Every row since ``since`` (unix time), oldest first; none when there is no file.
    A file that cannot be read (damaged, not SQLite, locked, unreadable) raises StoreError,
    with one line saying what to do; the file is only read, never changed."""
    path = path or default_path()
    if not path.exists():
        return []
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
        try:
            have = [c for c in COLUMNS if c in set(_columns(db))]  # (an older file: fewer)
            if not have:
                return []
            rows = db.execute(
                f"SELECT {', '.join(have)} FROM outcomes WHERE ts >= ? ORDER BY id",
                (since or 0.0,)).fetchall()
        finally:
            db.close()
    except sqlite3.Error as exc:
        if _kind(exc) == "damaged":
            raise StoreError(f"{path} is damaged ({exc}): {ADVICE}") from None
        raise StoreError(f"cannot read {path}: {exc}") from None
    return [Record(**dict(zip(have, row, strict=True))) for row in rows]
