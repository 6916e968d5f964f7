"""P1, the chain of enclosing scopes: per language (tests/fixtures/scopes/nested.*, cursor
at §) every enclosing header is whole and in order, outermost first; what lies between is
marked as elided; the line nearest the window comes last. Then what real files contain:
syntax errors, macros that fold a doc comment into a definition, very long functions."""

from __future__ import annotations

from pathlib import Path

import pytest
import tree_sitter

from lsp_copilot.context.builder import build_context
from lsp_copilot.context.index.same_file import SameFileSymbols
from lsp_copilot.context.layers.scopes import enclosing_scopes, render_scopes
from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.language.grammars import queries_for
from lsp_copilot.language.ids import ts_language
from lsp_copilot.prompts.templates import template_for
from lsp_copilot.tokens import TiktokenCounter, TokenCounter

FIXTURES = Path(__file__).parent.parent / "fixtures" / "scopes"

# grammar: (fixture, the header lines in order (stripped), a line that must be elided)
CASES: dict[str, tuple[str, list[str], str]] = {
    "python": ("nested.py", ["class Outer:", "@staticmethod", "def method(", "alpha,", "beta,",
                             "):", "def inner(x,", "y):", "total = x + y"], "value = alpha"),
    "javascript": ("nested.js", ["class Outer {", "method(", "alpha,", "beta,", ") {",
                                 "const inner = (x) => {", "const y = x * 2;"],
                   "const start = alpha;"),
    "typescript": ("nested.ts", ["namespace Geo {", "export class Outer {", "method(",
                                 "beta: number,", "): number {",
                                 "const inner = (x: number): number => {",
                                 "const y = x * 2;"], "const start = alpha;"),
    "tsx": ("nested.tsx", ["namespace Geo {", "export class Outer {", "method(",
                           "beta: number,", "): number {",
                           "const inner = (x: number): number => {", "const y = x * 2;"],
            "const start = alpha;"),
    "go": ("nested.go", ["func TestOuter(", "t *testing.T,", "name string,", ") {",
                         "t.Run(name, func(t *testing.T) {", "y := c.in * 2"],
           "cases := []struct{ in int }{"),
    "rust": ("nested.rs", ["mod outer {", "impl Shape {", "#[inline]", "pub fn area(",
                           "scale: u32,", ") -> u32 {", "fn helper(x: u32) -> u32 {",
                           "let z = x * 2;"], "let base = scale;"),
    "java": ("Nested.java", ["class Outer {", "@Override", "public int area(", "int scale,",
                             "int other) {", "Runnable r = () -> {", "int y = base * 2;"],
             "int base = scale;"),
    "c": ("nested.c", ["static int", "area(struct shape *s,", "int scale)", "{",
                       "int helper(int x)", "{", "int y = x * 2;"], "int base = s->w;"),
    "cpp": ("nested.cpp", ["namespace geo {", "template <typename T>", "class Shape {",
                           "template <typename U>", "typename Shape<T>::value_type",
                           "area(U scale,", "int other) const", "{",
                           "auto inner = [&](int x) {", "int y = x * 2;"],
            "int base = other;"),
    "csharp": ("nested.cs", ["namespace Geo {", "class Shape {", "[Obsolete]",
                             "public int Area(", "int scale,", "int other) {",
                             "int Inner(int x) {", "int y = x * 2;"], "int start = scale;"),
    "ruby": ("nested.rb", ["module Geo", "class Shape", "def area(scale,", "other)",
                           "[1, 2].map do |x|", "y = x * 2"], "start = scale"),
    "php": ("nested.php", ["class Shape {", "public function area(", "$scale,", "$other",
                           ") {", "$inner = function ($x) {", "$y = $x * 2;"],
            "$start = $scale;"),
    "bash": ("nested.sh", ["function outer()", "{", "inner() {", "local y=2"],
             "local start=1"),
    "lua": ("nested.lua", ["function M.outer(alpha,", "beta)", "local function inner(x)",
                           "local y = x * 2"], "local start = alpha"),
    "kotlin": ("nested.kt", ["class Shape {", "fun area(", "other: Int,", "): Int {",
                             "val inner = { x: Int ->", "val y = x * 2"],
               "val start = scale"),
}


def _parse(grammar: str, text: str) -> tuple[bytes, int, tree_sitter.Tree]:
    offset = text.encode().index("§".encode())
    data = text.replace("§", "").encode()
    language = ts_language(grammar)
    assert language is not None
    return data, offset, tree_sitter.Parser(language).parse(data)


def _p1(counter: TokenCounter, grammar: str, text: str, first_line: int | None = None,
        allowance: int = 4000) -> str:
    """P1's text with the window starting at the cursor's line (or ``first_line``)."""
    data, offset, tree = _parse(grammar, text)
    q = queries_for(grammar)
    assert q is not None
    row = data.count(b"\n", 0, offset) if first_line is None else first_line
    first_byte = 0
    for _ in range(row):
        first_byte = data.index(b"\n", first_byte) + 1
    rendered = render_scopes(q, counter, data, enclosing_scopes(q, tree, data, offset),
                             None, offset, row, first_byte, allowance)
    assert rendered is not None, "no P1"
    assert rendered.tokens <= allowance
    return rendered.text


def _in_order(text: str, lines: list[str]) -> None:
    rows = [r.strip() for r in text.split("\n")]
    at = 0
    for line in lines:
        assert line in rows[at:], f"{line!r} missing (or out of order) in:\n{text}"
        at = rows.index(line, at) + 1


@pytest.mark.parametrize("grammar", sorted(CASES))
def test_chain_of_headers_outermost_first(grammar: str, cl100k: TiktokenCounter) -> None:
    fixture, headers, elided = CASES[grammar]
    text = _p1(cl100k, grammar, (FIXTURES / fixture).read_text())
    _in_order(text, headers)
    assert elided not in text, "a body line between two headers was not elided"
    q = queries_for(grammar)
    assert q is not None
    assert f"{q.comment} ..." in text, "the elided lines are not marked"
    # The innermost scope's line nearest the window comes last.
    assert text.rstrip("\n").split("\n")[-1].strip() == headers[-1]


def test_a_tight_budget_keeps_the_inner_header_first(cl100k: TiktokenCounter) -> None:
    text = (FIXTURES / "nested.rs").read_text()
    tight = _p1(cl100k, "rust", text, allowance=30)  # the outer fn's 4 rows do not fit
    assert "fn helper(x: u32) -> u32 {" in tight and "pub fn area(" not in tight
    both = _p1(cl100k, "rust", text, allowance=70)
    _in_order(both, ["pub fn area(", "fn helper(x: u32) -> u32 {"])


def test_syntax_error_near_the_cursor_keeps_the_enclosing_headers(cl100k: TiktokenCounter) -> None:
    text = ("class Box:\n    def size(self,\n             scale):\n        total = 0\n"
            "        for x in range(scale):\n            total += compute(x,\n"
            "        §\n")
    _in_order(_p1(cl100k, "python", text), ["class Box:", "def size(self,", "scale):"])
    cpp = ("namespace n {\nint\nShape::area(int scale)\n{\n  int x = (scale + ;\n"
           "  if (x) {\n    §\n  }\n}\n}\n")
    _in_order(_p1(cl100k, "cpp", cpp), ["namespace n {", "int", "Shape::area(int scale)"])


def test_macro_folded_doc_comment_does_not_hide_the_name(cl100k: TiktokenCounter) -> None:
    """libstdc++: a macro tree-sitter cannot expand makes the macro, a long doc comment and
    the class one 'function definition'; the comment rows are left out of the header."""
    doc = "".join(f"   *  line {i} of the documentation\n" for i in range(30))
    text = ("namespace std _GLIBCXX_VISIBILITY(default)\n{\n_GLIBCXX_BEGIN_NAMESPACE_VERSION\n\n"
            f"  /**\n{doc}   */\n  template<typename _Tp, typename _Seq = deque<_Tp> >\n"
            "    class queue\n    {\n      typedef typename _Seq::value_type _Value;\n"
            "    public:\n      void\n      push(int x)\n      { §c.push_back(x); }\n"
            "    };\n}\n")
    p1 = _p1(cl100k, "cpp", text)
    _in_order(p1, ["namespace std _GLIBCXX_VISIBILITY(default)",
                   "template<typename _Tp, typename _Seq = deque<_Tp> >", "class queue"])
    assert "line 3 of the documentation" not in p1


def test_long_function_name_line_in_the_prompt(cl100k: TiktokenCounter) -> None:
    """Through build_context: 300 lines into a function (return type on its own line), with
    a 1,024-token budget, the line naming it is in the prompt and the budget holds."""
    body = "".join(f"  int v{i} = compute({i}, base + {i});\n" for i in range(300))
    text = ("template <typename T>\ntypename basic_buf<T>::int_type\nbasic_buf<T>::\n"
            f"underflow(int base)\n{{\n{body}  return v1;\n}}\n")
    store = DocumentStore()
    uri = "file:///w/buf.tcc"
    store.open(uri, "cpp", 1, text)
    offset = store.get_offset(uri, 300, 2, "utf-32")
    ctx = build_context(store.snapshot(uri), offset, cl100k, template_for(None),
                        1024, "single-line")
    assert ctx.prompt_tokens <= 1024
    assert "underflow(int base)" in ctx.prompt
    assert "typename basic_buf<T>::int_type" in ctx.prompt


def test_class_members_follow_as_signatures(cl100k: TiktokenCounter) -> None:
    text = ("class Account:\n    def deposit(self, amount):\n        self.total += amount\n\n"
            "    def report(self):\n" + "".join(f"        x{i} = {i}\n" for i in range(40))
            + "        §\n\n    def withdraw(self, amount,\n                 note=None):\n"
            "        return amount\n")
    data, offset, tree = _parse("python", text)
    q = queries_for("python")
    assert q is not None
    symbols = SameFileSymbols().read(q, tree, data)
    row = data.count(b"\n", 0, offset)
    first_byte = data.rfind(b"\n", 0, offset) + 1
    rendered = render_scopes(q, cl100k, data, enclosing_scopes(q, tree, data, offset),
                             symbols, offset, row, first_byte, 4000)
    assert rendered is not None
    _in_order(rendered.text, ["class Account:", "def deposit(self, amount):",
                              "def report(self):", "x39 = 39", "def withdraw(self, amount,",
                              "note=None):"])
    assert "self.total += amount" not in rendered.text


def test_a_long_header_folds_its_lists_and_keeps_the_name(cl100k: TiktokenCounter) -> None:
    """libstdc++'s parallel mode: five template parameters and seven function parameters,
    one per row; the rows inside the lists go, the row naming the function stays."""
    params = "".join(f"           typename _T{i},\n" for i in range(5))
    args = "".join(f"\t\t\t\t\t   _T{i} __a{i},\n" for i in range(6))
    text = (f"  template<typename _RAIter,\n{params}           typename _Result>\n    _Op\n"
            f"    __for_each_workstealing(_RAIter __begin,\n{args}"
            "      _Result __bound)\n    {\n      int x = 1;\n      §x++;\n    }\n")
    p1 = _p1(cl100k, "cpp", text)
    _in_order(p1, ["template<typename _RAIter,", "typename _Result>", "_Op",
                   "__for_each_workstealing(_RAIter __begin,", "_Result __bound)", "{"])
    assert "_T2 __a2," not in p1


def test_a_line_cut_mid_expression_keeps_its_function(cl100k: TiktokenCounter) -> None:
    """The recall benchmark's situation and every keystroke's: the line being typed ends in
    ``cmd.``; tree-sitter hangs the lines above it on the method as an ERROR before what it
    takes for the body. The method still encloses the cursor, its header is its def line,
    and statements below (read as the class's own) are not listed as members."""
    text = ("class BuildTest(support.TempdirManager,\n                unittest.TestCase):\n\n"
            "    def setUp(self):\n        super().setUp()\n\n"
            "    def test_get_source_files(self):\n        pkg_dir, dist = self.create_dist()\n"
            "        cmd.libraries = [('name', {})]\n"
            "        self.assertRaises(Error, cmd.§\n\n"
            "        cmd.libraries = [('name', {'sources': 1})]\n"
            "        self.assertEqual(cmd.get_source_files(), ['a', 'b'])\n\n"
            "    def test_build_libraries(self):\n\n"
            "        pkg_dir, dist = self.create_dist()\n"
            "        class FakeCompiler:\n            def compile(*args, **kw):\n"
            "                pass\n            create_static_lib = compile\n\n"
            "        cmd.compiler = FakeCompiler()\n")
    data, offset, tree = _parse("python", text)
    q = queries_for("python")
    assert q is not None
    chain = enclosing_scopes(q, tree, data, offset)
    assert [s.kind for s in chain] == ["class", "function"]
    assert chain[1].header == (6,)
    row = data.count(b"\n", 0, offset)
    symbols = SameFileSymbols().read(q, tree, data)
    rendered = render_scopes(q, cl100k, data, chain, symbols, offset, row,
                             data.rfind(b"\n", 0, offset) + 1, 4000)
    assert rendered is not None
    _in_order(rendered.text, ["class BuildTest(support.TempdirManager,", "unittest.TestCase):",
                              "def setUp(self):", "def test_get_source_files(self):"])
    assert "cmd.compiler = FakeCompiler()" not in rendered.text
