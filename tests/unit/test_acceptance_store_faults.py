"""The acceptance store meets a full disk or a damaged file: the server goes on, the user
sees one warning saying what to do, and nothing saved is lost, deleted or overwritten.

The full disk is SQLite's own: ``PRAGMA max_page_count`` makes the file unable to grow,
so inserts fail with SQLITE_FULL on the real error path. Damage is garbage written over
the file's bytes."""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_copilot.acceptance.store import RETRY_S, OutcomeStore, Record, StoreError, read
from lsp_copilot.cli.main import main


class Clock:
    """Time that moves only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _rec(ts: float) -> Record:
    # A long key fills a page in a few rows, so the file has to grow soon.
    return Record(ts=ts, outcome="accepted", model="m" * 400, language="python")


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def _fill_until_full(store: OutcomeStore, statements: list[str]) -> list[float]:
    """Write rows into a file that may not grow until one fails; the ts of those saved."""
    db = store._connect()
    assert db is not None
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count={pages}")  # this connection: the disk is full now
    db.set_trace_callback(statements.append)
    saved = []
    for i in range(1, 200):
        if not store.add(_rec(float(i))):
            return saved
        saved.append(float(i))
    raise AssertionError("the file never filled up")


def _inserts(statements: list[str]) -> int:
    return sum(s.lstrip().upper().startswith("INSERT") for s in statements)


def test_a_full_disk_drops_records_with_one_warning_and_keeps_what_was_saved(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "a.sqlite3"
    clock = Clock()
    store = OutcomeStore(path, clock=clock)
    for i in range(3):
        assert store.add(_rec(1000.0 + i))  # saved before the disk filled
    statements: list[str] = []
    saved = [1000.0, 1001.0, 1002.0, *_fill_until_full(store, statements)]
    tried = _inserts(statements)
    for i in range(300, 350):  # suggestion after suggestion settles: no raise
        assert store.add(_rec(float(i))) is False
    assert _inserts(statements) == tried  # no more tries before RETRY_S has passed
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "full" in warnings[0] and str(path) in warnings[0]
    assert store.failed == 51 and store.written == len(saved)
    assert [r.ts for r in read(path)] == saved  # readable while the server still runs
    store.close()
    assert path.exists()
    assert [r.ts for r in read(path)] == saved  # and after it stopped


def test_a_full_disk_is_tried_again_sparingly_and_recording_resumes(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "a.sqlite3"
    clock = Clock()
    store = OutcomeStore(path, clock=clock)
    statements: list[str] = []
    saved = _fill_until_full(store, statements)
    tried = _inserts(statements)
    clock.now += RETRY_S - 1
    assert store.add(_rec(500.0)) is False and _inserts(statements) == tried
    clock.now += 2  # time to try again: one row tries, the disk is still full
    assert store.add(_rec(501.0)) is False and _inserts(statements) == tried + 1
    assert store.add(_rec(502.0)) is False and _inserts(statements) == tried + 1
    db = store._connect()
    assert db is not None
    db.execute("PRAGMA max_page_count=1000000")  # the user freed some space
    clock.now += RETRY_S
    assert store.add(_rec(503.0)) and store.add(_rec(504.0))  # recording goes on
    assert len(_warnings(caplog)) == 1  # the retries were silent
    store.close()
    assert [r.ts for r in read(path)] == [*saved, 503.0, 504.0]


def test_no_room_to_create_the_folder_warns_once_and_opens_later(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "cache" / "a.sqlite3"
    clock = Clock()
    store = OutcomeStore(path, clock=clock)

    def no_space(self: Path, *args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))

    with monkeypatch.context() as patch:
        patch.setattr(Path, "mkdir", no_space)
        for i in range(5):
            assert store.add(_rec(float(i))) is False
        clock.now += RETRY_S + 1
        assert store.add(_rec(9.0)) is False  # tried again, still no room: silent
    warnings = _warnings(caplog)
    assert len(warnings) == 1 and "full" in warnings[0]
    clock.now += RETRY_S + 1
    assert store.add(_rec(10.0))  # room again: the file is created
    store.close()
    assert [r.ts for r in read(path)] == [10.0]


def _count_opens(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every sqlite3.connect from now on (real ones): a damaged file is opened once."""
    opened: list[object] = []
    real = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    return opened


def _saved_then_closed(path: Path, n: int) -> None:
    store = OutcomeStore(path)
    for i in range(n):
        assert store.add(_rec(float(i)))
    store.close()


def test_a_file_overwritten_with_garbage_is_left_alone_with_one_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.sqlite3"
    _saved_then_closed(path, 3)
    garbage = b"this is not a database\x00\xff" * 400
    path.write_bytes(garbage)
    opened = _count_opens(monkeypatch)
    store = OutcomeStore(path)
    for i in range(20):
        assert store.add(_rec(float(i))) is False  # dropped, no raise
    store.close()
    assert len(opened) == 1  # off for this file: not tried again for each record
    warnings = _warnings(caplog)
    assert len(warnings) == 1, warnings
    assert str(path) in warnings[0] and "move it away" in warnings[0]
    assert path.read_bytes() == garbage  # not deleted, not overwritten
    assert store.failed == 20 and store.written == 0
    with pytest.raises(StoreError, match="move it away") as err:
        read(path)
    assert str(path) in str(err.value)


def test_a_malformed_file_fails_its_first_write_then_is_not_touched(
        tmp_path: Path, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.sqlite3"
    _saved_then_closed(path, 60)  # several pages
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    assert len(data) > 3 * page
    data[page:] = b"\xa5" * (len(data) - page)  # a valid header, the tables garbage
    path.write_bytes(bytes(data))
    opened = _count_opens(monkeypatch)
    store = OutcomeStore(path)
    for i in range(10):
        assert store.add(_rec(float(i))) is False
    store.close()
    assert len(opened) == 1
    warnings = _warnings(caplog)
    assert len(warnings) == 1 and "damaged" in warnings[0] and str(path) in warnings[0]
    assert path.read_bytes() == bytes(data)
    with pytest.raises(StoreError, match="damaged"):
        read(path)


def test_a_damaged_file_then_another_file_records_again(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    damaged = tmp_path / "a.sqlite3"
    damaged.write_bytes(b"\x00garbage" * 600)
    store = OutcomeStore(damaged)
    assert store.add(_rec(1.0)) is False
    store.use(tmp_path / "b.sqlite3", 100)  # the acceptanceFile setting changed
    assert store.add(_rec(2.0))
    store.close()
    assert [r.ts for r in read(tmp_path / "b.sqlite3")] == [2.0]
    assert len(_warnings(caplog)) == 1


def test_stats_on_a_damaged_file_prints_one_line_and_fails(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    _saved_then_closed(path, 2)
    path.write_bytes(b"garbage" * 700)
    with pytest.raises(SystemExit) as exited:
        main(["stats", "--file", str(path)])
    message = exited.value.code
    assert isinstance(message, str) and message.startswith("error: ")  # exit status 1
    assert "\n" not in message and str(path) in message and "move it away" in message
    # As a user runs it: status 1, one line on stderr, no traceback.
    run = subprocess.run(
        [sys.executable, "-m", "lsp_copilot", "stats", "--file", str(path)],
        capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[2],
        env={**os.environ, "LSP_COPILOT_CACHE_DIR": str(tmp_path / "cache")})
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.strip() == message and "Traceback" not in run.stderr
    assert path.read_bytes() == b"garbage" * 700


def test_stats_on_a_damaged_file_in_the_default_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LSP_COPILOT_CACHE_DIR", str(tmp_path))
    (tmp_path / "acceptance.sqlite3").write_bytes(b"not sqlite" * 500)
    with pytest.raises(SystemExit, match=r"acceptance\.sqlite3 is damaged"):
        main(["stats", "--json"])
