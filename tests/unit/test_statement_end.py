"""The token that ends what the cursor line just closed (``postprocess/statement_end``),
read from the file's own style or its list's separator, and through the completer when
the model has nothing usable there (a fake engine that closes the block below again)."""

from __future__ import annotations

from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.postprocess.statement_end import statement_end
from tests.support.fakes import FakeEngine
from tests.support.pipeline import URI, completer_for

SEMI = """\
function a(): number {
  const x = 1;
  return x;
}
function d(): number {
  return 4;
}
function b(): () => void {
  const y = 2;
  return () => {
    go(y);
  }|
}
function c(): number {
  const z = 3;
  return z;
}
"""

BARE = SEMI.replace(";", "")

MEMBERS = """\
export const E = {
  one(a: string) {
    return a;
  },
  two(b: string) {
    return b;
  }|

  three(c: string) {
    return c;
  },
};
"""


def _at(source: str, language: str = "typescript") -> tuple[str, int]:
    offset = source.index("|")
    text = source.replace("|", "")
    store = DocumentStore()
    store.open(URI, language, 1, text)
    tree = store.snapshot(URI).tree
    assert tree is not None
    return statement_end(tree, len(text[:offset].encode()), "})]"), text


def test_a_statement_the_file_ends_with_a_semicolon_gets_one() -> None:
    assert _at(SEMI)[0] == ";"


def test_a_file_without_semicolons_gets_none() -> None:
    assert _at(BARE)[0] == ""


def test_a_block_statement_never_gets_one() -> None:
    """`}` of an `if`: no `if` of the file ends with `;`."""
    source = SEMI.replace("return () => {\n    go(y);\n  }|", "if (y) {\n    go(y);\n  }|")
    assert _at(source)[0] == ""


def test_a_member_followed_by_another_gets_the_separator() -> None:
    assert _at(MEMBERS)[0] == ","


def test_the_last_member_gets_none() -> None:
    last = MEMBERS.replace("  }|\n\n  three(c: string) {\n    return c;\n  },\n", "  }|\n")
    assert _at(last)[0] == ""


def test_a_line_not_ending_with_a_closer_gets_none() -> None:
    assert _at(SEMI.replace("go(y);\n  }|", "go(y)|;\n  }"))[0] == ""


def test_a_python_call_statement_gets_none() -> None:
    """Python's statements end with no token of their own."""
    source = "def f(x):\n    g(x)\n    g(x)\n    g(x)|\n    return x\n"
    assert _at(source, "python")[0] == ""


async def test_where_the_model_has_nothing_the_statement_end_is_the_answer() -> None:
    """The fake model closes the block below again (a small model's habit there): the
    checks drop it, and the `;` the file's style puts there is the answer."""
    text = SEMI.replace("|", "")
    completer = await completer_for(FakeEngine(reply="\n}"))
    store = DocumentStore()
    store.open(URI, "typescript", 1, text)
    offset = len(SEMI[:SEMI.index("|")].encode())
    outcome = await completer.complete(store.snapshot(URI), offset)
    assert outcome.text == ";"
    assert completer.telemetry.counters["statement_ends"] == 1


async def test_a_usable_model_answer_is_kept() -> None:
    text = SEMI.replace("|", "")
    completer = await completer_for(FakeEngine(reply=";\n"))
    store = DocumentStore()
    store.open(URI, "typescript", 1, text)
    outcome = await completer.complete(store.snapshot(URI), len(SEMI[:SEMI.index("|")]))
    assert outcome.text == ";"
    assert completer.telemetry.counters["statement_ends"] == 0
