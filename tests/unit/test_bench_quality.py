"""`bench quality` without an engine: the holes it cuts and how it scores them."""

from __future__ import annotations

from pathlib import Path

from lsp_copilot.context.index.workspace_index import WorkspaceIndex
from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.models.engine_tokenizer import engine_counter
from lsp_copilot.prompts.templates import template_for
from lsp_copilot_bench.baseline import prefix_only_context
from lsp_copilot_bench.quality import cut_holes, summarize

GRAMMARS = Path(__file__).parent.parent / "fixtures" / "grammars"


def _corpus(tmp_path: Path) -> WorkspaceIndex:
    for sample in GRAMMARS.glob("sample.*"):
        for n in range(3):
            (tmp_path / f"{sample.stem}{n}{sample.suffix}").write_bytes(sample.read_bytes())
    index = WorkspaceIndex(tmp_path)
    index.build()
    return index


def test_holes_are_seeded_and_put_back_give_the_file(tmp_path: Path) -> None:
    index = _corpus(tmp_path)
    holes = cut_holes(index, 8, seed=3)
    assert holes == cut_holes(index, 8, seed=3)
    assert {h.kind for h in holes} == {"single-line", "multi-line"}
    assert len({Path(h.rel).suffix for h in holes}) > 1  # not only Python
    for hole in holes:
        lines = hole.masked.split("\n")
        row = lines[hole.line]
        filled = row[: hole.column] + hole.expected + row[hole.column:]
        assert "\n".join([*lines[: hole.line], filled, *lines[hole.line + 1:]]) \
            == hole.original, hole.rel


def test_prefix_only_baseline_is_the_text_before_the_cursor(tmp_path: Path) -> None:
    text = "".join(f"line_{i} = {i}\n" for i in range(400)) + "x = "
    store = DocumentStore()
    store.open("file:///a.py", "python", 1, text)
    snap = store.snapshot("file:///a.py")
    counter = engine_counter(None)
    ctx = prefix_only_context(snap, len(text), counter, template_for(None), 300)
    assert text.endswith(ctx.prompt) and ctx.prompt.startswith("line_")
    assert 250 < ctx.prompt_tokens <= 300


def test_summary_ratio_and_parse_share() -> None:
    def rec(kind: str, ours: bool, base: bool, parsed: bool = True) -> dict[str, object]:
        side = {"completion": "x", "prompt_tokens": 10, "similarity": 1.0, "parses": True}
        return {"kind": kind, "parsed_before": parsed,
                "ours": {**side, "exact": ours},
                "prefix_only": {**side, "exact": base, "parses": base}}

    summary = summarize([rec("single-line", True, True), rec("single-line", True, False),
                         rec("multi-line", False, False, parsed=False)])
    assert summary["all"]["ours"]["exact_match"] == round(2 / 3, 3)
    assert summary["all"]["exact_match_ratio"] == 2.0
    assert summary["all"]["prefix_only"]["parses"] == 0.5  # the unparsed file is left out


def test_summary_counts_holes_offered_two_or_more_suggestions() -> None:
    def rec(kind: str, suggestions: int, alternatives: list[str]) -> dict[str, object]:
        side = {"completion": "x" if suggestions else "", "prompt_tokens": 10,
                "similarity": 1.0, "parses": True, "exact": False,
                "suggestions": suggestions, "alternatives": alternatives}
        return {"kind": kind, "parsed_before": True, "expected": "b", "ours": side,
                "prefix_only": {**side, "suggestions": 1, "alternatives": []}}

    summary = summarize([rec("single-line", 3, ["a", "b"]), rec("single-line", 1, []),
                         rec("single-line", 0, []), rec("multi-line", 2, ["a"])])
    assert summary["all"]["ours"]["two_or_more_suggestions"] == 0.5
    assert summary["single-line"]["ours"]["two_or_more_suggestions"] == round(1 / 3, 3)
    assert summary["multi-line"]["ours"]["two_or_more_suggestions"] == 1.0
    assert summary["all"]["prefix_only"]["two_or_more_suggestions"] == 0.0
    assert summary["all"]["ours"]["exact_in_any"] == 0.25  # "b", the second item of one


def test_cli_takes_bench_quality_with_an_optional_json_file() -> None:
    from lsp_copilot.cli.main import build_parser

    args = build_parser().parse_args(["bench", "quality", "--corpus", "src", "--count", "6",
                                      "--json", "out.json"])
    assert (args.what, args.count, args.json) == ("quality", 6, "out.json")
    assert build_parser().parse_args(["bench", "engine", "--json"]).json is True
    assert build_parser().parse_args(["bench", "engine"]).json is False


async def test_both_variants_take_their_ids_from_one_source(tmp_path: Path) -> None:
    """`ours` and the prefix-only baseline ask one engine, explicit requests with their
    alternatives: no two requests may share an id (an engine refuses the second)."""
    from lsp_copilot.engine.manager import EngineManager
    from lsp_copilot.settings.hub import SettingsHub
    from lsp_copilot_bench.quality import run_holes
    from tests.support.fakes import FakeEngine

    engine = FakeEngine(" a + b\n", step_s=0.0)
    manager = EngineManager(factory=lambda s, report: engine)
    hub = SettingsHub.of(deadline_ms=0)
    assert (await manager.start(hub.settings.engine_setup)).ok
    index = _corpus(tmp_path)
    records = await run_holes(cut_holes(index, 4, seed=3), index, hub, manager)
    ids = [r.request_id for r in engine.requests]
    assert len(records) == 4 and len(ids) > 8 and len(set(ids)) == len(ids)
    for record in records:  # one answer everywhere: no alternative differs from it
        assert record["ours"]["suggestions"] == (1 if record["ours"]["completion"] else 0)
        assert record["ours"]["alternatives"] == []
    await manager.shutdown()


def test_holes_of_one_language_are_cut_in_its_files_alone(tmp_path: Path) -> None:
    index = _corpus(tmp_path)
    (tmp_path / "types.d.ts").write_text("".join(
        f"export declare function f{i}(a: number): number;\n" for i in range(40)))
    index.build()
    for language, suffixes in (("go", {".go"}), ("typescript", {".ts"}), ("rust", {".rs"})):
        holes = cut_holes(index, 4, seed=3, language=language)
        assert holes and {Path(h.rel).suffix for h in holes} == suffixes, language
        assert not any(h.rel.endswith(".d.ts") for h in holes)


def test_bench_quality_takes_a_corpus_per_language() -> None:
    from lsp_copilot.cli.main import build_parser
    from lsp_copilot_bench.quality import parse_languages, render

    args = build_parser().parse_args(["bench", "quality", "--split", "tune",
                                      "--language-corpus", "go=/c/go",
                                      "--language-corpus", "rust=/c/rust"])
    assert parse_languages(args.language_corpus) == {"go": Path("/c/go"),
                                                     "rust": Path("/c/rust")}
    try:
        parse_languages(["klingon=/c"])
    except ValueError as exc:
        assert "LANG=PATH" in str(exc)
    else:
        raise AssertionError("an unknown language was taken")
    side = {"exact_match": 0.5, "edit_similarity": 0.7, "parses": 1.0, "empty": 0.0,
            "mean_prompt_tokens": 100, "two_or_more_suggestions": 0.0, "exact_in_any": 0.5}
    summary = {"all": {"holes": 2, "ours": side, "prefix_only": side,
                       "exact_match_ratio": 1.0}}
    result = {"corpus": "/c", "split": "tune", "seed": 0, "engine": {"model": "m"},
              "budget_tokens": 1024, "seconds": 1.0,
              "languages": {lang: {"corpus": f"/c/{lang}", "summary": summary,
                                   "corpora": {"pkg": {"summary": summary}}}
                            for lang in ("go", "rust")}}
    table = render(result)
    assert table.startswith("go: corpus /c/go, split tune") and "\n\nrust: corpus /c/rust" in table
