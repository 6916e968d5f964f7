"""`textDocument/completion` through its handler, with a FAKE engine.

Every item's textEdit, applied to the buffer, must leave the line the suggestion means,
whichever path answered (the engine, the cache, typing-through, a shared generation), and
triggerKind Invoked must be the explicit request an inline Invoked one is.
tests/e2e/test_completion_items.py checks the same through the real engine.
"""

from __future__ import annotations

import asyncio

from lsprotocol import types

from lsp_copilot.pipeline.completion_cache import CompletionCache
from lsp_copilot.server.handlers import completion, documents
from lsp_copilot.server.state import CopilotServer
from tests.support.fakes import FakeEngine, SeededEngine
from tests.support.lsp import applied
from tests.support.pipeline import URI, server_for

SOURCE = "def add(a, b):\n    return "
COL = len("    return ")  # after the typed space, on line 1
INVOKED = types.CompletionTriggerKind.Invoked
CHARACTER = types.CompletionTriggerKind.TriggerCharacter
AGAIN = types.CompletionTriggerKind.TriggerForIncompleteCompletions


def _open(ls: CopilotServer, text: str) -> None:
    documents.did_open(ls, types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=URI, language_id="python", version=1, text=text)))


def _type(ls: CopilotServer, version: int, line: int, char: int, text: str) -> None:
    """Insert ``text`` at (line, char), as an editor's didChange does."""
    at = types.Position(line, char)
    documents.did_change(ls, types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=URI, version=version),
        [types.TextDocumentContentChangePartial(range=types.Range(at, at), text=text)]))


async def _items(ls: CopilotServer, line: int, char: int,
                 kind: types.CompletionTriggerKind | None = INVOKED,
                 ) -> list[types.CompletionItem]:
    context = None if kind is None else types.CompletionContext(
        trigger_kind=kind, trigger_character="." if kind == CHARACTER else None)
    result = await completion.completion(ls, types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=URI),
        position=types.Position(line, char), context=context))
    assert result.is_incomplete  # the client asks again as the user types
    return list(result.items)


def _lines(text: str, items: list[types.CompletionItem], line: int = 1) -> list[str]:
    """The cursor's line after each item is applied."""
    return [applied(text, item).split("\n")[line] for item in items]


async def test_items_after_a_typed_space_keep_the_line_on_every_path() -> None:
    """At `    return ` the prompt ends before the space: an edit measured on the prompt
    replaced `eturn ` with `return...` (`    rreturn...`). Asked again at the same spot
    (the cache, then typing-through), and after typing part of the suggestion."""
    engine = FakeEngine(" a + b\n")
    ls = await server_for(engine, CompletionCache(None))
    _open(ls, SOURCE)
    for kind in (INVOKED, INVOKED, AGAIN, None, CHARACTER):
        items = await _items(ls, 1, COL, kind)
        assert _lines(SOURCE, items) == ["    return a + b"], (kind, items)
    assert ls.telemetry.counters["cache_hits"] == 1
    assert ls.telemetry.counters["typed_through"] == 3
    text = SOURCE
    for version, typed in enumerate(("a", " ", "+"), start=2):
        _type(ls, version, 1, len(text) - len("def add(a, b):\n"), typed)
        text += typed
        items = await _items(ls, 1, len(text.split("\n")[1]), AGAIN)
        assert _lines(text, items) == ["    return a + b"], (typed, items)
        # The word before the cursor is in the edit: clients filter items by it.
        edit = items[0].text_edit
        assert isinstance(edit, types.TextEdit)
        assert items[0].filter_text == edit.new_text
        assert edit.new_text.startswith("a" if typed == "a" else "")
    assert ls.telemetry.counters["typed_through"] == 6


async def test_item_from_a_shared_generation_after_a_typed_space_keeps_the_line() -> None:
    """A request typed past a generation in flight (`a ` after `return `) joins it: its
    edit is measured on the buffer, not on the prompt, which ends before the new space."""
    engine = FakeEngine(" a + b\n", step_s=0.05)
    ls = await server_for(engine)
    _open(ls, SOURCE)
    first = asyncio.ensure_future(_items(ls, 1, COL, AGAIN))
    await engine.streamed(2)  # " a": the generation is ahead of what is typed next
    _type(ls, 2, 1, COL, "a ")
    items = await _items(ls, 1, COL + 2, AGAIN)
    assert await first == []  # superseded by the second
    assert ls.telemetry.counters["merged"] == 1 and len(engine.requests) == 1
    assert _lines(SOURCE + "a ", items) == ["    return a + b"], items


async def test_invoked_completion_is_an_explicit_request_as_inline_is() -> None:
    """triggerKind Invoked (Emacs' completion-at-point): counted as explicit, with the
    inline answer's alternatives, one item each, in its order. A trigger character, a
    request again while typing, or no context: automatic, one item."""
    engine = SeededEngine({None: " a + b\n", 1: " b + a\n", 2: " a - b\n"})
    ls = await server_for(engine)  # no cache: each explicit request reaches the engine
    _open(ls, SOURCE)
    inline = await completion.inline_completion(ls, types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=URI), position=types.Position(1, COL),
        context=types.InlineCompletionContext(types.InlineCompletionTriggerKind.Invoked)))
    items = await _items(ls, 1, COL, INVOKED)
    texts = [item.insert_text for item in inline.items]
    assert texts == ["a + b", "b + a", "a - b"]
    # Each item's acceptance record will say its rank and that its answer had three.
    ids = [(item.command.arguments[0] or {})["id"] for item in inline.items
           if item.command and item.command.arguments]
    tracked = [ls.acceptance.find(sid, None, None, None, None) for sid in ids]
    assert [(s.rank, s.keys["items"]) for s in tracked if s] == [(0, 3), (1, 3), (2, 3)]
    assert [item.text_edit.new_text for item in items if item.text_edit] == texts
    assert _lines(SOURCE, items) == [f"    return {t}" for t in texts]
    assert [item.sort_text for item in items] == sorted(item.sort_text or "" for item in items)
    assert [item.preselect for item in items] == [True, False, False]
    assert ls.telemetry.counters["explicit_requests"] == 2
    assert len(engine.requests) == 8  # the first and three branches, twice
    for kind in (CHARACTER, AGAIN, None):
        assert len(await _items(ls, 1, COL, kind)) == 1
    assert ls.telemetry.counters["explicit_requests"] == 2


async def test_invoked_completion_is_never_cut_by_the_deadline() -> None:
    """The user asked on an empty line: the whole block, however slow (an automatic
    request stops at the first line end where the answer is whole, past deadlineMs)."""
    source = "def f(xs):\n    total = 0\n\n    "
    engine = FakeEngine(" for x in xs:\n        total += x\n    return total\n",
                        step_s=0.02)
    ls = await server_for(engine, None, deadline_ms=30, max_suggestions=1)
    _open(ls, source)
    items = await _items(ls, 3, 4, INVOKED)
    assert [applied(source, item) for item in items] == [
        source + "for x in xs:\n        total += x\n    return total"]
    assert ls.telemetry.counters["deadline_answers"] == 0
