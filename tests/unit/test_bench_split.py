"""The benches' --split: the packages of a fresh-corpus.sh folder, and the errors that say
what to run when it is not there."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_copilot_bench.corpus import split_corpora
from lsp_copilot_bench.typing_replay import split_scripts, workspace_without_answers

BODY = ("def target(values):\n    total = 0\n    for value in values:\n"
        "        total += value * 2 if value > 0 else -value\n"
        "    return total + len(values) - 1 if values else 0\n")
HEAD = "".join(f"x{i} = {i}  # filler line to pass the size floor {'.' * 80}\n"
               for i in range(60))


def corpus(tmp_path: Path) -> Path:
    for name in ("alpha", "beta"):
        (tmp_path / "fresh" / "tune" / name / name).mkdir(parents=True)
        (tmp_path / "fresh" / "tune" / name / name / "mod.py").write_text(HEAD + BODY)
    return tmp_path / "fresh"


def test_split_lists_each_package(tmp_path: Path) -> None:
    fresh = corpus(tmp_path)
    assert split_corpora(fresh, "tune") == [("alpha", fresh / "tune" / "alpha"),
                                            ("beta", fresh / "tune" / "beta")]


@pytest.mark.parametrize("split, where, says", [
    ("tune", None, "needs --corpus"),
    ("report", "fresh", r"scripts/fresh-corpus\.sh"),
    ("heldout", "fresh", "must be one of"),
])
def test_split_errors_say_what_to_do(tmp_path: Path, split: str, where: str | None,
                                     says: str) -> None:
    fresh = corpus(tmp_path)
    with pytest.raises(ValueError, match=says):
        split_corpora(fresh if where else None, split)


def test_typing_keys_are_spread_over_the_packages(tmp_path: Path) -> None:
    fresh = corpus(tmp_path)
    scripts = split_scripts(fresh, "tune", 60, seed=1)
    assert [s.corpus for s in scripts] == ["alpha", "beta"]
    assert [s.rel for s in scripts] == ["alpha/alpha/mod.py", "beta/beta/mod.py"]
    assert all(len(s.keys) == 30 for s in scripts)  # ceil(60 / 2) each
    assert scripts[0].body == BODY
    root = tmp_path / "ws"
    workspace_without_answers(fresh / "tune", scripts, root)
    assert "def target" not in (root / "beta" / "beta" / "mod.py").read_text()


def test_cli_split_without_its_folder_stops_before_the_engine(tmp_path: Path) -> None:
    from lsp_copilot.cli.bench import cmd_bench
    from lsp_copilot.cli.main import build_parser

    args = build_parser().parse_args(["bench", "quality", "--split", "report"])
    with pytest.raises(SystemExit, match="needs --corpus"):
        cmd_bench(args)
    args = build_parser().parse_args(["bench", "typing", "--split", "report",
                                      "--corpus", str(corpus(tmp_path))])
    with pytest.raises(SystemExit, match=r"run scripts/fresh-corpus\.sh"):
        cmd_bench(args)
    args = build_parser().parse_args(["bench", "engine", "--split", "tune"])
    with pytest.raises(SystemExit, match="applies to bench quality and bench typing"):
        cmd_bench(args)


def test_cli_typing_settings_are_checked_before_any_engine() -> None:
    from lsp_copilot.cli.bench import cmd_bench, typing_settings
    from lsp_copilot.cli.main import build_parser

    assert typing_settings('{"enforceEager": false}', "typing") == {"enforceEager": False}
    assert typing_settings(None, "engine") == {}
    for bad, message in (('{"enforceEagre": false}', "enforceEagre"),
                         ('{"deadlineMs": -1}', "deadlineMs"),
                         ("[1]", "JSON object"), ("{", "not JSON")):
        with pytest.raises(SystemExit, match=message):
            typing_settings(bad, "typing")
    args = build_parser().parse_args(["bench", "engine", "--settings", "{}"])
    with pytest.raises(SystemExit, match="--settings is for `bench typing`"):
        cmd_bench(args)
