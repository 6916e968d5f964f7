"""The outcome store (SQLite, bounded, no code) and the `lsp-copilot stats` report."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest

from lsp_copilot.acceptance import report
from lsp_copilot.acceptance.store import OutcomeStore, Record, read
from lsp_copilot.cli.main import main


def _rec(outcome: str, ts: float = 1000.0, **keys: str) -> Record:
    return Record(ts=ts, outcome=outcome, **{"model": "m", "mode": "single-line", **keys})


def test_store_keeps_rows_across_reopening(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite3"
    first = OutcomeStore(path)
    assert first.add(_rec("accepted"))
    first.close()
    second = OutcomeStore(path)
    assert second.add(_rec("rejected"))
    second.close()
    assert [r.outcome for r in read(path)] == ["accepted", "rejected"]
    assert (path.stat().st_mode & 0o077) == 0  # owner only


def test_store_is_bounded_in_rows_oldest_first(tmp_path: Path) -> None:
    store = OutcomeStore(tmp_path / "a.sqlite3", max_rows=5)
    for i in range(12):
        store.add(_rec("accepted", ts=float(i)))
    assert [r.ts for r in read(store.path)] == [7.0, 8.0, 9.0, 10.0, 11.0]
    store.max_rows = 0  # recording off
    assert not store.add(_rec("accepted"))
    assert len(read(store.path)) == 5


def test_store_has_no_column_that_could_hold_code(tmp_path: Path) -> None:
    store = OutcomeStore(tmp_path / "a.sqlite3")
    store.add(_rec("accepted"))
    db = sqlite3.connect(tmp_path / "a.sqlite3")
    columns = {row[1] for row in db.execute("PRAGMA table_info(outcomes)")}
    assert columns == {"id", "ts", "outcome", "model", "template", "route", "mode",
                       "language", "latency", "experiment", "arm", "shown_chars",
                       "accepted_chars", "latency_ms", "cluster", "rank", "items"}


def test_store_that_cannot_open_drops_rows_without_raising(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    store = OutcomeStore(blocker / "a.sqlite3")
    assert not store.add(_rec("accepted"))
    assert read(blocker / "missing.sqlite3") == []


def test_wilson_interval_known_values() -> None:
    lo, hi = report.wilson(8, 10)  # a textbook example: 0.490 to 0.943
    assert (round(lo, 3), round(hi, 3)) == (0.490, 0.943)
    assert report.wilson(0, 0) == (0.0, 1.0)
    lo, hi = report.wilson(0, 20)
    assert lo == 0.0 and 0.15 < hi < 0.17


def test_newcombe_difference_brackets_the_difference() -> None:
    d, lo, hi = report.newcombe(10, 100, 30, 100)
    assert math.isclose(d, 0.2) and 0.08 < lo < d < hi < 0.32
    d, lo, hi = report.newcombe(5, 10, 5, 10)
    assert d == 0 and lo < 0 < hi


def test_report_rates_by_key_and_experiment_difference() -> None:
    records = (
        [_rec("accepted", language="python", experiment="a vs b", arm="a")] * 2
        + [_rec("rejected", language="python", experiment="a vs b", arm="a")] * 8
        + [_rec("partly_accepted", language="go", experiment="a vs b", arm="b")] * 6
        + [_rec("typed_through", language="go", experiment="a vs b", arm="b")] * 4
    )
    out = report.build(records)
    assert out["shown"] == 20 and out["acceptance"] == 0.4
    langs = {row["value"]: row for row in out["by"]["language"]}
    assert langs["python"]["acceptance"] == 0.2 and langs["go"]["acceptance"] == 0.6
    assert langs["go"]["typed_through"] == 4
    (exp,) = out["experiments"]
    assert [a["arm"] for a in exp["arms"]] == ["a", "b"]
    assert exp["difference"]["value"] == 0.4 and exp["difference"]["of"] == "b - a"
    text = report.render(out, "here")
    assert "experiment a vs b" in text and "+40.0 points" in text
    assert "by language" in text and "|" in text  # a bar per row


def test_since_accepts_ages_and_dates() -> None:
    assert report.parse_since("7d", now=10 * 86400.0) == 3 * 86400.0
    assert report.parse_since("30m", now=3600.0) == 1800.0
    assert report.parse_since("2026-11-24") > report.parse_since("2026-11-23")
    with pytest.raises(ValueError):
        report.parse_since("last week")


def test_stats_command_reads_the_cache_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LSP_COPILOT_CACHE_DIR", str(tmp_path))
    store = OutcomeStore()  # the default path: the cache folder
    store.add(_rec("accepted", ts=100.0))
    store.add(_rec("rejected", ts=2e9))  # in 2033
    store.close()
    assert main(["stats", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["shown"] == 2 and out["file"] == str(tmp_path / "acceptance.sqlite3")
    assert main(["stats", "--since", "2030-01-01", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rejected"] == 1
    assert main(["stats"]) == 0
    assert "50.0%" in capsys.readouterr().out
