"""The one token a grammar lets follow a keyword (``language.lookahead``), and the branch
an explicit request's alternatives begin with it (``alternatives.led_by``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.engine.base import TokenChoice
from lsp_copilot.language.ids import parser_for
from lsp_copilot.language.lookahead import forced_after
from lsp_copilot.pipeline.alternatives import Branch, led_by
from lsp_copilot.prompts.encoder import PromptEncoder
from tests.support.fakes import BranchingEngine
from tests.support.models import smollm2_like_folder
from tests.support.pipeline import URI, completer_for


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


def _choice(token_id: int, text: str, logprob: float) -> TokenChoice:
    return TokenChoice(token_id, text, logprob)


def test_the_lead_goes_first_unless_the_first_answer_begins_with_it() -> None:
    lead = Branch((7,), " (", 0.0)
    found = [Branch((1,), " try", -1.4), Branch((7,), " (", -6.3), Branch((2,), " await", -2.1)]
    assert [b.text for b in led_by(lead, " try {", found)] == [" (", " try", " await"]
    assert led_by(lead, " (x) {", found) == found  # the model went that way itself
    assert led_by(None, " try {", found) == found


async def test_an_explicit_request_continues_the_required_token_first(tmp_path: Path) -> None:
    """The model writes the condition without its `(` and lists no `(` among its
    runners-up: the branch that begins with the `(` the grammar requires is continued,
    and it is the answer."""
    source = "function f(v: number): number {\n  if \n    return 1;\n  }\n  return 0;\n}\n"
    offset = source.index("if ") + len("if ")
    engine = BranchingEngine({"": " v > 0) {\n", " (": "v > 0) {\n", " return": " 1;\n",
                              " v <": " 0) {\n"}, (
        (_choice(1, " v", -0.1), _choice(2, " return", -1.0)),
        (_choice(3, " >", -0.1), _choice(4, " <", -1.5))))
    engine.encoder = PromptEncoder.for_model(str(smollm2_like_folder(tmp_path)))
    completer = await completer_for(engine)
    store = DocumentStore()
    store.open(URI, "typescript", 1, source)
    outcome = await completer.complete(store.snapshot(URI), offset, explicit=True)
    assert outcome.text == "(v > 0) {"
    heads = [r.prompt[len(engine.requests[0].prompt):] for r in engine.requests[2:]]
    assert heads[0] == " ("  # before the model's own departures
    assert engine.requests[2].prompt_token_ids[-len(engine.encoder.text_ids(" (")):] == \
        engine.encoder.text_ids(" (")
