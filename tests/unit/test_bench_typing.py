"""bench typing's own rules: no answer on disk, and what counts as a whole pause."""

from __future__ import annotations

from pathlib import Path

from lsp_copilot_bench.pauses import whole as _whole
from lsp_copilot_bench.typing_replay import (
    Run,
    _pause_breakdown,
    make_scripts,
    workspace_without_answers,
)

BODY = ("def target(values):\n    total = 0\n    for value in values:\n"
        "        total += value * 2 if value > 0 else -value\n"
        "    return total + len(values) - 1 if values else 0\n")


def test_typed_function_is_missing_from_the_workspace(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "pkg").mkdir(parents=True)
    head = "".join(f"x{i} = {i}  # filler line to pass the size floor {'.' * 80}\n"
                   for i in range(60))
    (corpus / "pkg" / "mod.py").write_text(head + BODY + "\n\nAFTER = 1\n")
    (corpus / "pkg" / "notes.txt").write_text("not code")
    scripts = make_scripts(corpus, 50)
    assert scripts and scripts[0].rel == "pkg/mod.py"
    root = tmp_path / "ws"
    workspace_without_answers(corpus, scripts, root)
    on_disk = (root / "pkg" / "mod.py").read_text()
    assert "def target" not in on_disk and "AFTER = 1" in on_disk
    assert not (root / "pkg" / "notes.txt").exists()
    assert scripts[0].uri == (root / "pkg" / "mod.py").as_uri()


def test_whole_pause_measure() -> None:
    typed = "def f(values):\n    for v in "
    assert _whole(typed, "values:")  # a block header
    assert not _whole(typed, "values")
    assert _whole("def f(values):\n    total = ", "sum(values)")
    assert not _whole("def f(values):\n    total = ", "sum(")
    assert not _whole("def f(values):\n    total = ", None)


def test_whole_pause_judged_in_the_buffers_language_with_the_text_right_of_it() -> None:
    typed = "function f(values: number[]) {\n  const total = "
    assert _whole(typed, "values.length;", "typescript", "\n}")
    assert not _whole(typed, "values.length +", "typescript", "\n}")
    assert _whole("fn f() {\n    let n = ", "g(1);", "rust", "\n}")


def test_the_seed_chooses_the_keys(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    head = "".join(f"x{i} = {i}  # filler line to pass the size floor {'.' * 80}\n"
                   for i in range(60))
    (corpus / "mod.py").write_text(head + BODY + "\n\nAFTER = 1\n")

    def keys(seed: int) -> list[tuple[str | None, float]]:
        return [(k.text, k.gap_ms) for s in make_scripts(corpus, 200, seed) for k in s.keys]

    assert keys(1) == keys(1)
    assert keys(1) != keys(2)


def test_late_pauses_say_what_their_request_waited_on() -> None:
    """The breakdown of missed pauses reads each pause's own request in the server's
    trace: a generation of its own, one it joined, or the debounce."""
    run = Run("default")
    run.pause_keys = [("u", 2, "late"), ("u", 5, "late"), ("u", 9, "late"), ("u", 12, "whole")]
    run.trace = [
        {"uri": "u", "version": 2, "status": "cancelled", "mode": "single-line",
         "new_tokens": 3, "joined_flight": "forward", "flight_ms": 400.0, "flight_chars": 20},
        {"uri": "u", "version": 5, "status": "cancelled", "mode": "multi-line",
         "joined_flight": "forward", "flight_ms": 900.0, "flight_chars": 120},
        {"uri": "u", "version": 9, "status": "cancelled", "mode": "single-line",
         "debounce_ms": 250.0},
        {"uri": "u", "version": 9, "prefetch": True, "status": "answered"},  # not the pause's
        {"uri": "u", "version": 12, "status": "answered", "mode": "single-line",
         "source": "engine", "new_tokens": 2, "engine": 120.0},
    ]
    late = _pause_breakdown(run)["late"]
    assert late["count"] == 3
    assert late["by_wait"] == {"own_generation": 1, "joined_generation": 1, "debounce": 1}
    assert late["by_mode"] == {"single-line": 2, "multi-line": 1}
    assert late["flight_ms_p50"] == 650.0
    assert late["flight_chars_p50"] == 70.0
    assert _pause_breakdown(run)["whole"]["by_wait"] == {"own_generation": 1}


def test_the_first_minutes_are_reported_apart() -> None:
    """`--from-start`: the pauses of the first three minutes of typing, whole and right,
    beside the whole run's."""
    from lsp_copilot_bench.typing_replay import FIRST_MINUTES_S, _first_minutes

    run = Run("from-start")
    run.pause_log = [
        {"at_s": 10.0, "how": "whole", "right_line": True},
        {"at_s": 60.0, "how": "empty", "right_line": False},
        {"at_s": FIRST_MINUTES_S - 1, "how": "late", "right_line": False},
        {"at_s": FIRST_MINUTES_S + 5, "how": "whole", "right_line": True},
    ]
    got = _first_minutes(run)
    assert got["pauses"] == 3
    assert got["pauses_with_whole_statement"] == round(1 / 3, 3)
    assert got["pauses_right_line"] == round(1 / 3, 3)


async def test_from_start_types_once_the_engines_can_answer() -> None:
    """It waits for every routed engine to be loaded (not for the compiled copy), as a
    user starts typing once suggestions show."""
    import asyncio

    from lsp_copilot_bench.typing_replay import _first_suggestion

    class Client:
        def __init__(self) -> None:
            self.asked = 0
            self.protocol = self

        async def send_request_async(self, method: str, params: object) -> object:
            self.asked += 1
            await asyncio.sleep(0)
            loading = self.asked < 3
            return {"engine_state": "loading" if loading else "ready",
                    "routes": {"typing": {"state": "loading" if self.asked < 4 else "ready"}}}

    client = Client()
    await _first_suggestion(client, limit_s=30)
    assert client.asked == 4
