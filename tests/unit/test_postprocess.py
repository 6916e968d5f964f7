from lsp_copilot.documents.store import DocumentStore, Snapshot
from lsp_copilot.language.folders import LanguageConfig
from lsp_copilot.language.trigger import Mode, completion_mode
from lsp_copilot.pipeline.prompt import cursor_at
from lsp_copilot.postprocess import cleanup
from lsp_copilot.postprocess.checks import finalize
from lsp_copilot.postprocess.cursor_text import Cursor
from lsp_copilot.postprocess.stop import continuation_end, stop_rule


def _at(text: str) -> tuple[Snapshot, int]:
    cut = text.index("|")
    text = text.replace("|", "")
    store = DocumentStore()
    store.open("file:///w.py", "python", 1, text)
    return store.snapshot("file:///w.py"), len(text[:cut].encode())


def test_single_line_stops_at_first_newline() -> None:
    rule = stop_rule("single-line", Cursor("x = ", ""))
    assert rule("foo(1") is None
    assert rule("foo(1)\nbar()") == len("foo(1)")
    assert finalize("foo(1)\nbar()", "single-line", Cursor("x = ", "")) == "foo(1)"


def test_a_docstring_is_offered_whole_or_not_at_all() -> None:
    doc = '"""Run the scan.\n    More.\n    """\n    x = 1\n'
    # At the end of a header, as the next line.
    header = stop_rule("single-line", Cursor("def f(a):", ""))
    assert header("\n    " + doc[:20]) is None  # still open
    assert header("\n    " + doc) == len("\n    " + doc) - len("\n    x = 1\n")
    # On the empty line under it.
    empty = stop_rule("single-line", Cursor("    ", ""))
    assert empty(doc) == len(doc) - len("\n    x = 1\n")
    assert empty('"""Run the scan."""\n    x') == len('"""Run the scan."""')
    # A quote alone may close one (the whole check judges it): that line only.
    assert empty('"""\n    x = 1\n') == 3


def test_a_statement_over_several_lines_goes_on_to_the_line_that_closes_it() -> None:
    """``raise ValueError(`` then its arguments: the answer ends where the bracket closes,
    not at the first line's end, where it would be a fragment the whole check drops."""
    raised = 'raise ValueError(\n        "no target",\n    )\n    x = 1\n'
    rule = stop_rule("single-line", Cursor("    ", ""))
    assert rule(raised[:30]) is None  # the bracket is still open
    assert rule(raised) == raised.index("\n    x")
    snap, off = _at("def f(t):\n    |\n")
    cursor = cursor_at(snap, off)
    # (It fits on one line, so it is offered on one: see the one_line tests.)
    assert finalize(" " + raised, "single-line", cursor, snap, off) == (
        'raise ValueError("no target")')
    # The same as the next line after a finished one, and after a typed opener, whether
    # the model goes on along the line or on the next one.
    after = stop_rule("single-line", Cursor("    x = 1", ""))
    assert after("\n    " + raised) == len("\n    " + raised) - len("\n    x = 1\n")
    opener = stop_rule("single-line", Cursor("    raise ValueError(", ""))
    tail = '"no target",\n        "more",\n    )\n    x = 1\n'
    assert opener(tail) == tail.index("\n    x")
    below = '\n        "no target",\n    )\n    x = 1\n'
    assert opener(below) == below.index("\n    x")
    listed = stop_rule("single-line", Cursor('    x = ["a", ', ""))
    assert listed('\n"b",\n"c"]\n') == len('\n"b",\n"c"]')
    # Not when the file already goes on under the line (the rest of an import list).
    filled = stop_rule("single-line", Cursor("from a import", "", suffix_lines="    B,\n)\n"))
    assert filled(" (\n    A,\n)\n") == len(" (")
    # Brackets in strings and comments do not count; one that never closes is cut.
    python = stop_rule("single-line", cursor)  # the language's comment marker
    assert python('x = f(")")  # (\ny') == len('x = f(")")  # (')
    endless = "x = f(\n" + "    1,\n" * 20
    assert rule(endless) == len("x = f(")
    # A signature over several lines is a header: still the first line, dropped whole.
    assert rule("def g(\n    a,\n) -> int:\n    return a\n") == len("def g(")
    # Where the generation after the answer stops: the statement's closing line.
    answer = "    y = 1"
    assert continuation_end(answer + "\n" + raised, len(answer)) == len(
        answer + "\n" + raised) - len("\n    x = 1\n")
    header = answer + "\ndef g(\n    a,\n) -> int:\n    return a\n"
    assert continuation_end(header, len(answer)) == len(header) - 1


def test_newline_first_after_a_finished_line_suggests_the_next_line() -> None:
    """At the end of a line the user finished, the model's newline starts the next line
    (Copilot shows it below the cursor); one line, and none the file already has."""
    cursor = Cursor("    x = f()", "")
    rule = stop_rule("single-line", cursor)
    assert rule("\n    return") is None  # the next line is still being written
    assert rule("\n    return x\n    y") == len("\n    return x")
    assert finalize("\n    return x\nfoo()", "single-line", cursor) == "\n    return x"
    has_it = Cursor("    x = f()", "", suffix_lines="    return x\n")
    assert finalize("\n    return x", "single-line", has_it) == ""
    # A block header as the next line comes with its body.
    assert rule("\n    if x:\n        return 1\n") is None  # the body may go on
    assert finalize("\n    if x:\n        return 1\n    y = 2", "single-line", cursor) == (
        "\n    if x:\n        return 1")
    # The next line may close a bracket a line above opened; the syntax check judges it.
    snap, off = _at('x = {\n    "a": 1,|\n')
    assert finalize("\n}", "single-line", cursor_at(snap, off), snap, off) == "\n}"
    snap, off = _at('def f():\n    x = 1|\n')
    assert finalize("\n}", "single-line", cursor_at(snap, off), snap, off) == ""
    # In the middle of a line a newline still means nothing to add there.
    assert finalize("\n    return x", "single-line", Cursor("x = f(", ")")) == ""


def test_after_a_typed_space_the_model_may_leave_the_space_out() -> None:
    """The prompt ends before a space the user typed. After a comma the model's text
    without that space reads the same after it; after a word or an operator it would have
    gone on with it (``num_tokens`` + ``_per_head``, ``*`` + ``*2``): no suggestion."""
    def answer(typed: str, raw: str) -> str:
        snap, off = _at(typed + "|")
        return finalize(raw, "single-line", cursor_at(snap, off), snap, off)

    assert answer('WEEKEND = ["saturday", ', '"sunday"]') == '"sunday"]'
    assert answer('WEEKEND = ["saturday", ', ' "sunday"]') == '"sunday"]'
    assert answer("print(a, ", "b)") == "b)"
    assert answer("num_tokens ", "_per_head = 1") == ""
    assert answer("num_tokens ", " = 1") == "= 1"
    assert answer("y = x * ", "*2") == ""
    assert answer("y = x * ", "2") == "2"


def test_a_file_header_of_the_prompt_ends_the_answer() -> None:
    """Seen with SmolLM2 at the start of an empty line: ``# pkg/client.py``, the header
    the prompt names the current file with, written back as if a new file began."""
    headers = frozenset({"# pkg/client.py", "# pkg/base.py"})
    cursor = Cursor("", "", prompt_headers=headers)
    rule = stop_rule("single-line", cursor)
    assert rule("# pkg/client") is None  # not a finished line yet
    assert rule("# pkg/client.py\n") == 0
    assert finalize("# pkg/client.py\nimport os", "single-line", cursor) == ""
    multi = Cursor("    ", "", prompt_dropped_indent="    ", prompt_headers=headers)
    assert finalize("    x = 1\n    y = 2\n# pkg/base.py\nclass Base:", "multi-line",
                    multi) == "x = 1\n    y = 2"
    # Any other comment is the model's to write.
    assert finalize("# pkg/other.py", "single-line", cursor) == "# pkg/other.py"


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


def test_a_docstrings_blank_lines_and_dedented_text_do_not_end_the_block() -> None:
    cursor = Cursor("        ", "", prompt_dropped_indent="        ")
    text = ('        """Return the result.\n\n        More text,\n  even dedented.\n        """\n'
            "        return self.result\n\n    def other(self):\n        pass\n")
    assert finalize(text, "multi-line", cursor) == (
        '"""Return the result.\n\n        More text,\n  even dedented.\n        """\n'
        "        return self.result")
    # The same lines outside a string: the blank line then a sibling is a new item.
    plain = text.replace('"""', "#", 1).replace('        """\n', "")
    assert finalize(plain, "multi-line", cursor) == "#Return the result."


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


# -- rules for which no real output was collected yet: hand-written inputs ---------------

def _doc(text: str, language_id: str) -> tuple[Snapshot, int, Cursor, Mode]:
    offset_chars = text.index("|")
    text = text.replace("|", "")
    store = DocumentStore()
    store.open("file:///doc", language_id, 1, text)
    snapshot = store.snapshot("file:///doc")
    offset = len(text[:offset_chars].encode())
    return snapshot, offset, cursor_at(snapshot, offset), completion_mode(snapshot, offset)


def test_block_end_keyword_found_by_the_tree() -> None:
    # `end` at the body's own indentation: the dedent rule cannot see the block end.
    snap, off, cursor, mode = _doc("items.each do\n  |\nend\n", "ruby")
    assert mode == "multi-line"
    raw = " x = 1\n  y = 2\n  end\n  items.map do\n    3\n"
    assert finalize(raw, mode, cursor, snap, off) == "x = 1\n  y = 2"
    assert finalize(raw, mode, cursor) != "x = 1\n  y = 2"  # without the tree


def test_closing_brace_the_suffix_has_is_cut() -> None:
    snap, off, cursor, mode = _doc("function f() {\n  |\n}\n", "javascript")
    raw = " return 1;\n  }\n  function g() {\n"
    assert finalize(raw, mode, cursor, snap, off) == "return 1;"


def test_a_closing_brace_the_suffix_lacks_is_kept() -> None:
    """A one-line body's closer on the hole's own line (``throw e; }``): the suffix has no
    `}` for that block, so the answer's is kept (cut, the file would lose it)."""
    doc = ("class A {\n    @Override public boolean complete(T value) {\n"
           "        throw new E(); }\n    @Override public boolean cancel(boolean x) {\n"
           "        |\n    @Override public void obtrude(T value) {\n"
           "        throw new E(); }\n}\n")
    snap, off, cursor, mode = _doc(doc, "java")
    assert mode == "multi-line"
    assert finalize(" throw new E(); }", mode, cursor, snap, off) == "throw new E(); }"


def test_brackets_against_the_suffix() -> None:
    # (The prompt ends before the typed space: the model writes it first.)
    snap, off, cursor, mode = _doc("x = foo(a, |)\n", "python")
    assert finalize(" b, c)", mode, cursor, snap, off) == "b, c"  # the suffix closes it
    snap, off, cursor, mode = _doc("x = foo(a, |\n", "python")
    assert finalize(" b, c))", mode, cursor, snap, off) == "b, c)"  # one closer too many
    snap, off, cursor, mode = _doc("x = [a, |]\n", "python")
    assert finalize(" b)]", mode, cursor, snap, off) == "b"  # mismatched
    snap, off, cursor, mode = _doc("x = [a, |\n", "python")
    assert finalize(" f(')', b)]", mode, cursor, snap, off) == "f(')', b)]"  # in a string
    assert finalize(" b)]", mode, cursor, snap, off) == ""  # `x = [a, b` is no statement
    # In an f-string's replacement field the typed line's brace is in the string: the
    # answer closing it is judged by the parser, not cut as a closer of nothing.
    snap, off, cursor, mode = _doc('data = f"data: {json.|\n', "python")
    assert finalize('dumps(d)}".encode()', mode, cursor, snap, off) == 'dumps(d)}".encode()'
    assert finalize('dumps(d)}}".encode(', mode, cursor, snap, off) == ""


def test_a_line_inside_brackets_the_lines_above_opened_may_close_them() -> None:
    # A signature spread over lines, after its last item and Enter: the closer is the
    # line the user types next, not a bracket that closes nothing.
    head = ("def scan(\n    provider: str = 'aws',\n    categories: Annotated[\n"
            "        Optional[str], typer.Option('--categories')\n        |\n")
    snap, off, cursor, mode = _doc(head, "python")
    assert cursor.open_above == ("(", "[")
    assert finalize(" ] = None,", mode, cursor, snap, off) == "] = None,"
    assert finalize(" ) -> None:", mode, cursor, snap, off) == ""  # mismatched: `[` is open
    # The file already closes it below: a second closer is cut.
    snap, off, cursor, mode = _doc(head + "    ] = None,\n) -> None:\n    pass\n", "python")
    assert finalize(" ] = None,", mode, cursor, snap, off) == ""
    # A docstring's brackets and a finished statement above leave nothing open.
    snap, off, cursor, mode = _doc('def f():\n    """(see\n    g)."""\n    x = h(\n'
                                   '        1)\n    |\n', "python")
    assert cursor.open_above == ()
    # A function's body brace is no bracket a line of it closes.
    snap, off, cursor, mode = _doc("function f() {\n  g(a,\n    b,\n    |\n}\n", "javascript")
    assert cursor.open_above == ("(",)
    assert finalize(" c);", mode, cursor, snap, off) == "c);"
    assert finalize(" }", mode, cursor, snap, off) == ""


def test_degenerate_repetition() -> None:
    snap, off, cursor, mode = _doc("def f(self):\n    |\n", "python")
    raw = " self.a = 1\n    self.b = 2\n    self.b = 2\n    self.b = 2\n"
    assert finalize(raw, mode, cursor, snap, off) == "self.a = 1\n    self.b = 2"
    snap, off, cursor, mode = _doc("x = |\n", "python")
    assert finalize(" self.x.x.x.x.x.x", mode, cursor, snap, off) == "self.x"
    assert finalize(" [0, 0, 0, 0, 0, 0]", mode, cursor, snap, off) == "[0, 0, 0, 0, 0, 0]"


def test_repeats_of_the_line_above_and_of_the_suffix() -> None:
    snap, off, cursor, mode = _doc("    total = compute(a)\n    total = |\n", "python")
    assert finalize("compute(a)", mode, cursor, snap, off) == ""
    # One block out, the same statement is the next one (not a repetition).
    snap, off, cursor, mode = _doc(
        "def f(a):\n    try:\n        return g(a)\n    except KeyError:\n"
        "        return None\n    |\n", "python")
    assert finalize(" return None", mode, cursor, snap, off) == "return None"
    snap, off, cursor, mode = _doc("def f(a):\n    |\n    return total\n", "python")
    raw = " total = a + 1\n    return total\n"
    assert finalize(raw, mode, cursor, snap, off) == "total = a + 1"


def test_a_multi_line_answer_stops_before_it_retypes_the_suffix() -> None:
    snap, off, cursor, mode = _doc(
        "def f(a):\n    |\n    b = g(a)\n    c = h(b)\n    return c\n", "python")
    # The model wrote a line of its own, then the suffix's lines with one changed.
    raw = " a = a.strip()\n    b = g(a)  \n    c = h(b)\n    return c\n"
    assert cleanup.cut_before_suffix(raw, cursor) == " a = a.strip()"
    raw = " a = a.strip()\n    x = 1\n    c = h(b)\n    return c\n"  # two in a row
    assert cleanup.cut_before_suffix(raw, cursor) == " a = a.strip()\n    x = 1"
    raw = " a = a.strip()\n    x = 1\n    return c\n"  # one line alone is no repeat
    assert cleanup.cut_before_suffix(raw, cursor) == raw
    assert finalize(" a = a.strip()\n    b = g(a)\n", mode, cursor, snap, off) == "a = a.strip()"


def test_body_written_one_level_too_deep_is_shifted() -> None:
    snap, off, cursor, mode = _doc("def f(a):\n    |\n", "python")
    raw = "     if a:\n            return 1\n"  # 4 columns too deep, kept relative
    assert finalize(raw, mode, cursor, snap, off) == "if a:\n        return 1"


def test_the_next_line_written_after_an_answer_is_whole_code() -> None:
    answer = "    y = 1"
    start = len(answer)
    assert continuation_end(answer + "\n    return", start) is None
    assert continuation_end(answer + "\n\n    return y\n", start) == start + 14
    text = answer + "\n    if y:\n        return y\n"
    assert continuation_end(text[:-1], start) is None  # a header waits for its body
    assert continuation_end(text, start) == len(text) - 1
    # A header whose body opens a block goes on to that block's first line.
    nested = "    return y\n\n\ndef g(v):\n    if v:\n        return v\n"
    assert continuation_end(nested, 12) == len(nested) - 1
    # A comment is passed over, with the comment marker of the language only.
    commented = answer + "\n    # why\n    z = y\n"
    assert continuation_end(commented, start, LanguageConfig(comment="#")) == len(commented) - 1
    assert continuation_end(commented, start) == start + 10
    # A docstring is taken whole: its closing line ends it.
    doc = answer + '\n    """Doc\n    more.\n    """\n    z = 2\n'
    assert continuation_end(doc, start) == doc.index('"""\n    z') + 3
    one_line = answer + '\n    """Doc."""\n    z = 2\n'
    assert continuation_end(one_line, start) == one_line.index("\n    z")
