"""bench typing's right-at-the-pause measure: the target a pause is judged against, and
when a suggestion's first line is the right line or a right start of it."""

from __future__ import annotations

import pytest

from lsp_copilot_bench.pauses import pause_figures, pause_target, render, score_pause

BEFORE = "import os\n\n\n"
BODY = ("def total(values):\n    result = 0\n    for value in values:\n"
        "        result += value\n\n    return result\n")
INTENDED = BEFORE + BODY


def typed(upto: str) -> str:
    """The buffer as typed up to the end of ``upto`` in the intended text."""
    return INTENDED[: INTENDED.index(upto) + len(upto)]


def test_mid_line_the_target_is_the_rest_of_the_line() -> None:
    now = typed("    for value in")
    assert pause_target(INTENDED, now) == "values:"
    right = score_pause(INTENDED, now, " values:")
    assert (right.target, right.right_line, right.right_start, right.similarity) == (
        "values:", True, True, 1.0)
    start = score_pause(INTENDED, now, " valu")
    assert (start.right_line, start.right_start) == (False, True)
    wrong = score_pause(INTENDED, now, " range(10):")
    assert not wrong.right_line and not wrong.right_start and 0 < wrong.similarity < 1
    assert not score_pause(INTENDED, now, " va").right_start  # fewer than 3 letters


def test_end_of_a_finished_line_takes_the_next_line() -> None:
    now = typed("    result = 0")
    assert pause_target(INTENDED, now) == "for value in values:"
    assert score_pause(INTENDED, now, "\n    for value in values:\n").right_line
    # The same text, not on a new line, would go on the finished line: not right.
    same_line = score_pause(INTENDED, now, "for value in values:")
    assert (same_line.right_line, same_line.right_start, same_line.similarity) == (
        False, False, 0.0)


def test_after_enter_with_the_editors_indentation() -> None:
    now = typed("    for value in values:") + "\n        "  # Enter, then auto-indent
    assert pause_target(INTENDED, now) == "result += value"
    assert score_pause(INTENDED, now, "result += value").right_line
    # The editor's indentation is one level too deep here, and the row stays blank: the
    # target is the next line with code on it.
    blank = typed("        result += value") + "\n        "
    assert pause_target(INTENDED, blank) == "return result"
    assert score_pause(INTENDED, blank, "return result").right_line


def test_a_pending_typo_has_no_target() -> None:
    now = typed("    for val") + "q"
    assert pause_target(INTENDED, now) is None
    score = score_pause(INTENDED, now, "ue in values:")
    assert (score.target, score.right_line, score.right_start, score.similarity) == (
        None, False, False, 0.0)


def test_a_lone_bracket_is_too_little_to_be_right() -> None:
    intended = "x = call(\n    first,\n)\n"
    now = "x = call(\n    first,\n"
    assert pause_target(intended, now) == ")"
    score = score_pause(intended, now, ")")
    assert (score.right_line, score.right_start) == (False, False)


def test_nothing_shown_and_nothing_left() -> None:
    now = typed("    for value in")
    assert score_pause(INTENDED, now, None).similarity == 0.0
    assert pause_target(INTENDED, INTENDED) is None  # the function is all typed


def test_shares_are_of_all_pauses() -> None:
    def pause(how: str, right: bool, sim: float) -> dict[str, object]:
        return {"how": how, "right_line": right, "right_start": right, "similarity": sim}

    figures = pause_figures([pause("whole", True, 1.0), pause("suggested", False, 0.5),
                             pause("late", False, 0.0), pause("empty", False, 0.0)])
    assert figures["pauses_right_line"] == 0.25
    assert figures["pause_similarity_mean"] == pytest.approx(0.375, abs=1e-3)
    assert figures["pauses_with_suggestion"] == 0.5
    assert figures["pauses_not_answered_in_time"] == 1
    # One pause had nothing left to type: beside the whole share, that of the others.
    ended = pause_figures([pause("whole", True, 1.0), pause("empty", False, 0.0),
                           {**pause("empty", False, 0.0), "target": None}])
    assert ended["pauses_with_whole_statement"] == round(1 / 3, 3)
    assert ended["pauses_nothing_left"] == 1 and ended["whole_where_something_left"] == 0.5


def test_the_table_shows_the_new_figures_and_each_package() -> None:
    rows = [{"config": "default", "split": "tune", "pauses_right_line": 0.5,
             "corpora": {"pkg": {"keystrokes": 10, "pauses_right_line": 0.5}}}]
    table = render(rows)
    assert "pauses_right_line | 0.5" in table
    assert "default: package (tune)" in table and "\npkg | 10 |" in table
