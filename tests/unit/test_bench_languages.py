"""bench context's per-language check: the enclosing function's name line in the prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_copilot.tokens import TiktokenCounter
from lsp_copilot_bench import languages as bench_languages


def _go_corpus(root: Path) -> Path:
    cases = "".join(f"\t\t{{in: {i}, want: {i * 2}}},\n" for i in range(120))
    (root / "table_test.go").write_text(
        "package geo\n\nfunc TestDouble(\n\tt *testing.T,\n) {\n"
        "\tcases := []struct{ in, want int }{\n"
        f"{cases}\t}}\n\tfor _, c := range cases {{\n\t\tt.Run(\"x\", func(t *testing.T) {{\n"
        + "".join(f"\t\t\tgot{i} := Double(c.in)\n" for i in range(12))
        + "\t\t\tif got0 != c.want {\n\t\t\t\tt.Fatal(got0)\n\t\t\t}\n\t\t})\n\t}\n}\n")
    (root / "short.go").write_text("package geo\n\nfunc Double(x int) int { return 2 * x }\n")
    return root


def test_check_finds_the_long_function_and_its_name_line(
    tmp_path: Path, cl100k: TiktokenCounter,
) -> None:
    root = _go_corpus(tmp_path)
    positions = bench_languages.positions("go", root, 5)
    assert len(positions) == 1  # the short function is no candidate
    pos = positions[0]
    assert pos.function == "TestDouble" and pos.name_line == "func TestDouble("
    assert pos.lines >= 120
    result = bench_languages.check("go", root, cl100k, 5)
    # The cursor is in a closure 140 lines below the name: P1's chain brings it.
    assert result["positions"] == 1 and result["share"] == 1.0, result["misses"]


def test_absent_corpus_is_skipped_with_the_reason(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here"
    assert bench_languages.corpus_root("go", {"go": missing}) == f"no corpus at {missing}"
    assert bench_languages.parse_folders(["rust=/x"]) == {"rust": Path("/x")}
    with pytest.raises(ValueError):
        bench_languages.parse_folders(["cobol=/x"])
