from lsp_copilot.postprocess import Cursor, finalize, stop_rule


def test_single_line_stops_at_first_newline() -> None:
    rule = stop_rule("single-line", Cursor("x = ", ""))
    assert rule("foo(1") is None
    assert rule("foo(1)\nbar()") == len("foo(1)")
    assert finalize("foo(1)\nbar()", "single-line", Cursor("x = ", "")) == "foo(1)"


def test_newline_first_after_code_means_nothing() -> None:
    assert finalize("\n    return x", "single-line", Cursor("x = f()", "")) == ""


def test_blank_line_start_skips_leading_newlines_and_indent() -> None:
    # The prompt ended at the line start; the model wrote the indentation itself.
    cursor = Cursor("    ", "", prompt_dropped_indent="    ")
    out = finalize("\n    total = 0\n    for x in xs:\n        total += x\nprint(1)",
                   "multi-line", cursor)
    # The first line loses the indentation the cursor already has; the rest keep theirs,
    # and the dedented `print(1)` ends the block.
    assert out == "total = 0\n    for x in xs:\n        total += x"


def test_multi_line_stops_at_dedent() -> None:
    cursor = Cursor("    ", "", prompt_dropped_indent="    ")
    text = "    a = 1\n    return a\n\ndef other():\n    pass\n"
    out = finalize(text, "multi-line", cursor)
    assert out == "a = 1\n    return a"


def test_multi_line_first_line_dedent_gives_nothing() -> None:
    cursor = Cursor("    ", "", prompt_dropped_indent="    ")
    assert finalize("def next_function():\n    pass\n", "multi-line", cursor) == ""


def test_sibling_after_blank_line_is_a_new_item() -> None:
    cursor = Cursor("", "")
    text = "def a():\n    return 1\n\ndef b():\n    return 2\n"
    assert finalize(text, "multi-line", cursor) == "def a():\n    return 1"


def test_repeating_the_suffix_is_dropped() -> None:
    assert finalize("x)", "single-line", Cursor("print(", "x)")) == ""
    assert finalize("a + b)", "single-line", Cursor("print(", ")")) == "a + b"


def test_whitespace_only_is_empty() -> None:
    assert finalize("   \n  ", "multi-line", Cursor("", "")) == ""
    assert finalize("anything", "none", Cursor("", "")) == ""
