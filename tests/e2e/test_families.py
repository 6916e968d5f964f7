"""Model families through the real protocol and the real engine (vLLM, the CPU default
Qwen2.5-Coder-0.5B).

The default model is detected as qwen2.5-coder and completes; prompts reach vLLM as token
ids (vLLM's own prompt-token count equals the ids' length), and a control-token string in
the user's code goes as text. Another repository-format template (StarCoder2's) named in
the settings takes the same path.
"""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp import ROOT, open_doc, stats

pytestmark = pytest.mark.engine

OTHER = '''from lsp_copilot.prompts.templates import template_for


def render_header(path):
    """The comment line that heads a file in the prompt."""
    return "# " + path + "\\n"
'''

CODE = '''from lsp_copilot.prompts.templates import template_for

SEPARATOR = "<|file_sep|>"  # control tokens spelled out in the code: must stay text
MARKER = "<|endoftext|>"


def render_footer(path):
    """The comment line that ends a file in the prompt."""
    return "# end of " + '''


async def _complete_and_count(client: LanguageClient, uri: str, text: str
                              ) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    lines = text.split("\n")
    # One suggestion: sampled alternatives would be more engine calls than the one counted.
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"lspCopilot": {"maxSuggestions": 1}}))
    try:
        before = await stats(client)
        result = await client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(len(lines) - 1, len(lines[-1])),
                context=types.InlineCompletionContext(
                    trigger_kind=types.InlineCompletionTriggerKind.Invoked)))
        return result, before, await stats(client)
    finally:
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"lspCopilot": {"maxSuggestions": 3}}))


def _delta(before: dict[str, Any], after: dict[str, Any], key: str) -> int:
    return int(after[key]) - int(before[key])


def _check_token_id_prompt(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert _delta(before, after, "engine_requests") == 1
    assert _delta(before, after, "token_id_prompts") == 1
    sent = _delta(before, after, "prompt_token_ids")
    # vLLM reports the prompt length it ran: exactly our ids, not a re-tokenized text.
    assert sent > 0 and _delta(before, after, "prompt_tokens") == sent
    # "<file_sep>" and "<|endoftext|>" in the code were encoded as text.
    assert _delta(before, after, "escaped_special_tokens") >= 2


async def test_default_model_is_detected_and_gets_token_ids(
        engine_client: LanguageClient) -> None:
    s = await stats(engine_client)
    assert s["engine"]["template"] == "qwen2.5-coder"
    uri = (ROOT / "tests" / "fixtures" / "e2e_families_default.py").as_uri()
    open_doc(engine_client, uri, CODE)
    result, before, after = await _complete_and_count(engine_client, uri, CODE)
    assert result is not None and result.items, "the default model should still complete"
    assert isinstance(result.items[0].insert_text, str) and result.items[0].insert_text.strip()
    _check_token_id_prompt(before, after)


async def test_repository_template_goes_to_vllm_as_token_ids(
        engine_client: LanguageClient) -> None:
    other = (ROOT / "tests" / "fixtures" / "e2e_families_other.py").as_uri()
    uri = (ROOT / "tests" / "fixtures" / "e2e_families_repo.py").as_uri()
    open_doc(engine_client, other, OTHER)
    code = CODE.replace("render_footer", "render_trailer")
    open_doc(engine_client, uri, code)
    engine_client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"lspCopilot": {"template": "starcoder2"}}))
    try:
        _, before, after = await _complete_and_count(engine_client, uri, code)
    finally:
        engine_client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
            settings={"lspCopilot": {"template": "auto"}}))
    _check_token_id_prompt(before, after)
