"""Suggestion safety: the rules of grammars/<language>/safety.scm, found in context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_copilot.cli.main import main
from lsp_copilot.documents.store import DocumentStore, Snapshot
from lsp_copilot.postprocess.insertion import Insertion
from lsp_copilot.postprocess.safety import (
    Review,
    SafetyChecker,
    safety_languages,
    safety_query,
    scan_file,
    scan_text,
)
from lsp_copilot.postprocess.whole import whole_checker
from lsp_copilot.settings.core import Settings, parse_settings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot_bench import safety as bench_safety

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "safety"
RULES = {"eval", "shell_command", "unsafe_deserialization", "yaml_load", "sql_injection",
         "tls_verify_off", "hardcoded_credential", "private_key"}
GRAMMARS = {  # grammar: its snippet file (tsx reads the TypeScript one)
    "python": "snippets.py", "javascript": "snippets.js", "typescript": "snippets.ts",
    "tsx": "snippets.ts", "go": "snippets.go", "java": "Snippets.java", "c": "snippets.c",
    "cpp": "snippets.cpp", "rust": "snippets.rs"}


@pytest.mark.parametrize("grammar", sorted(GRAMMARS))
def test_each_rule_fires_on_its_snippet_and_not_on_the_safe_variant(grammar: str) -> None:
    data = (FIXTURES / GRAMMARS[grammar]).read_bytes()
    found = {(f.line, f.rule) for f in scan_text(grammar, data)}
    marks = bench_safety.markers(data.decode())
    unsafe = {(line, rule) for line, kind, rule in marks if kind == "unsafe"}
    assert unsafe and unsafe <= found, sorted(unsafe - found)
    safe_lines = {line for line, kind, _ in marks if kind == "safe"}
    assert not {f for f in found if f[0] in safe_lines}
    marked = {line for line, _, _ in marks}
    assert {f for f in found if f[0] not in marked} == set(), "a finding on an unmarked line"


@pytest.mark.parametrize("grammar", sorted(GRAMMARS))
def test_query_files_compile_and_name_known_rules(grammar: str) -> None:
    query = safety_query(grammar)
    assert query is not None
    names = {query.capture_name(i) for i in range(query.capture_count)}
    rules = {n.removeprefix("finding.") for n in names if n.startswith("finding.")}
    assert rules and rules <= RULES, rules - RULES


def test_the_languages_with_rules() -> None:
    assert set(safety_languages()) == set(GRAMMARS)


def test_every_rule_has_a_snippet_in_python() -> None:
    data = (FIXTURES / "snippets.py").read_text()
    assert {rule for _, kind, rule in bench_safety.markers(data) if kind == "unsafe"} == RULES


def _at(text: str, language_id: str = "python") -> tuple[Snapshot, int]:
    cut = text.index("|")
    text = text.replace("|", "")
    store = DocumentStore()
    store.open("file:///w/f", language_id, 1, text)
    return store.snapshot("file:///w/f"), len(text[:cut].encode())


def _review(snap: Snapshot, off: int, text: str, level: str) -> Review:
    return SafetyChecker().review(whole_checker(snap, off), text, level)


FUNC = "import os\n\n\ndef clean(cmd):\n    |\n"


def test_a_dangerous_call_in_the_suggestion_is_found_in_context() -> None:
    snap, off = _at(FUNC)
    found = SafetyChecker().findings(Insertion(snap, off), "os.system(cmd)")
    assert [(f.rule, f.line) for f in found] == [("shell_command", 4)]


def test_a_call_the_file_already_has_is_not_news() -> None:
    snap, off = _at("import os\n\n\ndef clean(cmd):\n    os.system(cmd)\n    |\n")
    assert SafetyChecker().findings(Insertion(snap, off), "os.system(cmd + ' -f')") == []
    # ... but another rule is.
    assert [f.rule for f in SafetyChecker().findings(Insertion(snap, off), "eval(cmd)")] == ["eval"]


def test_findings_outside_the_suggestion_do_not_count() -> None:
    snap, off = _at("import os\n\n\ndef clean(cmd):\n    |\n\n\nos.system(cmd)\n")
    assert SafetyChecker().findings(Insertion(snap, off), "x = 1") == []


def test_block_cuts_before_the_line_of_the_finding() -> None:
    snap, off = _at(FUNC)
    review = _review(snap, off, "path = cmd.strip()\n    os.system(path)",
                                    "block")
    assert review.text == "path = cmd.strip()"
    assert [f.rule for f in review.blocked] == ["shell_command"]


def test_block_drops_a_suggestion_whose_first_line_is_the_finding() -> None:
    snap, off = _at(FUNC)
    review = _review(snap, off, "os.system(cmd)\n    return 0", "block")
    assert review.text == "" and review.blocked


def test_block_drops_what_the_cut_would_leave_unwhole() -> None:
    snap, off = _at(FUNC)
    review = _review(snap, off, "if cmd:\n        os.system(cmd)", "block")
    assert review.text == ""


def test_a_call_the_user_began_is_blocked_when_the_suggestion_completes_it() -> None:
    snap, off = _at("import os\n\n\ndef clean(cmd):\n    os.system(|\n")
    review = _review(snap, off, "cmd)", "block")
    assert review.text == "" and [f.rule for f in review.blocked] == ["shell_command"]


def test_warn_and_off_show_the_suggestion() -> None:
    snap, off = _at(FUNC)
    warned = _review(snap, off, "os.system(cmd)", "warn")
    assert warned.text == "os.system(cmd)" and not warned.blocked
    assert [f.rule for f in warned.warned] == ["shell_command"]
    off_review = _review(snap, off, "os.system(cmd)", "off")
    assert off_review.text == "os.system(cmd)" and not off_review.warned


def test_a_warn_level_rule_is_only_warned_about_under_block() -> None:
    snap, off = _at("import pickle\n\n\ndef load(data):\n    |\n")
    review = _review(snap, off, "return pickle.loads(data)", "block")
    assert review.text == "return pickle.loads(data)"
    assert [f.rule for f in review.warned] == ["unsafe_deserialization"]


def test_in_context_in_another_language() -> None:
    snap, off = _at("package main\n\nfunc run(cmd string) {\n\t|\n}\n", "go")
    review = _review(
        snap, off, 'out, _ := exec.Command("sh", "-c", cmd).Output()', "block")
    assert review.text == "" and [f.rule for f in review.blocked] == ["shell_command"]


def test_a_language_without_rules_is_not_scanned() -> None:
    snap, off = _at("local x = |\n", "lua")
    assert _review(snap, off, "os.execute(cmd)", "block").text == "os.execute(cmd)"


def test_each_warning_is_told_once_per_document() -> None:
    snap, off = _at(FUNC)
    checker = SafetyChecker()
    finding = checker.findings(Insertion(snap, off), "os.system(cmd)")[0]
    assert checker.first_warning(snap.uri, finding)
    assert not checker.first_warning(snap.uri, finding)
    assert checker.first_warning("file:///other", finding)


def test_the_setting() -> None:
    assert Settings().safety == "block"
    settings, errors = parse_settings({"safety": "warn"})
    assert settings.safety == "warn" and not errors
    settings, errors = parse_settings({"safety": "loud"})
    assert settings.safety == "block" and errors


def test_safety_check_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.py"
    path.write_text("import os\n\nos.system(cmd)\nx = 1\n")
    assert main(["safety", "check", str(path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "findings": [{"line": 3, "rule": "shell_command", "text": "os.system(cmd)"}]}
    path.write_text("x = 1\n")
    assert main(["safety", "check", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"findings": []}


def test_safety_check_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.js"
    path.write_text('const t = 1;\neval(input);\n')
    assert main(["safety", "check", str(path)]) == 1
    assert capsys.readouterr().out == f"{path}:2: eval: eval(input);\n"


def test_scan_file_picks_the_grammar_from_the_name(tmp_path: Path) -> None:
    path = tmp_path / "Main.java"
    path.write_text('class M { void f(String c) throws Exception {\n'
                    '  Runtime.getRuntime().exec(c);\n} }\n')
    grammar, findings = scan_file(path)
    assert grammar == "java" and [(f.line, f.rule) for f in findings] == [(1, "shell_command")]


def test_bench_measures_false_positives_and_recall(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import os\n\nx = 1\n\nos.system(cmd)\n")
    files = list(bench_safety.corpus_files(tmp_path, (".py",)))
    result = bench_safety.false_positives("python", files)
    assert (result["code_lines"], result["flagged_lines"]) == (3, 1)
    assert result["by_rule"] == {"shell_command": 1}
    recall = bench_safety.recall("python", FIXTURES / "snippets.py")
    assert recall["safe_flagged"] == 0
    assert recall["found"] == recall["dangerous"] - len(recall["missed"]) > 0


async def _complete(reply: str, source: str, **settings: object):  # type: ignore[no-untyped-def]
    from lsp_copilot.engine.manager import EngineManager
    from lsp_copilot.pipeline.completer import Completer
    from lsp_copilot.telemetry import Telemetry
    from tests.support.fakes import FakeEngine

    engine = FakeEngine(reply, step_s=0)
    manager = EngineManager(factory=lambda s, report: engine)
    assert (await manager.start(Settings().engine_setup)).ok
    s = Settings(**{"debounce_mode": "off", "deadline_ms": 0, "cache": False,
                    **settings})  # type: ignore[arg-type]
    completer = Completer(manager, Telemetry(), SettingsHub(s))
    snap, off = _at(source)
    return completer, await completer.complete(snap, off)


async def test_the_pipeline_blocks_and_counts_by_rule() -> None:
    completer, outcome = await _complete(" os.system(cmd)\n", FUNC)
    assert outcome.text == "" and outcome.reason == "blocked by `safety`: shell_command"
    stats = completer.telemetry.snapshot()
    assert stats["safety_blocked"] == 1 and stats["safety_warned"] == 0
    assert stats["safety_rules"] == {"shell_command": {"blocked": 1, "warned": 0}}


async def test_the_pipeline_warns_once_and_shows_the_suggestion() -> None:
    completer, outcome = await _complete(" os.system(cmd)\n", FUNC, safety="warn",
                                         typing_through=False)
    assert outcome.text == "os.system(cmd)"
    assert outcome.warnings == (
        "lsp-copilot: the suggestion at line 5 adds shell_command: os.system(cmd)",)
    assert [f.rule for f in outcome.safety] == ["shell_command"]
    assert completer.telemetry.snapshot()["safety_rules"] == {
        "shell_command": {"blocked": 0, "warned": 1}}
    snap, off = _at(FUNC)
    again = await completer.complete(snap, off)  # the same answer: no second message
    assert again.text == "os.system(cmd)" and again.warnings == () and again.safety


async def test_the_pipeline_leaves_safe_suggestions_alone() -> None:
    completer, outcome = await _complete(" return cmd.strip()\n", FUNC)
    assert outcome.text == "return cmd.strip()"
    assert completer.telemetry.snapshot()["safety_blocked"] == 0


def test_bench_run_and_render(tmp_path: Path) -> None:
    (tmp_path / "a.go").write_text('package a\n\nvar apiKey = "sk-4f9a8b7c6d5e4f3a2b1c"\n')
    result = bench_safety.run({name: tmp_path for name in bench_safety.CORPORA})
    assert result["false_positives"]["go"]["flagged_lines"] == 1
    assert result["false_positives"]["python"]["files"] == 0
    assert 0 < result["recall_heldout_total"]["found"] <= result["recall_heldout_total"][
        "dangerous"]
    table = bench_safety.render(result)
    assert "| go | 1 | 2 | 1 |" in table and "held-out snippets" in table
