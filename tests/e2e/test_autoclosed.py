"""Suggestions where the editor closed the bracket as the user typed it (VS Code's
auto-closing brackets, electric-pair-mode): through the real protocol and engine, an item
that writes the `)` again takes it over (its range or textEdit covers it), so that
accepting it leaves one `)`, and the text after it is kept."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp import applied, complete, fixture_uri, inline, open_doc

pytestmark = pytest.mark.engine

# Block headers typed up to an auto-closed `(`: the line goes on past the `)` (` as f:`).
SPOTS = [
    "def read(path):\n    with open()\n        return f.read()\n",
    "def count(items):\n    total = 0\n    for i in range()\n        total += i\n"
    "    return total\n",
    "def check(x):\n    if isinstance()\n        return x\n    return None\n",
]


def _spot(text: str) -> tuple[int, int]:
    """The position between the line's `(` and its auto-closed `)`."""
    line = next(i for i, row in enumerate(text.split("\n")) if row.endswith("()"))
    return line, len(text.split("\n")[line]) - 1


def _accepted_line(text: str, line: int, start: types.Position, end: types.Position,
                   new: str) -> str:
    rows = text.split("\n")
    assert start.line == end.line == line, (start, end)
    return rows[line][:start.character] + new + rows[line][end.character:]


def _balanced(line: str) -> bool:
    depth = 0
    for ch in line:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


async def test_an_answer_that_writes_the_autoclosed_bracket_takes_it_over(
    engine_client: LanguageClient,
) -> None:
    covering = []
    for n, text in enumerate(SPOTS):
        uri = fixture_uri(f"e2e_autoclosed_{n}.py")
        open_doc(engine_client, uri, text)
        line, char = _spot(text)
        result = None
        for _ in range(3):  # a typing pause: the first may come before the engine is warm
            result = await inline(engine_client, uri, line, char)
            if result is not None and result.items:
                break
        typed = text.split("\n")[line]
        assert result is not None and result.items, f"no suggestion at {typed!r}"
        for item in result.items:
            assert item.range is not None
            assert isinstance(item.insert_text, str)
            accepted = _accepted_line(text, line, item.range.start, item.range.end,
                                      item.insert_text.split("\n", 1)[0])
            assert _balanced(accepted), (accepted, item)  # never `open(path))`
            assert item.range.end.character - item.range.start.character in (0, 1), item
            if item.range.end != item.range.start:
                covering.append(accepted)
                assert item.insert_text.rstrip().endswith(":"), accepted  # nothing cut
        # The same through textDocument/completion, as a client asks while typing.
        for entry in await complete(engine_client, uri, line, char,
                                    types.CompletionTriggerKind.TriggerForIncompleteCompletions):
            after = applied(text, entry).split("\n")[line]
            assert _balanced(after), (after, entry)
    # The small typing model writes `path, "r") as f:`: at least one item took the `)` over.
    assert covering, "no answer wrote the closing bracket: nothing was covered"
