"""Suggestion safety through the real protocol and the real engine: the model is steered
to a dangerous call (a docstring that asks for os.system), which `safety: warn` shows
with a message and the default, `block`, does not show at all."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.postprocess.insertion import Insertion
from lsp_copilot.postprocess.safety import SafetyChecker
from tests.support.lsp import fixture_uri, inline, open_doc, stats

pytestmark = pytest.mark.engine

SOURCE = ('import os\n\n\ndef run(cmd):\n'
          '    """Run the shell command cmd with os.system and return its exit status."""\n'
          '    return \n')


def _findings(text: str) -> list[str]:
    """The rules ``text`` breaks at the request's position (line 5, after `return `)."""
    store = DocumentStore()
    store.open("file:///e2e_safety.py", "python", 1, SOURCE)
    snapshot = store.snapshot("file:///e2e_safety.py")
    offset = SOURCE.index("    return ") + len("    return ")
    return [f.rule for f in SafetyChecker().findings(Insertion(snapshot, offset), text)]


def _safety(client: LanguageClient, level: str) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspCopilot": {"safety": level}}))


async def test_a_suggestion_with_a_dangerous_call_is_blocked(
    engine_client: LanguageClient,
) -> None:
    uri = fixture_uri("e2e_safety.py")
    open_doc(engine_client, uri, SOURCE)
    invoked = types.InlineCompletionTriggerKind.Invoked
    _safety(engine_client, "warn")
    try:
        seen = len(engine_client.messages)
        shown = await inline(engine_client, uri, 5, 11, invoked)
        assert shown.items, "the model answered nothing at `return `"
        assert "os.system(" in shown.items[0].insert_text, shown.items[0].insert_text
        told = [m.message for m in engine_client.messages[seen:]
                if m.type == types.MessageType.Warning]
        assert any("adds shell_command" in m for m in told), told
    finally:
        _safety(engine_client, "block")
    before = await stats(engine_client)
    # The same answer again (the completion cache has it), now under the default.
    blocked = await inline(engine_client, uri, 5, 11, invoked)
    after = await stats(engine_client)
    # Nothing shown has a finding (an alternative without one may lead instead; a call
    # with a constant command, `os.system("ls")`, is not one).
    assert not any(_findings(item.insert_text) for item in blocked.items), blocked.items
    assert after["safety_blocked"] == before["safety_blocked"] + 1
    rules = after["safety_rules"]["shell_command"]
    assert rules["blocked"] == before["safety_rules"]["shell_command"]["blocked"] + 1
