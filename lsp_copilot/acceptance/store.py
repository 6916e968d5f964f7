"""One SQLite file of suggestion outcomes, bounded in rows, never holding code text.

Writes run on the event loop: one INSERT and the bound's DELETE in WAL mode with
``synchronous=NORMAL`` (no fsync per commit) take about 0.1-0.2 ms on a loaded 2-core
machine, at most a few times a second (a user's feedback rate): cheaper than handing each
row to a thread.
"""

from __future__ import annotations

import logging
import os
import sqlite3
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
_ADDED = {"latency_ms": "REAL NOT NULL DEFAULT 0", "cluster": "TEXT NOT NULL DEFAULT ''"}
"""Columns newer than the first schema: added to an older file when it is opened."""


def _columns(db: sqlite3.Connection) -> list[str]:
    return [row[1] for row in db.execute("PRAGMA table_info(outcomes)")]


def _migrate(db: sqlite3.Connection) -> None:
    have = set(_columns(db))
    for name, kind in _ADDED.items():
        if name not in have:
            db.execute(f"ALTER TABLE outcomes ADD COLUMN {name} {kind}")


class OutcomeStore:
    """Opened on first write; a store that cannot be opened logs once and drops rows."""

    def __init__(self, path: Path | None = None, max_rows: int = 100_000) -> None:
        self.wanted = path  # None: the cache folder's file
        self.path = path  # the file opened (or to open)
        self.max_rows = max_rows
        self.written = 0
        self.failed = 0
        self._db: sqlite3.Connection | None = None
        self._broken = False

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is not None or self._broken:
            return self._db
        path = self.path = self.wanted or default_path()
        old = os.umask(0o077)  # owner only, like the completion cache
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
            _migrate(db)
        except (OSError, sqlite3.Error) as exc:
            log.warning("acceptance records off (%s): %s", path, exc)
            self._broken = True
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
            self.wanted, self._broken = path, False

    def add(self, record: Record) -> bool:
        """Insert one row, then drop the oldest beyond ``max_rows`` (0: keep none)."""
        if self.max_rows <= 0:
            return False
        db = self._connect()
        if db is None:
            return False
        try:
            cur = db.execute(
                f"INSERT INTO outcomes ({', '.join(COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(COLUMNS))})", astuple(record))
            # Ids only grow: everything at or below (newest - max_rows) is beyond the bound.
            db.execute("DELETE FROM outcomes WHERE id <= ?",
                       ((cur.lastrowid or 0) - self.max_rows,))
        except sqlite3.Error as exc:
            self.failed += 1
            log.warning("acceptance record dropped: %s", exc)
            return False
        self.written += 1
        return True

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def read(path: Path | None = None, since: float | None = None) -> list[Record]:
    """Every row since ``since`` (unix time), oldest first; none when there is no file."""
    path = path or default_path()
    if not path.exists():
        return []
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
    return [Record(**dict(zip(have, row, strict=True))) for row in rows]
