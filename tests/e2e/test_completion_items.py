"""`textDocument/completion` through the real protocol (stdio) and the real engine: what
eglot's completion-at-point asks for and applies."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_copilot.language.ids import parser_for
from tests.support.lsp import applied, complete, fixture_uri, open_doc, stats

pytestmark = pytest.mark.engine

TEXT = ('import shlex\n\n\ndef split_comments(comments):\n'
        '    """The words of comments, as a shell would split them."""\n    return \n')
LINE, TYPED = 5, "    return "


async def test_invoked_completion_items_leave_the_typed_line(
    engine_client: LanguageClient,
) -> None:
    """triggerKind Invoked after a typed space is an explicit request; every item's edit,
    applied, keeps what was typed and leaves the file parsing: from the engine, again
    from the cache, and as the client asks while typing (typing-through)."""
    uri = fixture_uri("e2e_completion_items.py")
    open_doc(engine_client, uri, TEXT)
    engine_client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"lspCopilot": {"maxSuggestions": 2, "requestTimeoutMs": 240_000}}))
    parser = parser_for("python")
    assert parser is not None
    try:
        before = await stats(engine_client)
        kinds = (types.CompletionTriggerKind.Invoked, types.CompletionTriggerKind.Invoked,
                 types.CompletionTriggerKind.TriggerForIncompleteCompletions)
        for kind in kinds:
            items = await complete(engine_client, uri, LINE, len(TYPED), kind)
            assert items, f"no item at `{TYPED}` ({kind})"
            for item in items:
                after = applied(TEXT, item)
                line = after.split("\n")[LINE]
                assert line.startswith(TYPED) and line[len(TYPED):].strip(), (kind, item)
                assert not parser.parse(after.encode()).root_node.has_error, (kind, item)
        after_stats = await stats(engine_client)
    finally:
        engine_client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"lspCopilot": {"maxSuggestions": 3, "requestTimeoutMs": 30_000}}))
    assert after_stats["explicit_requests"] == before["explicit_requests"] + 2
    assert after_stats["cache_hits"] > before["cache_hits"]
    assert after_stats["typed_through"] > before["typed_through"]
