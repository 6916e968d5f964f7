"""What every bench shares: its corpus listing, where holes are cut, how figures are made."""

from __future__ import annotations

import random
import tarfile
import zipfile
from pathlib import Path

from lsp_copilot.telemetry import percentile
from lsp_copilot_bench.corpus import archive_files, folder_files, is_source, python_files
from lsp_copilot_bench.holes import LineRule, cut_column, pick_block, pick_line
from lsp_copilot_bench.metrics import edit_similarity, median, share
from lsp_copilot_bench.robustness.edits import trial_edits


def test_percentile_is_the_value_nearest_the_quantile_position() -> None:
    hundred = [float(v) for v in range(1, 101)]
    # Positions q * 99: 49.5 rounds to 50 (halves to even), 89.1 to 89, 98.01 to 98.
    assert percentile(hundred, 0.5) == 51.0
    assert percentile(hundred, 0.9) == 90.0
    assert percentile(hundred, 0.99) == 99.0
    assert percentile([1.0, 2.0], 0.5) == 1.0  # 0.5 rounds to 0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 3.0  # 1.5 rounds to 2
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([], 0.5) == 0.0


def test_figures_say_none_when_nothing_was_measured() -> None:
    assert median([3.0, 1.0, 2.0, 10.0]) == 2.5 and median([], 2) is None
    assert median([1.234, 1.0], 2) == 1.12
    assert share(1, 3) == 0.333 and share(1, 0) is None
    assert edit_similarity("abcd", "abcd") == 1.0
    assert edit_similarity("abcd", "wxyz") == 0.0
    assert 0.5 < edit_similarity("return total", "return totals") < 1.0


def test_a_line_is_cut_after_its_first_token() -> None:
    assert cut_column("    return sum(values) / len(values)") == len("    return ")
    assert cut_column("\tx=compute(values)") == 1 + len("x=compute(values)") // 3
    assert cut_column("ab") == 1  # at least one character typed


def test_line_rule_keeps_code_below_the_head_and_skips_prose() -> None:
    lines = ["x = 1"] * 3 + ["    total = compute(values, key)", "    # a comment line here",
                             "    y", "    return total + offset_value * 2"]
    rule = LineRule(after_row=2, max_chars=40, prose=("#",))
    assert rule.candidates(lines) == [3, 6]
    assert LineRule(after_row=3, max_chars=40, prose=("#",)).candidates(lines) == [6]
    row, column = pick_line(lines, random.Random(0), rule) or (-1, -1)
    assert row in (3, 6) and column == cut_column(lines[row])
    assert pick_line(["# only prose, nothing else"] * 30, random.Random(0), rule) is None


def test_a_block_body_is_picked_only_where_it_ends_cleanly() -> None:
    lines = ["import os", "", "def f(x):", "    y = x + 1", "    return y", "",
             "def g(x):", "    return [", "", "        x]", "", "z = 1"]
    got = pick_block(lines, random.Random(0), (":",), ("#",), after_row=0)
    assert got == (2, ["    y = x + 1", "    return y"], 5)  # g's body has a blank inside
    long = ["import os", "def h():", *[f"    a{i} = {i}" for i in range(7)], "b = 1", ""]
    assert pick_block(long, random.Random(0), (":",), ("#",), after_row=0) is None


def test_corpus_lists_sources_of_folders_and_archives(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.go").write_text("package a\n")
    (tmp_path / "pkg" / "big.go").write_text("x" * 200)
    (tmp_path / "vector").write_text("// a header without a suffix\n")
    (tmp_path / "notes.txt").write_text("prose\n")
    assert [p.name for p, _ in folder_files(tmp_path, (".go",), 100)] == ["a.go"]
    assert [p.name for p, _ in folder_files(tmp_path, (), 100)] == ["vector"]
    assert is_source("include/c++/bits/stl_vector.tcc", ()) and not is_source("a.txt", ())
    with zipfile.ZipFile(tmp_path / "src.zip", "w") as z:
        z.writestr("java/util/List.java", "interface List {}\n")
        z.writestr("README", "read me\n")
    assert [(n, r()) for n, r in archive_files(tmp_path / "src.zip", (".java",), 100)] == [
        ("java/util/List.java", b"interface List {}\n")]
    with tarfile.open(tmp_path / "pkg.tgz", "w:gz") as t:
        t.add(tmp_path / "pkg" / "a.go", "package/a.go")
    assert [(n, r()) for n, r in archive_files(tmp_path / "pkg.tgz", (".go",), 100)] == [
        ("package/a.go", b"package a\n")]


def test_python_files_are_sized_skipped_and_sorted(tmp_path: Path) -> None:
    for name, size in (("b.py", 50), ("a.py", 50), ("tiny.py", 5), ("test_c.py", 50)):
        (tmp_path / name).write_text("x" * size)
    found = python_files(tmp_path, 10, 100, lambda p: p.name.startswith("test"))
    assert [p.name for p in found] == ["a.py", "b.py"]


def test_robustness_edit_trial_runs_in_process() -> None:
    trial = trial_edits(5)
    assert trial.ok, trial.summary
    assert trial.numbers["sequences"] >= 1 and trial.numbers["edits"] >= 1
    assert trial.line().startswith("PASS  edits")
