"""`lsp-copilot stats --by ... --plot`: the figures per group, intervals that account for
the experiment's unit of assignment, and the chart."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_copilot.acceptance import report
from lsp_copilot.acceptance.store import OutcomeStore, Record, read
from lsp_copilot.cli import stats as stats_cli
from lsp_copilot.cli.main import main


def _rec(outcome: str, ts: float = 1000.0, **keys: Any) -> Record:
    return Record(ts=ts, outcome=outcome, **{"model": "m", "mode": "single-line", **keys})


def test_independent_rows_keep_wilsons_interval() -> None:
    rows = [_rec("accepted")] * 8 + [_rec("rejected")] * 2
    assert report.effective(rows) == (8.0, 10.0)
    assert report.summarize(rows)["ci95"] == [round(x, 4) for x in report.wilson(8, 10)]


def test_rows_of_one_line_count_less_than_independent_ones() -> None:
    # 10 lines of 6 suggestions each, every line all taken or all not: 10 observations,
    # not 60. Mixed lines are nearer to independent.
    alike = [_rec("accepted" if c < 5 else "rejected", cluster=f"c{c}")
             for c in range(10) for _ in range(6)]
    k, n = report.effective(alike)
    assert (round(k, 6), round(n, 6)) == (5.0, 10.0)
    mixed = [_rec("accepted" if i % 2 else "rejected", cluster=f"c{c}")
             for c in range(10) for i in range(6)]
    assert report.effective(mixed)[1] == 60.0
    wide, narrow = report.summarize(alike)["ci95"], report.summarize(mixed)["ci95"]
    assert wide[1] - wide[0] > 2 * (narrow[1] - narrow[0])
    # so an experiment whose arms differ only by a few lines is not "a real difference"
    a = [_rec(r.outcome, experiment="a vs b", arm="a", cluster=r.cluster) for r in alike[:30]]
    b = [_rec(r.outcome, experiment="a vs b", arm="b", cluster=r.cluster) for r in alike[30:]]
    (exp,) = report.build(a + b)["experiments"]
    assert exp["difference"]["value"] == -1.0 and exp["difference"]["ci95"][0] < -0.5


def test_by_a_key_gives_the_figures_of_each_group() -> None:
    rows = ([_rec("accepted", arm="x", shown_chars=10, accepted_chars=10, latency_ms=100.0)] * 3
            + [_rec("partly_accepted", arm="x", shown_chars=10, accepted_chars=4,
                    latency_ms=900.0)]
            + [_rec("rejected", arm="y", shown_chars=10, latency_ms=50.0)] * 2)
    out = report.build(rows, by="arm")
    assert list(out["by"]) == ["arm"]
    x, y = out["by"]["arm"]
    assert (x["value"], x["shown"], x["accepted"], x["partly_accepted"], x["acceptance"]) == (
        "x", 4, 3, 1, 1.0)
    assert x["accepted_chars_per_shown"] == 8.5 and x["latency_ms"] == {"p50": 100.0,
                                                                        "p90": 900.0}
    assert y["acceptance"] == 0.0 and y["ci95"][0] == 0.0
    text = report.render(out, "here")
    assert "by arm" in text and "ch/sh" in text and "by model" not in text
    assert stats_cli.BY == report.BY


def _store(path: Path, rows: list[Record]) -> None:
    store = OutcomeStore(path)
    for r in rows:
        store.add(r)
    store.close()


def test_stats_by_arm_with_a_plot(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "a.sqlite3"
    _store(path, [_rec("accepted" if i % 3 else "rejected", ts=1000.0 + 60 * i,
                       experiment="a vs b", arm="ab"[i % 2], latency_ms=100.0 + i,
                       cluster=str(i)) for i in range(40)])
    png = tmp_path / "acceptance.png"
    assert main(["stats", "--by", "arm", "--json", "--file", str(path), "--plot",
                 str(png)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [row["value"] for row in out["by"]["arm"]] == ["a", "b"]
    assert out["experiments"][0]["difference"]["of"] == "b - a"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_plot_without_matplotlib_says_how_to_get_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    with pytest.raises(SystemExit) as exc:
        main(["stats", "--file", str(tmp_path / "none.sqlite3"), "--plot",
              str(tmp_path / "x.png")])
    assert "matplotlib" in str(exc.value) and "lsp-copilot[bench]" in str(exc.value)
    assert not (tmp_path / "x.png").exists()


def test_a_file_of_an_older_version_is_read_and_then_extended(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = sqlite3.connect(path)
    db.executescript("""CREATE TABLE outcomes (id INTEGER PRIMARY KEY AUTOINCREMENT,
        ts REAL NOT NULL, outcome TEXT NOT NULL, model TEXT NOT NULL DEFAULT '',
        template TEXT NOT NULL DEFAULT '', route TEXT NOT NULL DEFAULT '',
        mode TEXT NOT NULL DEFAULT '', language TEXT NOT NULL DEFAULT '',
        latency TEXT NOT NULL DEFAULT '', experiment TEXT NOT NULL DEFAULT '',
        arm TEXT NOT NULL DEFAULT '', shown_chars INTEGER NOT NULL DEFAULT 0,
        accepted_chars INTEGER NOT NULL DEFAULT 0);
        INSERT INTO outcomes (ts, outcome, model) VALUES (5.0, 'accepted', 'old');""")
    db.commit()
    db.close()
    (old,) = read(path)
    assert (old.model, old.latency_ms, old.cluster) == ("old", 0.0, "")
    _store(path, [_rec("rejected", latency_ms=42.0, cluster="c")])
    assert [(r.outcome, r.latency_ms, r.cluster) for r in read(path)] == [
        ("accepted", 0.0, ""), ("rejected", 42.0, "c")]
    assert report.summarize(read(path))["latency_ms"]["p50"] == 42.0


def test_picked_counts_which_item_of_answers_of_several_was_taken(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = ([_rec("accepted", rank=0, items=3)] * 3 + [_rec("rejected", rank=0, items=3)] * 2
            + [_rec("partly_accepted", rank=1, items=3)] + [_rec("rejected", rank=2, items=3)]
            + [_rec("accepted")] * 5)  # answers of one item: no choice, left out
    path = tmp_path / "a.sqlite3"
    _store(path, rows)
    assert main(["stats", "--json", "--file", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["picked"] == [
        {"rank": 0, "shown": 5, "picked": 3, "share": 0.75},
        {"rank": 1, "shown": 1, "picked": 1, "share": 0.25},
        {"rank": 2, "shown": 1, "picked": 0, "share": 0.0}]
    assert main(["stats", "--file", str(path)]) == 0
    text = capsys.readouterr().out
    assert "alternative 1  (rank 1): 1 taken of 1 shown, 25.0% of those taken" in text
    assert report.build([_rec("accepted")])["picked"] == []
