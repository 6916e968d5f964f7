"""Several suggestions and partial accepts, through the real protocol and engine."""

from __future__ import annotations

import re

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_copilot.pipeline.alternatives import SPARE_BRANCHES
from tests.support.lsp import edit_doc, fixture_uri, inline, open_doc, parses_with, stats

pytestmark = pytest.mark.engine

# A list with two common answers (red, green, blue; red, blue, yellow): the model's samples
# differ from its first answer.
SOURCE = 'PRIMARY_COLORS = ["red", \n'
COL = len('PRIMARY_COLORS = ["red", ')


def _configure(client: LanguageClient, **settings: object) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspCopilot": settings}))


async def test_explicit_request_answers_several_whole_distinct_items(
    engine_client: LanguageClient,
) -> None:
    """maxSuggestions: an explicit request gets the first suggestion plus alternatives,
    each whole, no two alike; an automatic one at the same place gets one."""
    uri = fixture_uri("e2e_alternatives.py")
    open_doc(engine_client, uri, SOURCE)
    _configure(engine_client, maxSuggestions=4, maxTokensMultiLine=24,
               requestTimeoutMs=240_000)
    try:
        before = await stats(engine_client)
        result = await inline(engine_client, uri, 0, COL,
                              types.InlineCompletionTriggerKind.Invoked)
        after = await stats(engine_client)
    finally:
        _configure(engine_client, maxSuggestions=3, maxTokensMultiLine=64,
                   requestTimeoutMs=30_000)
    texts = [item.insert_text for item in result.items]
    assert 2 <= len(texts) <= 4, texts
    assert len({t.rstrip() for t in texts}) == len(texts), texts
    for text in texts:
        assert isinstance(text, str) and text.strip() and parses_with(SOURCE, 0, COL, text), text
    # Each item carries its own text in the accept command.
    assert [item.command.arguments[0]["text"] for item in result.items] == texts
    assert after["alternatives"] - before["alternatives"] == len(texts) - 1
    # The first, the request that lists where to branch, and one per alternative shown
    # (at most three wanted and SPARE_BRANCHES more: branches the model gave nothing
    # usable for are not shown).
    assert len(texts) + 1 <= after["engine_requests"] - before["engine_requests"] <= (
        5 + SPARE_BRANCHES)
    # The same place, automatic: one suggestion (typed-through/cache may answer it).
    again = await inline(engine_client, uri, 0, COL)
    assert len(again.items) <= 1


BODY_BELOW = ("def clamp(value, low, high):\n    if\n        return low\n"
              "    return min(value, high)\n")


async def test_where_a_body_waits_every_item_is_a_header_over_it(
    engine_client: LanguageClient,
) -> None:
    """`if` typed over an indented body: the explicit request's items (the first and the
    alternatives, branched along the line where a header can end) each complete the
    header, and the file parses with each."""
    uri = fixture_uri("e2e_header_over_body.py")
    open_doc(engine_client, uri, BODY_BELOW)
    result = await inline(engine_client, uri, 1, 6, types.InlineCompletionTriggerKind.Invoked)
    texts = [item.insert_text for item in result.items]
    assert texts
    for text in texts:
        assert isinstance(text, str) and text.rstrip().endswith(":"), text
        assert parses_with(BODY_BELOW, 1, 6, text), text


JAVA_IF = ("package demo;\n\nimport java.util.List;\n\npublic class Totals {\n"
           "    public static int sumPositive(List<Integer> values) {\n"
           "        int total = 0;\n        for (int v : values) {\n            if \n"
           "                total += v;\n            }\n        }\n        return total;\n"
           "    }\n}\n")
JAVA_IF_LINE, JAVA_IF_COL = 8, len("            if ")


async def test_after_if_an_item_begins_with_the_paren_the_grammar_requires(
    engine_client: LanguageClient,
) -> None:
    """`if ` typed over a body in Java: only `(` may follow `if` (a 0.5B model's own
    answer there is sometimes the condition without it, ` v > 0) {`), and the explicit
    request offers an item that begins with it and leaves the file parsing.
    (tests/unit/test_alternatives.py checks that the branch the grammar requires goes
    first, with a fake engine that never writes the `(` itself.)"""
    uri = fixture_uri("e2e_grammar_lead.java")
    open_doc(engine_client, uri, JAVA_IF, "java")
    result = await inline(engine_client, uri, JAVA_IF_LINE, JAVA_IF_COL,
                          types.InlineCompletionTriggerKind.Invoked)
    texts = [item.insert_text for item in result.items]
    assert any(isinstance(t, str) and t.startswith("(")
               and parses_with(JAVA_IF, JAVA_IF_LINE, JAVA_IF_COL, t, "java") for t in texts), texts


async def test_partial_accept_counts_and_the_rest_follows(engine_client: LanguageClient) -> None:
    """A client accepts the next word (VS Code's "accept next word", Neovim and Emacs'
    commands): didAccept carries acceptedChars, the stats count it, and the request at the
    end of the accepted word answers the rest of the same suggestion without the engine."""
    uri = fixture_uri("e2e_partial.py")
    text = ("def total_price(items, tax):\n"
            "    subtotal = sum(item.price for item in items)\n    return ")
    open_doc(engine_client, uri, text)
    col = len("    return ")
    _configure(engine_client, requestTimeoutMs=240_000)  # time enough on a busy machine
    try:
        shown = await inline(engine_client, uri, 2, col,
                             types.InlineCompletionTriggerKind.Invoked)
    finally:
        _configure(engine_client, requestTimeoutMs=30_000)
    suggestion = shown.items[0].insert_text
    word = re.match(r"\s*\w+|\s*\W", suggestion)
    assert word is not None and len(word.group(0)) < len(suggestion), suggestion
    part = word.group(0)
    before = await stats(engine_client)
    edit_doc(engine_client, uri, 2, 2, col, part)  # the editor inserts the word
    engine_client.protocol.notify("lspCopilot/didAccept", {
        "uri": uri, "position": {"line": 2, "character": col}, "text": suggestion,
        "acceptedChars": len(part)})
    rest = await inline(engine_client, uri, 2, col + len(part))
    after = await stats(engine_client)
    assert after["partial_accepts"] == before["partial_accepts"] + 1
    assert after["accepted_chars"] == before["accepted_chars"] + len(part)
    assert after["accepted"] == before["accepted"]
    assert [item.insert_text for item in rest.items] == [suggestion[len(part):]]
    assert after["typed_through"] == before["typed_through"] + 1
    assert after["engine_requests"] == before["engine_requests"]
    # Then the rest, whole: didAccept without acceptedChars counts an accept.
    engine_client.protocol.notify("lspCopilot/didAccept", {
        "uri": uri, "position": {"line": 2, "character": col + len(part)},
        "text": suggestion[len(part):]})
    final = await stats(engine_client)
    assert final["accepted"] == after["accepted"] + 1
    assert final["accepted_chars"] == after["accepted_chars"] + len(suggestion) - len(part)
