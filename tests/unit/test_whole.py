"""Whole suggestions: a fragment is never shown, a header alone only on the line the user
is typing (tree-sitter)."""

from __future__ import annotations

import pytest

from lsp_copilot.documents.store import DocumentStore, Snapshot
from lsp_copilot.language.trigger import completion_mode
from lsp_copilot.pipeline.prompt import cursor_at
from lsp_copilot.postprocess.checks import PostProcessor, Target, finalize
from lsp_copilot.postprocess.stop import stop_rule
from lsp_copilot.postprocess.whole import first_line_is_whole, whole_checker


def _at(text: str, language_id: str = "python") -> tuple[Snapshot, int]:
    cut = text.index("|")
    text = text.replace("|", "")
    store = DocumentStore()
    store.open("file:///w", language_id, 1, text)
    return store.snapshot("file:///w"), len(text[:cut].encode())


def _final(doc: str, raw: str, language_id: str = "python") -> str:
    snap, off = _at(doc, language_id)
    mode = completion_mode(snap, off)
    return finalize(raw, mode, cursor_at(snap, off), snap, off)


FUNC = "def area(r):\n    |\n    return x\n"


@pytest.mark.parametrize("raw", ["self.", "if", "for i in range(", 'f"', "x = (1,"])
def test_fragments_are_not_shown(raw: str) -> None:
    assert _final("def f(self):\n    x = 1\n    |\n", " " + raw + "\n") == ""


def test_a_whole_statement_is_shown() -> None:
    assert _final("def f(self):\n    x = 1\n    |\n", " y = x + 1\n") == "y = x + 1"


def test_a_header_the_user_is_typing_is_offered_alone_when_no_body_is_whole() -> None:
    """The header completes the line being typed; its body comes after Enter (the pause
    measure counts a header whole). A header the model starts on a blank line is not the
    user's: alone it is not offered."""
    assert _final("def f(x):\n    if |\n    return x\n", " x > 1:") == "x > 1:"
    method = "class P:\n    def lrem(self, name,|\n\n    def x(self):\n        pass\n"
    assert _final(method, " value):\n        # a comment\n        # and one more") == " value):"
    assert _final("def f(x):\n    |\n    return x\n", " if x > 1:") == ""


def test_at_a_typing_pause_a_header_on_an_empty_line_may_come_without_its_body() -> None:
    """At a typing pause the model's body may still be coming when the user's pause ends:
    the header it started on the empty line is shown alone (its body comes after Enter).
    An explicit request waits for the body: a header alone would leave the file broken."""
    snap, off = _at("def f(x):\n    |\n    return x\n")
    cursor = cursor_at(snap, off)
    raw = " if x > 1:\n        x = ("  # the body, cut mid-statement by the deadline

    def shown(typing: bool) -> str:
        return PostProcessor(Target("single-line", cursor, snap, off, typing=typing)).run(
            raw).text

    assert shown(typing=True) == "if x > 1:"
    assert shown(typing=False) == ""
    assert _final("def f(x):\n    |\n    return x\n", raw) == ""  # (no typing pause)


def test_a_header_is_completed_as_a_block() -> None:
    snap, off = _at("def f(xs):\n    total = 0\n    for |\n    return total\n")
    cursor = cursor_at(snap, off)
    raw = " x in xs:\n        total += x\n    return total\n"
    cut = stop_rule("single-line", cursor)(raw)
    assert cut is not None and raw[:cut] == " x in xs:\n        total += x"
    assert finalize(raw, "single-line", cursor, snap, off) == "x in xs:\n        total += x"


def test_a_header_over_an_existing_body_stays_one_line() -> None:
    snap, off = _at("def f(xs):\n    for |\n        print(x)\n")
    raw = " x in xs:\n        print(x)\n"
    cursor = cursor_at(snap, off)
    cut = stop_rule("single-line", cursor)(raw)
    assert cut is not None and raw[:cut] == " x in xs:"
    assert finalize(raw, "single-line", cursor, snap, off) == "x in xs:"


def test_braces_block_keeps_its_closer() -> None:
    doc = "func f(xs []int) int {\n\tt := 0\n\tfor |\n\treturn t\n}\n"
    snap, off = _at(doc, "go")
    raw = " _, x := range xs {\n\t\tt += x\n\t}\n\treturn t\n"
    cursor = cursor_at(snap, off)
    cut = stop_rule("single-line", cursor)(raw)
    assert cut is not None and raw[:cut] == " _, x := range xs {\n\t\tt += x\n\t}"
    assert finalize(raw, "single-line", cursor, snap, off) == raw[1:cut]


def test_a_file_broken_elsewhere_does_not_block_a_whole_line() -> None:
    doc = "def g(:\n    pass\n\ndef f(x):\n    |\n    return x\n"
    assert _final(doc, " y = x * 2\n") == "y = x * 2"
    assert _final(doc, " y = (x *\n") == ""


def test_checker_counts_errors_against_the_line_before_it_was_typed() -> None:
    snap, off = _at("def f(x):\n    y = fo|\n    return y\n")
    checker = whole_checker(snap, off)
    assert checker.is_whole("o(x)")
    assert not checker.is_whole("o(x")
    verdict = checker.check("o(x")
    assert verdict is not None and verdict.errors_after > verdict.errors_before


def test_first_line_measure() -> None:
    snap, off = _at("def f(xs):\n    for |\n    return 1\n")
    assert first_line_is_whole(snap, off, "x in xs:")  # a block header counts
    assert not first_line_is_whole(snap, off, "x in")
    snap, off = _at("def f(xs):\n    y = |\n")
    assert first_line_is_whole(snap, off, "len(xs)\n    return y")
    assert not first_line_is_whole(snap, off, "len(")
    assert not first_line_is_whole(snap, off, "")


def test_first_line_measure_of_a_comment_and_of_the_next_line() -> None:
    snap, off = _at("def f(\n    a: int,\n    |\n) -> None:\n    pass\n")
    assert first_line_is_whole(snap, off, "b: int,")
    assert not first_line_is_whole(snap, off, "# pkg/module.py")  # not a statement
    snap, off = _at("def f(\n    a: int,|\n) -> None:\n    pass\n")
    assert first_line_is_whole(snap, off, "\n    b: int,")  # the next line is judged
    assert not first_line_is_whole(snap, off, "\n    b: int = (")
    assert not first_line_is_whole(snap, off, "\n")
    snap, off = _at("def f(xs):\n    y = len(xs)|\n")
    assert first_line_is_whole(snap, off, "\n    for x in xs:")  # a header, with a body


def test_without_a_grammar_nothing_is_held_back() -> None:
    snap, off = _at("some text |\n", "plaintext")
    assert whole_checker(snap, off).check("more (") is None


def test_a_broken_region_the_answer_creates_is_not_hidden_by_one_it_removes() -> None:
    # Seen on held-out code: in an emptied import list (itself an error), an answer with
    # a stray quote trades the missing name for an unterminated string: same count.
    doc = "from a import (\n    |\n)\nx = 1\n"
    snap, off = _at(doc)
    checker = whole_checker(snap, off)
    assert not checker.is_whole('Entry",')
    assert checker.is_whole("Entry,")


# The suffix decides what fits: a body already under the cursor line wants its header.
BODY_BELOW = "def f(items):\n    total = 0\n    |\n        total += x\n    return total\n"


def test_over_an_existing_body_only_a_header_fits() -> None:
    snap, off = _at(BODY_BELOW)
    checker = whole_checker(snap, off)
    assert checker.is_whole("for x in items:")
    for plain in ("total = 1", "print(items)", "x = 5\n    y = 6"):
        verdict = checker.check(plain)
        # tree-sitter-python parses each of these without an error: the rule is ours.
        assert verdict is not None and not verdict.whole, plain
    # A header with a second copy of the body is not what fits either.
    assert not checker.is_whole("for x in items:\n        total += x")


def test_over_an_existing_body_an_answer_is_cut_to_its_header() -> None:
    raw = " for x in items:\n        total += x\n    return total\n"
    assert _final(BODY_BELOW, raw) == "for x in items:"
    assert _final(BODY_BELOW, " total = 1\n") == ""
    assert _final("def f(a):\n    if a:\n        return 1\n    |\n        return 2\n",
                  " else:\n") == "else:"


def test_a_missing_header_is_not_forgiven_because_the_baseline_was_broken() -> None:
    # With the line emptied the orphan `except` is already an error: an answer that adds
    # no second one used to pass.
    snap, off = _at("def f():\n    |\n        x = g()\n    except E:\n        pass\n")
    checker = whole_checker(snap, off)
    assert checker.baseline_errors() > 0
    assert checker.is_whole("try:")
    assert not checker.is_whole("x = 1")


def test_an_open_bracket_above_or_a_broken_line_below_is_not_the_answer_s() -> None:
    snap, off = _at("def f(a):\n    x = g(a,\n          |\n\ndef h():\n    pass\n")
    checker = whole_checker(snap, off)
    assert checker.is_whole("b)") and checker.is_whole("b,")
    snap, off = _at("def f(a):\n    y = 2\n    |\n\ndef h(:\n    pass\n")
    assert whole_checker(snap, off).is_whole("return y")


def test_braces_a_finished_statement_over_a_deeper_line_does_not_fit() -> None:
    snap, off = _at("function f(a) {\n  |\n    g(a);\n  }\n}\n", "javascript")
    checker = whole_checker(snap, off)
    assert not checker.is_whole("let x = 1;")
    assert checker.is_whole("if (a) {")
