"""The one token a grammar lets follow a keyword (``language.lookahead``); the branch an
explicit request's alternatives begin with it is tested in test_alternatives.py."""

from __future__ import annotations

import pytest

from lsp_copilot.language.ids import parser_for
from lsp_copilot.language.lookahead import forced_after


def _forced(language: str, doc: str) -> str:
    at = doc.index("@@")
    data = (doc[:at] + doc[at + 2:]).encode()
    parser = parser_for(language)
    assert parser is not None
    return forced_after(parser.parse(data), data, len(doc[:at].encode()))


@pytest.mark.parametrize(("language", "doc"), [
    ("typescript", "function f(x: number) {\n  if @@\n  return 1;\n}\n"),
    ("typescript", "function f(x: number) {\n  if@@\n}\n"),  # no space typed yet
    ("typescript", "class A {\n  m() {\n    if (x) {\n      y();\n    } else if @@\n  }\n}\n"),
    # Mid-error: the statement below is read as part of it, the keyword's symbol still says.
    ("javascript", "async function run(args) {\n  let a = {};\n  if @@\n    try {\n"
                   "      a = JSON.parse(args.json);\n    } catch {\n      throw new Error('x');\n"
                   "    }\n  }\n}\n"),
    ("java", "class A {\n  void f() {\n    while @@\n  }\n}\n"),
    ("java", "class A {\n  void f() {\n    try { g(); } catch @@\n  }\n}\n"),
    ("c", "int f(int x) {\n  switch @@\n}\n"),
])
def test_a_keyword_only_an_open_paren_may_follow(language: str, doc: str) -> None:
    assert _forced(language, doc) == "("


@pytest.mark.parametrize(("language", "doc"), [
    ("typescript", "function f(x: number) {\n  return @@\n}\n"),  # any expression
    ("typescript", "function f(x) {\n  for @@\n}\n"),  # `(` or `await`
    ("typescript", "function f(x) {\n  iff @@\n}\n"),  # a name, not the keyword
    ("typescript", "const s = \"if @@\";\n"),  # in a string
    ("typescript", "// if @@\n"),  # in a comment
    ("typescript", "function f(x) {\n  if (@@\n}\n"),  # already there
    ("go", "func f() {\n\tif @@\n}\n"),  # Go's condition has no parentheses
    ("rust", "fn main() {\n    if @@\n}\n"),
    ("python", "def f():\n    if @@\n"),
    ("python", "def @@\n"),  # a name follows: no one text to write
    ("typescript", "function f(x) {\n  @@\n}\n"),  # nothing typed on the line
])
def test_nothing_is_forced_where_more_than_one_token_may_follow(language: str, doc: str) -> None:
    assert _forced(language, doc) == ""
