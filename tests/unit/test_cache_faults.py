"""The completion cache's disk layer fails (a full disk, a corrupted file): completions go
on from memory, the user sees one warning, and what was saved stays on disk."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lsp_copilot.pipeline.completion_cache import CompletionCache


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_full_disk_keeps_completing_from_memory_with_one_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = CompletionCache(tmp_path / "c")
    cache.put("saved", "return a + b")

    def full(*args: Any, **kwargs: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    cache._disk.set = full
    for i in range(20):  # keystroke after keystroke
        cache.put(f"k{i}", f"value {i}")
        assert cache.get(f"k{i}") == f"value {i}"
    assert len(_warnings(caplog)) == 1 and "full" in _warnings(caplog)[0]
    cache.close()
    again = CompletionCache(tmp_path / "c")  # what was saved before is still there
    assert again.get("saved") == "return a + b"
    again.close()


def test_a_corrupted_cache_file_is_left_alone_and_memory_answers(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "c"
    CompletionCache(folder).close()
    database = folder / "cache.db"
    database.write_bytes(b"this is not a database" * 100)
    cache = CompletionCache(folder)
    cache.put("k", "v")
    assert cache.get("k") == "v" and cache.get("other") is None
    assert len(_warnings(caplog)) == 1
    assert database.read_bytes().startswith(b"this is not")  # nothing deleted for the user
    cache.close()


def test_a_file_corrupted_while_running_switches_to_memory_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = CompletionCache(tmp_path / "c", memory_entries=1)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise sqlite3.DatabaseError("database disk image is malformed")

    cache._disk.get = broken
    cache._disk.set = broken
    for i in range(10):
        cache.put(f"k{i}", "v")
        cache.get("gone")  # not in memory: the disk is asked, and fails
    assert cache.get("k9") == "v"
    assert len(_warnings(caplog)) == 1
    cache.close()
