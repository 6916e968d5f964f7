"""A suggestion meets the closers an editor put right of the cursor (auto-closing brackets
and quotes): when it writes them again it takes them over, and may go on past them; when
it does not, it fits before them."""

from __future__ import annotations

import pytest

from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.language.folders import language_config
from lsp_copilot.language.trigger import completion_mode
from lsp_copilot.pipeline.prompt import cursor_at
from lsp_copilot.postprocess.brackets import covered
from lsp_copilot.postprocess.checks import PostProcessor, Target

MARK = "|"

LANGUAGES = {"python": ("python", "py"), "typescript": ("typescript", "ts"),
             "rust": ("rust", "rs"), "go": ("go", "go")}


def _processor(document: str, language: str = "python") -> PostProcessor:
    """A post-processor at the ``|`` of ``document``, as the pipeline builds it."""
    lang_id, ext = LANGUAGES[language]
    at = document.index(MARK)
    text = document[:at] + document[at + 1:]
    store = DocumentStore()
    uri = f"file:///w/doc.{ext}"
    store.open(uri, lang_id, 1, text)
    snapshot = store.snapshot(uri)
    offset = len(text[:at].encode())
    mode = completion_mode(snapshot, offset)
    return PostProcessor(Target(mode, cursor_at(snapshot, offset), snapshot, offset))


def _accepted(document: str, answer: str, language: str = "python") -> str:
    """The line the editor has after accepting what the checks left of ``answer``."""
    post = _processor(document, language)
    text = post.run(answer).text
    at = document.index(MARK)
    rest = document[at + 1:]
    line = document[:at].rsplit("\n", 1)[-1] + text + rest[post.covered(text):]
    return line.split("\n", 1)[0] if "\n" not in text else line


@pytest.mark.parametrize(("document", "answer", "line"), [
    # The answer writes the closer the editor inserted: one `)` after accepting.
    ("x = max(|)\n", "a, b)", "x = max(a, b)"),
    # ... and goes on past it: nothing of it is lost.
    ("y = len(|)\n", "items) + 1", "y = len(items) + 1"),
    # Nested pairs the editor closed as the user typed both openers.
    ("z = f(g(|))\n", "1), 2)", "z = f(g(1), 2)"),
    # A string the editor closed: the answer ends it and the call.
    ('print("|")\n', 'hello, world")', 'print("hello, world")'),
    # The answer does not write the closer: it fits before it.
    ("x = max(|)\n", "a, b", "x = max(a, b)"),
])
def test_python_lines_after_accepting(document: str, answer: str, line: str) -> None:
    assert _accepted(document, answer) == line


def test_typescript_condition_and_call() -> None:
    assert _accepted("function f(a: number) {\n  if (|)\n}\n", "a > 0) return;",
                     "typescript") == "  if (a > 0) return;"
    assert _accepted("const n = Math.max(|);\n", "a, b)", "typescript") \
        == "const n = Math.max(a, b);"


def test_rust_call_with_the_closer_and_more() -> None:
    document = "fn f(v: Vec<u32>) -> usize {\n    let n = v.len(|)\n}\n"
    # `len()` is whole with nothing in it; the answer that closes and goes on is kept.
    assert _accepted(document, ") + 1;", "rust") == "    let n = v.len() + 1;"


@pytest.mark.parametrize(("line_after", "answer", "count"), [
    (")", "a, b)", 1),
    (")", "a) + b(c)", 1),  # b(c) pairs its own brackets
    ("))", "1), 2)", 2),
    (")", "a))", 1),  # writes the run and closes more: the run is taken over
    ("]", "a)", 0),  # a closer the run does not have: not taken over
    (")", "a", 0),
    (", b)", "a)", 0),  # the user's own text right of the cursor: never taken over
    ("", "a)", 0),
])
def test_what_is_covered(line_after: str, answer: str, count: int) -> None:
    post = _processor(f"x = f(|{line_after}\n")
    cursor = post.target.cursor
    assert cursor.line_after == line_after
    assert covered(answer, cursor, language_config("python")) == count


def test_a_string_is_covered_only_when_the_answer_closes_it() -> None:
    post = _processor('s = "|"\n')
    assert post.covered('abc"') == 1
    assert post.covered("abc") == 0
    assert post.covered('a\\"b"') == 1  # an escaped quote does not end the string


def test_the_whole_check_reads_the_line_as_accepted() -> None:
    """Without taking the `)` over, `len(items) + 1)` would not parse: the answer was cut
    to `items`, losing ` + 1`."""
    post = _processor("y = len(|)\nprint(y)\n")
    got = post.run("items) + 1")
    assert got.text == "items) + 1"
    assert post.covered(got.text) == 1
    assert post.whole is not None and post.whole.insertion.data(got.text).startswith(
        b"y = len(items) + 1\n")
