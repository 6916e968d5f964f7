"""A statement the model spread over lines for its brackets is offered on one line where it
fits the file's width; elsewhere the model's layout stays."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.language.trigger import Mode, completion_mode
from lsp_copilot.pipeline.prompt import cursor_at, line_width
from lsp_copilot.postprocess.checks import finalize
from lsp_copilot.postprocess.whole import first_line_is_whole

METHOD = ("class P:\n    def lrem(self, name, value):\n        {}|\n\n"
          "    def x(self):\n        pass\n")


def _shown(document: str, raw: str, language: str = "python",
           mode: Mode = "single-line") -> tuple[str, bool]:
    """What a typing pause at ``|`` shows for ``raw``, and whether the measure of a pause
    counts it whole. ``mode``: the one the cursor must be in."""
    cut = document.index("|")
    text = document.replace("|", "")
    store = DocumentStore()
    store.open("file:///w", language, 1, text)
    snapshot = store.snapshot("file:///w")
    offset = len(text[:cut].encode())
    assert completion_mode(snapshot, offset) == mode
    cursor = cursor_at(snapshot, offset)
    if mode == "multi-line":  # (the raw answers here carry their first line's indentation)
        cursor = replace(cursor, prompt_dropped_indent="")
    shown = finalize(raw, mode, cursor, snapshot, offset)
    return shown, bool(shown) and first_line_is_whole(snapshot, offset, shown)


@pytest.mark.parametrize(("typed", "raw", "expected"), [
    # The model's layout of the call above it, for a call that fits on one line.
    ("self.", '_items.append(\n            ("lrem", (name, value), {})\n        )\n'
     "        return self\n", '_items.append(("lrem", (name, value), {}))'),
    # The typed line ends in an opener and the model goes on on the next line.
    ("self._items.append((", '\n            "lrem", (name, value),\n            {},\n'
     "        ))\n", '"lrem", (name, value), {}))'),
    # The next line after a finished one.
    ("x = 1", '\n        self._items.append(\n            (name, value)\n        )\n',
     "\n        self._items.append((name, value))"),
    # A trailing comma is layout in a call or a list, but makes a tuple of one.
    ("t = foo(", "\n            a,\n        )\n", "a)"),
    ("t = (", "\n            a,\n        )\n", "a,)"),
    ("t = [", "\n            a,\n        ]\n", "a]"),
    ('return {', '\n            "a": 1,\n            "b": 2,\n        }\n', '"a": 1, "b": 2}'),
])
def test_a_spread_statement_that_fits_comes_on_one_line(typed: str, raw: str,
                                                        expected: str) -> None:
    shown, whole = _shown(METHOD.format(typed), raw)
    assert shown == expected
    assert whole  # the typed line and the first line shown are a whole statement


@pytest.mark.parametrize(("typed", "raw"), [
    # Too wide for the file (its longest line sets the width, 79 at least).
    ("self.", "_items.append(\n            " + '"' + "x" * 70 + '",\n        )\n'),
    # A comment, or a string over lines, inside: joining would change what it means.
    ("t = foo(", "\n            a,  # the first\n            b,\n        )\n"),
    ("t = foo(", '\n            """a\n            b""",\n        )\n'),
])
def test_a_statement_that_cannot_be_one_line_keeps_its_lines(typed: str, raw: str) -> None:
    shown, _ = _shown(METHOD.format(typed), raw)
    assert "\n" in shown.strip("\n")


def test_braces_that_open_a_block_are_not_joined() -> None:
    doc = "func f(xs []int) int {\n\tt := 0\n\tfor |\n\treturn t\n}\n"
    raw = " _, x := range xs {\n\t\tt += x\n\t}\n\treturn t\n"
    shown, _ = _shown(doc, raw, "go")
    assert shown == "_, x := range xs {\n\t\tt += x\n\t}"


def test_the_width_is_the_files_longest_line_within_bounds() -> None:
    assert line_width(b"x = 1\n") == 79
    assert line_width(b"x = 1\n" + b"y" * 95 + b"\n") == 95
    assert line_width(b"u = '" + b"h" * 300 + b"'\n") == 100
    # Only the lines near the cursor are read (every keystroke builds a cursor).
    far = b"x = 1\n" * 5000 + b"y" * 95 + b"\n"
    assert line_width(far, 0) == 79 and line_width(far, len(far)) == 95


def test_a_signature_the_model_spreads_over_lines_comes_as_one_header() -> None:
    """``def f(`` typed, the model writes one parameter per line: the header that fits on
    one line is offered alone (its body comes after Enter), and counts whole."""
    doc = "import os\n\n\ndef init(|\n\n\ndef other():\n    pass\n"
    raw = "\n    target: str,\n    force: bool = False,\n) -> None:\n    pass\n"
    assert _shown(doc, raw) == ("target: str, force: bool = False) -> None:", True)


def test_a_multi_line_answer_gets_its_first_statement_on_one_line() -> None:
    """On an empty line the answer may be several statements: the first one, spread only
    for its brackets, is put on one line; the lines after it stay as they are."""
    raw = ('self._items.append(\n            ("lrem", (name, value), {})\n        )\n'
           "        return self\n")
    shown, whole = _shown(METHOD.replace("{}|", "|"), raw, mode="multi-line")
    assert shown == 'self._items.append(("lrem", (name, value), {}))\n        return self'
    assert whole


DEF = "import os\n\n\ndef out_dir(root):{}\n    |\n    return root\n"


@pytest.mark.parametrize(("document", "raw", "expected"), [
    # At the end of the header: the next line, a docstring the model laid out over three.
    (DEF.format("|").replace("    |\n", ""),
     '\n    """\n    The folder the reports go to.\n    """\n    if root is None:\n',
     '\n    """The folder the reports go to."""'),
    # On the empty line under the header.
    (DEF.format(""), '"""\n    The folder the reports go to.\n    """\n    if root:\n',
     '"""The folder the reports go to."""'),
    # The text on the opener's line, the closer alone.
    (DEF.format(""), "'''The folder the reports go to.\n    '''\n",
     "'''The folder the reports go to.'''"),
])
def test_a_docstring_of_one_line_of_text_comes_on_one_line(document: str, raw: str,
                                                           expected: str) -> None:
    """A lone opening quote is never a whole line: the docstring it opens is taken whole,
    and one line of text comes as a one-line docstring, which a pause counts whole."""
    assert _shown(document, raw) == (expected, True)


@pytest.mark.parametrize("raw", [
    # A summary and a description: the model's layout stays.
    '"""\n    The folder.\n\n    None for the default.\n    """\n',
    # Too wide for the file.
    '"""\n    ' + "x" * 90 + '\n    """\n',
])
def test_a_docstring_of_more_text_keeps_its_lines(raw: str) -> None:
    shown, whole = _shown(DEF.format(""), raw)
    assert shown.count("\n") >= 2 and not whole


def test_a_lone_quote_not_under_a_header_may_close_a_docstring() -> None:
    """Only right under a block header does a quote alone start a docstring."""
    doc = 'x = 1\n|\ny = 2\n'
    shown, whole = _shown(doc, '"""\nmore text\n"""\n')
    assert not whole and shown in ("", '"""')


def test_a_docstring_that_starts_a_block_comes_on_one_line_before_its_body() -> None:
    """On the empty line under a header with room for a block (multi-line): the
    docstring of one line of text is put on one line, the body after it stays."""
    raw = '"""\n    The folder.\n    """\n    return root\n'
    shown, whole = _shown("def out_dir(root):\n    |\n\n\nx = 1\n", raw, mode="multi-line")
    assert shown == '"""The folder."""\n    return root'
    assert whole
