"""Partial accepts through the server's handlers: read from the edit, reported by the
client, or both (counted once), with the same counters in each case."""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types

from lsp_copilot.server.handlers import completion, documents, feedback
from lsp_copilot.server.state import CopilotServer
from tests.support.fakes import FakeEngine
from tests.support.pipeline import server_for

URI = "file:///w/calc.py"
TEXT = "def add(a, b):\n    return "
AT = types.Position(line=1, character=11)


async def _shown(ls: CopilotServer) -> dict[str, Any]:
    documents.did_open(ls, types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=URI, language_id="python", version=1, text=TEXT)))
    answer = await completion.inline_completion(ls, types.InlineCompletionParams(
        context=types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Automatic),
        text_document=types.TextDocumentIdentifier(uri=URI), position=AT))
    (item,) = answer.items
    assert item.command is not None and item.command.arguments
    args = item.command.arguments[0]
    assert isinstance(args, dict)
    assert args["text"] == "total + b"
    feedback.did_show(ls, args)
    return args


def _insert(ls: CopilotServer, text: str, version: int = 2) -> None:
    documents.did_change(ls, types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=version),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=AT, end=AT), text=text)]))


def _counts(ls: CopilotServer) -> tuple[int, int, int, int]:
    s = ls.stats()
    return (s["partial_accepts"], s["accepted_chars"], s["outcomes"]["partly_accepted"],
            s["accepted"])


@pytest.mark.parametrize("order", ["edit only", "edit, then report", "report, then edit"])
async def test_a_word_accepted_is_counted_once_whoever_says_so(order: str) -> None:
    ls = await server_for(FakeEngine(" total + b\n", 0.001), None, cache=False)
    args = await _shown(ls)
    report = {**args, "acceptedChars": 5}
    if order == "report, then edit":
        feedback.did_accept(ls, report)
    _insert(ls, "total")
    if order == "edit, then report":
        feedback.did_accept(ls, report)
    assert _counts(ls) == (1, 5, 1, 0)
    recent = ls.stats()["outcomes"]["recent"][-1]
    assert recent == {"id": args["id"], "outcome": "partly_accepted", "accepted_chars": 5}
    # The rest is on offer at once (typing-through), as the client asks again.
    rest = await completion.inline_completion(ls, types.InlineCompletionParams(
        context=types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Automatic),
        text_document=types.TextDocumentIdentifier(uri=URI),
        position=types.Position(line=1, character=16)))
    assert [i.insert_text for i in rest.items] == [" + b"]


async def test_one_keystroke_is_typing_and_a_whole_insert_is_the_clients_accept() -> None:
    ls = await server_for(FakeEngine(" total + b\n", 0.001), None, cache=False)
    args = await _shown(ls)
    _insert(ls, "t")
    assert _counts(ls) == (0, 0, 0, 0)
    _insert(ls, "otal + b", version=3)  # the rest, whole: the client's accept follows
    assert _counts(ls) == (0, 0, 0, 0)
    feedback.did_accept(ls, args)
    assert _counts(ls) == (0, 9, 0, 1)


async def test_the_rest_stays_on_offer_after_a_word_ending_inside_a_string() -> None:
    """After `"blue` (VS Code's Ctrl+Right stops there) no new suggestion is asked for
    inside the string, but the rest of the one on screen is still offered."""
    ls = await server_for(FakeEngine(' "blue", "green"]\n', 0.001), None, cache=False)
    text = 'COLORS = ["red",'
    documents.did_open(ls, types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=URI, language_id="python", version=1, text=text)))
    at = types.Position(line=0, character=len(text))

    async def ask(position: types.Position) -> list[str]:
        answer = await completion.inline_completion(ls, types.InlineCompletionParams(
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Automatic),
            text_document=types.TextDocumentIdentifier(uri=URI), position=position))
        return [str(i.insert_text) for i in answer.items]

    assert await ask(at) == [' "blue", "green"]']
    documents.did_change(ls, types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=at, end=at), text=' "blue')]))
    assert await ask(types.Position(line=0, character=len(text) + 6)) == ['", "green"]']
