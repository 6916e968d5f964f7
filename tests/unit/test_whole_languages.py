"""Where a block's body already waits below the cursor line, only its header fits, in every
language; an explicit request on a line of code is not answered with a comment alone.

Each snippet has a hole (``|``) on the header line of a block whose body and closer are
still below, as a real file has it when the header line is cut out. tree-sitter parses
most plain statements there in a brace language (the body's closer pairs with an outer
block and the error is far below, where the file without the line was broken too), so the
rule is the whole check's, from language.json (``close``, ``brackets``)."""

from __future__ import annotations

import pytest

from lsp_copilot.documents.store import DocumentStore, Snapshot
from lsp_copilot.language.folders import language_config
from lsp_copilot.pipeline.prompt import cursor_at
from lsp_copilot.postprocess.checks import PostProcessor, Target
from lsp_copilot.postprocess.whole import body_closer, opens_for, whole_checker


def _at(text: str, language_id: str) -> tuple[Snapshot, int]:
    cut = text.index("|")
    text = text.replace("|", "")
    store = DocumentStore()
    store.open("file:///w", language_id, 1, text)
    return store.snapshot("file:///w"), len(text[:cut].encode())


# language id, document, header that fits, plain statements and comments that do not
CASES = [
    ("go",
     "package p\n\nfunc f(w *bufio.Writer, state *S, i int) error {\n"
     "\tif !state.ok {\n\t\treturn nil\n\t}\n\t|\n\t\treturn err\n\t}\n\treturn nil\n}\n",
     "if err := w.WriteByte('\"'); err != nil {",
     ["state.update(i)", "// If we have to have a quoted field then we need to"]),
    ("rust",
     "fn wait(dur: Duration, start: Instant) -> Option<()> {\n    let now = 1;\n"
     "    |\n        Some(t) => t,\n        None => return None,\n    };\n    Some(())\n}\n",
     "let timeout = match dur.checked_sub(start.elapsed()) {",
     ["state.update(i)", "// the time left"]),
    ("javascript",
     "function send(res, body) {\n  const n = 1;\n  |\n    res.writeHead(200);\n  }\n"
     "  res.end(body);\n}\n",
     "if (!res.headersSent) {",
     ["res.end(body)", "// headers first"]),
    ("typescript",
     "export function send(res: Response, body: string): void {\n  const n = 1;\n  |\n"
     "    res.writeHead(200);\n  }\n  res.end(body);\n}\n",
     "if (!res.headersSent) {",
     ["res.end(body)", "// headers first"]),
    ("java",
     "class A {\n    int f(int[] xs) {\n        int total = 0;\n        |\n"
     "            total += x;\n        }\n        return total;\n    }\n}\n",
     "for (int x : xs) {",
     ["total = 0", "// add them up"]),
    ("cpp",
     "int f(std::vector<int>& xs) {\n    int total = 0;\n    |\n        total += x;\n"
     "    }\n    return total;\n}\n",
     "for (int x : xs) {",
     ["g(xs)", "// add them up"]),
    ("python",
     "def f(items):\n    total = 0\n    |\n        total += x\n    return total\n",
     "for x in items:",
     ["total = 1", "# add them up"]),
]


@pytest.mark.parametrize(("language", "doc", "header", "wrong"), CASES,
                         ids=[c[0] for c in CASES])
def test_over_a_waiting_body_only_its_header_fits(language: str, doc: str, header: str,
                                                   wrong: list[str]) -> None:
    snap, off = _at(doc, language)
    checker = whole_checker(snap, off)
    assert checker.is_whole(header)
    for text in wrong:
        verdict = checker.check(text)
        assert verdict is not None and not verdict.whole, (language, text)


def test_a_header_typed_in_part_is_completed_not_replaced() -> None:
    snap, off = _at("function f(res) {\n  const n = 1;\n  if |\n    g();\n  }\n}\n",
                    "javascript")
    checker = whole_checker(snap, off)
    assert checker.is_whole("(!res.headersSent) {")
    assert not checker.is_whole("(!res.headersSent) g();")


@pytest.mark.parametrize(("language", "doc", "text"), [
    # deeper lines that go on the cursor line's statement, then a sibling: no body
    ("javascript", "function f(xs) {\n  const n = 1;\n  const ys = |\n    .map((x) => x + 1)\n"
     "    .filter(Boolean);\n  return ys;\n}\n", "xs"),
    # Go's case clause: its body ends at the switch's closer, on the case's indentation
    ("go", "package p\n\nfunc f(x int) int {\n\tswitch x {\n\t|\n\t\treturn 1\n\t}\n"
     "\treturn 0\n}\n", "case 1:"),
    # a call spread over lines, closed at the cursor's indentation by `)`
    ("javascript", "function f(a, b) {\n  const n = 1;\n  |\n    a,\n    b,\n  );\n}\n",
     "g("),
])
def test_what_else_may_stand_over_deeper_lines(language: str, doc: str, text: str) -> None:
    snap, off = _at(doc, language)
    assert whole_checker(snap, off).is_whole(text)


def test_a_closer_the_line_does_not_open_does_not_fit() -> None:
    snap, off = _at("function f(a, b) {\n  const n = 1;\n  |\n    a,\n    b,\n  );\n}\n",
                    "javascript")
    assert not whole_checker(snap, off).is_whole("if (a) {")


def test_body_closer_reads_the_lines_below() -> None:
    rules = language_config("rust")
    data = b"fn f() {\n    |\n        x\n    };\n}\n".replace(b"|", b"")
    start = data.index(b"\n") + 1
    assert body_closer(data, start, data.index(b"\n", start), rules) == "}"
    sibling = b"fn f() {\n    a\n        .b();\n    c();\n}\n"
    start = sibling.index(b"\n") + 1
    assert body_closer(sibling, start, sibling.index(b"\n", start), rules) is None
    assert body_closer(data, start, data.index(b"\n", start), language_config("python")) is None
    assert opens_for("    let x = match y {", "}", rules)
    assert not opens_for("    let x = f(y);", "}", rules)


def test_ruby_headers_need_no_opener() -> None:
    """`end` closes a block whose header ends with no opener (``if x``): the language's
    ``compound_header`` says which lines are headers."""
    snap, off = _at("def f(x)\n  y = 1\n  |\n    puts x\n  end\nend\n", "ruby")
    checker = whole_checker(snap, off)
    assert checker.is_whole("if x > 1")
    assert not checker.is_whole("puts y")


def test_an_explicit_request_is_not_answered_with_a_comment_alone() -> None:
    doc = "function f(a) {\n  const n = 1;\n  |\n  return n;\n}\n"
    snap, off = _at(doc, "javascript")
    assert not whole_checker(snap, off).is_whole("// add one")
    assert whole_checker(snap, off).is_whole("// add one\n  const m = n + 1;")
    # At a typing pause a comment may be what the user is about to write.
    assert whole_checker(snap, off, typing=True).is_whole("// add one")
    # The user is writing the comment: the answer goes on with it.
    snap, off = _at("function f(a) {\n  // add |\n  return a;\n}\n", "javascript")
    assert whole_checker(snap, off).is_whole("one to it")
    snap, off = _at("def f(a):\n    n = 1\n    |\n    return n\n", "python")
    assert not whole_checker(snap, off).is_whole("# add one")
    assert whole_checker(snap, off).is_whole("n += 1  # add one")



def test_after_typed_code_a_comment_ends_the_line() -> None:
    """A table kept in comments (the JDK's ASCII.java): the code is typed, the comment
    is the rest of the line."""
    doc = ("class A {\n    static final int[] T = {\n        LOWER+31,   /* 76 v */\n"
           "        LOWER+32,   |\n        LOWER+33,   /* 78 x */\n    };\n}\n")
    snap, off = _at(doc, "java")
    assert whole_checker(snap, off).is_whole("/* 77 w */")
    # Nothing typed but the indentation: code was asked for, as before.
    doc = "class A {\n    int f(int n) {\n        |\n        return n;\n    }\n}\n"
    snap, off = _at(doc, "java")
    assert not whole_checker(snap, off).is_whole("// add one")


@pytest.mark.parametrize(("language", "doc", "raw", "header"), [
    # `if (` typed, the editor closed it: `)` right of the cursor, the body yet to come
    ("typescript", "function f(xs: number[]) {\n  const i = xs.indexOf(1);\n  if (|)\n}\n",
     "i >= 0) {\n    return xs[i];", "i >= 0) {"),
    # a method's signature typed in part, the editor's `))` right of the cursor
    ("typescript", "class A {\n  x = 1;\n\n  on(callback: (event: string,|))\n}\n",
     " id: string) => void): () => void {\n    this.x = (", " id: string) => void): () => void {"),
    # a method of an object literal: its block is an item of a list, `},` below it
    ("typescript", "const E = {\n  a(x: string): R {\n    return r(x);\n  },\n\n"
     "  b(op:|)\n\n  c(y: string): R {\n    return r(y);\n  },\n};\n",
     " string, at?: Range): R {\n    return r(", " string, at?: Range): R {"),
    ("go", "package p\n\nfunc f() error {\n\terr := g()\n\tif err |\n}\n",
     " != nil {\n\t\treturn fmt.Errorf(", "!= nil {"),
])
def test_a_brace_header_the_user_is_typing_may_come_without_its_body(
        language: str, doc: str, raw: str, header: str) -> None:
    """At a typing pause the block's own brace ends the header: it opens the body (which
    comes after Enter), not a bracket the answer goes on in. The answer takes over the
    closers the editor put right of the cursor."""
    snap, off = _at(doc, language)
    cursor = cursor_at(snap, off)
    shown = PostProcessor(Target("single-line", cursor, snap, off, typing=True)).run(raw)
    assert shown.text == header
