"""Linking feedback to suggestions, deciding outcomes, and the `experiment` split."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_copilot.acceptance import experiment
from lsp_copilot.acceptance.store import OutcomeStore, read
from lsp_copilot.acceptance.tracker import MAX_OPEN, SETTLE_S, Tracker, keys_for, latency_bucket
from lsp_copilot.settings.arms import experiment_arms
from lsp_copilot.settings.core import Settings, parse_settings
from tests.support.clock import ManualClock
from tests.support.fakes import FakeEngine
from tests.support.pipeline import completer_for, snap

URI = "file:///w/calc.py"
BEFORE, AFTER = b"def add(a, b):\n    return ", b"\n\nprint(add(1, 2))\n"
KEYS = keys_for("/home/me/models/qwen", "qwen2.5-coder", "vllm", "single-line", "python",
                250.0, "", "")


@pytest.fixture
def tracker(tmp_path: Path) -> Tracker:
    return Tracker(OutcomeStore(tmp_path / "a.sqlite3"), clock=ManualClock(1000.0))


def _outcomes(t: Tracker) -> list[str]:
    return [r.outcome for r in read(t.store.path)] if t.store.path else []


def _suggest(t: Tracker, typed: bytes = b"", text: str = "a + b", continued: bool = False,
             character: int = 11) -> str:
    data = BEFORE + typed + AFTER
    return t.suggested(URI, 1, character + len(typed), text, data, len(BEFORE + typed), KEYS,
                       continued)


def test_accept_by_id_records_the_keys_and_no_text(tracker: Tracker) -> None:
    sid = _suggest(tracker)
    s = tracker.find(sid, None, None, None, None)
    assert s is not None
    tracker.shown(s)
    tracker.accepted(s, None, 5)
    (row,) = read(tracker.store.path)
    assert (row.outcome, row.model, row.template, row.route, row.mode, row.language,
            row.latency) == ("accepted", "qwen", "qwen2.5-coder", "vllm", "single-line",
                             "python", "100-300ms")
    assert row.shown_chars == row.accepted_chars == 5
    assert b"a + b" not in Path(str(tracker.store.path)).read_bytes()


def test_old_clients_without_id_are_found_by_what_they_send(tracker: Tracker) -> None:
    _suggest(tracker)
    s = tracker.find(None, URI, 1, 11, "a + b")
    assert s is not None and tracker.find(None, URI, 1, 12, "a + b") is None
    assert tracker.find(["x"], [URI], {"line": 1}, 11, ["a + b"]) is None  # bad traffic
    tracker.shown(s)
    tracker.rejected(s)
    tracker.flush()
    assert _outcomes(tracker) == ["rejected"]


def test_accepted_chars_below_the_length_is_partly_accepted(tracker: Tracker) -> None:
    s = tracker.find(_suggest(tracker), None, None, None, None)
    assert s is not None
    tracker.shown(s)
    tracker.accepted(s, 2, 5)
    (row,) = read(tracker.store.path)
    assert (row.outcome, row.accepted_chars) == ("partly_accepted", 2)


def test_typing_a_suggestion_to_its_end_is_typed_through(tracker: Tracker) -> None:
    sid = _suggest(tracker)
    s = tracker.find(sid, None, None, None, None)
    assert s is not None
    tracker.shown(s)
    for n in range(1, 5):  # each keystroke: the client rejects the old item, shows the rest
        tracker.changed(URI, BEFORE + b"a + b"[:n] + AFTER)
        tracker.rejected(s)
        assert _suggest(tracker, b"a + b"[:n], "a + b"[n:], continued=True) == sid
        tracker.shown(s)
    tracker.changed(URI, BEFORE + b"a + b" + AFTER)
    assert _outcomes(tracker) == []  # an accept may still say otherwise
    tracker.rejected(s)  # the client replaces it with the next suggestion
    nxt = tracker.find(_suggest(tracker, b"a + b", "  # sum"), None, None, None, None)
    assert nxt is not None and nxt.id != sid
    tracker.shown(nxt)
    assert _outcomes(tracker) == ["typed_through"]


def test_an_accept_after_its_insertion_is_an_accept_not_typing(tracker: Tracker) -> None:
    s = tracker.find(_suggest(tracker), None, None, None, None)
    assert s is not None
    tracker.shown(s)
    tracker.changed(URI, BEFORE + b"a + b" + AFTER)  # the editor inserts, then notifies
    tracker.accepted(s, None, 5)
    tracker.flush()
    assert _outcomes(tracker) == ["accepted"]


def test_typing_something_else_rejects_a_shown_suggestion(tracker: Tracker) -> None:
    s = tracker.find(_suggest(tracker), None, None, None, None)
    assert s is not None
    tracker.shown(s)
    tracker.changed(URI, BEFORE + b"a" + AFTER)
    assert _outcomes(tracker) == []
    tracker.changed(URI, BEFORE + b"a -" + AFTER)
    assert _outcomes(tracker) == ["rejected"]


def test_suggestions_never_shown_leave_no_record(tracker: Tracker) -> None:
    _suggest(tracker)
    tracker.changed(URI, BEFORE + b"a + b" + AFTER)  # typed, though never on screen
    for _ in range(MAX_OPEN + 10):
        _suggest(tracker)
    tracker.changed(URI, BEFORE + b"zzz" + AFTER)
    tracker.closed(URI)
    tracker.flush()
    assert _outcomes(tracker) == [] and tracker.summary()["open"] == 0


def test_a_tentative_rejection_settles_after_a_while(tracker: Tracker) -> None:
    s = tracker.find(_suggest(tracker), None, None, None, None)
    assert s is not None
    tracker.shown(s)
    tracker.rejected(s)
    _suggest(tracker, character=3)  # any later answer sweeps, but not yet
    assert _outcomes(tracker) == []
    tracker.clock.now += SETTLE_S + 1  # type: ignore[attr-defined]
    _suggest(tracker, character=4)
    assert _outcomes(tracker) == ["rejected"]
    assert tracker.summary()["rejected"] == 1


def test_latency_buckets() -> None:
    assert [latency_bucket(ms) for ms in (5, 150, 999, 2500, 9000)] == [
        "<100ms", "100-300ms", "300ms-1s", "1-3s", ">=3s"]


def _experiment(base: Settings) -> tuple[experiment.Experiment | None, list[str]]:
    arms, problems = experiment_arms(base)
    return experiment.build(arms, base.engine), problems


def _settings(raw: object) -> Settings:
    settings, problems = parse_settings({"experiment": raw})
    assert problems == []
    return settings


def test_experiment_split_is_stable_and_near_half() -> None:
    exp, problems = _experiment(_settings({"a": {}, "b": {"deadlineMs": 600}}))
    assert exp is not None and problems == [] and exp.label == "a vs b"
    picks = [exp.choose(f"file:///w/f{i % 7}.py", i)[0] for i in range(2000)]
    assert picks == [exp.choose(f"file:///w/f{i % 7}.py", i)[0] for i in range(2000)]
    assert 900 < picks.count("a") < 1100
    name, settings = exp.choose(URI, 3)
    assert settings.completion.deadline_ms == (600 if name == "b" else 300)


def test_experiment_refuses_global_settings_and_bad_values() -> None:
    exp, problems = _experiment(
        _settings({"a": {"prefetch": False, "dtype": "float32"}, "b": {"deadlineMs": "soon"}}))
    assert exp is not None and len(problems) == 3
    assert "'prefetch' refused" in problems[0] and "'dtype' refused" in problems[1]
    assert "deadlineMs" in problems[2]
    assert exp.settings[1].completion.deadline_ms == 300
    _, problems = parse_settings({"experiment": {"only": {}}})
    assert problems and "two named arms" in problems[0]


async def test_completer_answers_each_line_with_its_arms_settings() -> None:
    completer = await completer_for(FakeEngine())
    base, problems = parse_settings({  # no debounce, no deadline: as completer_for's
        "debounceMode": "off", "deadlineMs": 0,
        "experiment": {"on": {}, "off": {"disabledLanguages": ["python"]}}})
    assert problems == []
    completer.experiment, _ = _experiment(base)
    seen = set()
    for line in range(8):
        text = "\n" * line + "def add(a, b):\n    return "
        out = await completer.complete(snap(text), len(text))
        assert completer.experiment is not None
        arm = completer.experiment.choose(snap(text).uri, line + 1)[0]
        if arm == "on":
            assert (out.text, out.arm, out.template) == ("a + b", "on", "prefix-only")
        else:
            assert out.text == "" and "disabledLanguages" in (out.reason or "")
        seen.add(arm)
    assert seen == {"on", "off"}


def test_the_rest_after_a_partial_accept_keeps_the_answers_keys(tracker: Tracker) -> None:
    s = tracker.find(_suggest(tracker, text="a + b"), None, None, None, None)
    assert s is not None
    tracker.shown(s)
    tracker.accepted(s, 2, 5)  # "a " taken; the rest comes back by typing-through
    plain = keys_for("", "", "", "single-line", "python", 0.0, "", "")
    rest = tracker.suggested(URI, 1, 13, "+ b", BEFORE + b"a " + AFTER, len(BEFORE) + 2,
                             plain, continued=True)
    again = tracker.find(rest, None, None, None, None)
    assert again is not None and again.id != s.id and again.keys == KEYS


def _answer(t: Tracker, texts: tuple[str, ...]) -> list[str]:
    """An explicit answer with alternatives, registered as the server does: the
    alternatives first, the first item last; ids in the items' order."""
    data = BEFORE + AFTER
    keys = {**KEYS, "items": len(texts)}
    alts = [t.suggested(URI, 1, 11, text, data, len(BEFORE), keys, False, rank)
            for rank, text in enumerate(texts[1:], 1)]
    return [t.suggested(URI, 1, 11, texts[0], data, len(BEFORE), keys, False), *alts]


def _open(t: Tracker, sid: str):  # type: ignore[no-untyped-def]
    s = t.find(sid, None, None, None, None)
    assert s is not None
    return s


def test_one_insertion_of_a_word_of_the_shown_item_is_a_partial_accept(
        tracker: Tracker) -> None:
    first, second = _answer(tracker, ("a + b", "b - a"))
    tracker.shown(_open(tracker, first))
    (got,) = tracker.changed(URI, BEFORE + b"a +" + AFTER, inserted=True)
    assert (got.suggestion.id, got.chars, got.revealed) == (first, 3, False)
    assert tracker.summary()["recent"][-1] == {
        "id": first, "outcome": "partly_accepted", "accepted_chars": 3}
    assert tracker.counted(first) and not tracker.counted(second)
    rows = read(tracker.store.path)
    assert [(r.outcome, r.accepted_chars, r.shown_chars) for r in rows] == [
        ("partly_accepted", 3, 5)]


def test_keystrokes_and_edits_of_several_changes_are_typing_not_accepts(
        tracker: Tracker) -> None:
    (first,) = _answer(tracker, ("a + b",))
    tracker.shown(_open(tracker, first))
    assert tracker.changed(URI, BEFORE + b"a" + AFTER, inserted=True) == []
    assert tracker.changed(URI, BEFORE + b"a +" + AFTER, inserted=False) == []  # 2 changes
    assert tracker.changed(URI, BEFORE + b"a + " + AFTER, inserted=True) == []  # 1 char
    assert _outcomes(tracker) == []


def test_a_word_of_a_cycled_item_the_client_never_reported_credits_that_item(
        tracker: Tracker) -> None:
    first, second, third = _answer(tracker, ("a + b", "b - a", "b * a"))
    tracker.shown(_open(tracker, first))  # (VS Code reports the first item only)
    (got,) = tracker.changed(URI, BEFORE + b"b -" + AFTER, inserted=True)
    assert (got.suggestion.id, got.chars, got.revealed) == (second, 3, True)
    tracker.flush()
    assert sorted(_outcomes(tracker)) == ["partly_accepted", "rejected"]  # first: replaced
    recent = tracker.summary()["recent"]
    assert [(r["id"], r["outcome"]) for r in recent] == [
        (first, "rejected"), (second, "partly_accepted")]
    assert tracker.find(third, None, None, None, None) is None


def test_the_client_report_of_an_inferred_accept_is_not_counted_twice(
        tracker: Tracker) -> None:
    _, second = _answer(tracker, ("a + b", "b - a"))
    tracker.shown(_open(tracker, second))  # Neovim, Emacs: the item cycled to is shown
    tracker.changed(URI, BEFORE + b"b -" + AFTER, inserted=True)
    assert tracker.find(second, None, None, None, None) is None and tracker.counted(second)
    assert tracker.summary()["partly_accepted"] == 1


def test_a_reported_partial_accept_then_its_edit_is_counted_once(tracker: Tracker) -> None:
    first, _ = _answer(tracker, ("a + b", "a - b"))
    tracker.shown(_open(tracker, first))
    tracker.accepted(_open(tracker, first), 2, 5)  # "a " (Emacs: the edit comes later)
    assert tracker.changed(URI, BEFORE + b"a " + AFTER, inserted=True) == []
    tracker.flush()
    assert _outcomes(tracker) == ["partly_accepted"]


def test_a_whole_accept_of_a_cycled_item_is_that_items_accept(tracker: Tracker) -> None:
    first, second = _answer(tracker, ("a + b", "a + b + 1"))
    tracker.shown(_open(tracker, first))
    # VS Code inserts the whole first item, then runs its command: no partial accept of
    # the longer second item, whose beginning the insertion also is.
    assert tracker.changed(URI, BEFORE + b"a + b" + AFTER, inserted=True) == []
    tracker.accepted(_open(tracker, first), None, 5)
    tracker.flush()
    assert _outcomes(tracker) == ["accepted"]
    first, second = _answer(tracker, ("x", "y + 1"))
    tracker.shown(_open(tracker, first))
    assert tracker.changed(URI, BEFORE + b"y + 1" + AFTER, inserted=True) == []
    tracker.accepted(_open(tracker, second), None, 5)  # found: it was revealed on screen
    assert tracker.summary()["recent"][-1] == {
        "id": second, "outcome": "accepted", "accepted_chars": 5}


def test_the_record_of_an_item_says_its_rank_and_how_many_its_answer_offered(
        tracker: Tracker) -> None:
    first, second, _ = _answer(tracker, ("a + b", "b - a", "b * a"))
    tracker.shown(_open(tracker, first))
    tracker.shown(_open(tracker, second))  # cycled to: the first is replaced on screen
    tracker.accepted(_open(tracker, second), None, 5)
    rows = read(tracker.store.path)
    assert [(r.outcome, r.rank, r.items) for r in rows] == [("rejected", 0, 3),
                                                            ("accepted", 1, 3)]
    tracker.shown(_open(tracker, _suggest(tracker)))  # an answer of one item
    tracker.flush()
    last = read(tracker.store.path)[-1]
    assert (last.outcome, last.rank, last.items) == ("rejected", 0, 1)
