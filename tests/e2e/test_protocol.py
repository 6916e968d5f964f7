"""Protocol behaviour that needs no engine: encoding, settings, bad input, failure to load."""

from __future__ import annotations

import sys

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.support.lsp import ROOT, initialize, send_raw, stats, wait_for_engine


async def test_utf8_negotiated_when_offered(light_client: LanguageClient) -> None:
    caps = light_client.init_result.capabilities  # type: ignore[attr-defined]
    assert caps.position_encoding == "utf-8"  # Neovim offers utf-8 first
    s = await stats(light_client)
    assert s["engine_state"] == "idle"  # enable=false: the engine is not loaded


async def test_disabled_server_answers_empty(light_client: LanguageClient) -> None:
    uri = (ROOT / "tests" / "fixtures" / "light.py").as_uri()
    light_client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                                 text="😀 = 1\nprint(")
        )
    )
    result = await light_client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(1, 6),
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Invoked),
        )
    )
    assert result is not None and not result.items


async def test_custom_request_without_params_is_answered(light_client: LanguageClient) -> None:
    # JSON-RPC lets a request omit "params" (vscode-jsonrpc does for sendRequest(method)).
    result = await send_raw(light_client, "no-params-1", "lspCopilot/stats", None)
    assert result is not None


async def test_unknown_method_gets_method_not_found(light_client: LanguageClient) -> None:
    from pygls.exceptions import JsonRpcException

    try:
        await light_client.protocol.send_request_async("lspCopilot/noSuchThing", {})
    except JsonRpcException as exc:
        assert exc.code == types.ErrorCodes.MethodNotFound
    else:
        raise AssertionError("expected MethodNotFound")
    assert (await stats(light_client))["engine_state"] == "idle"


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[sys.executable, "-m", "lsp_copilot", "serve"])
)
async def broken_client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await initialize(lsp_client, "visual-studio-code",
                     {"model": "/nonexistent/models/my-model", "maxTokensSingleLine": -3})
    yield
    await lsp_client.shutdown_session()


async def test_engine_failure_is_shown_and_server_keeps_running(
    broken_client: LanguageClient,
) -> None:
    s = await wait_for_engine(broken_client, timeout=120)
    assert s["engine_state"] == "failed"
    texts = [m.message for m in broken_client.messages]
    assert any("could not start" in t and "/nonexistent/models/my-model" in t for t in texts), texts
    assert any("maxTokensSingleLine" in t for t in texts), texts
    uri = (ROOT / "tests" / "fixtures" / "broken.py").as_uri()
    broken_client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                                 text="def f():\n    return ")
        )
    )
    result = await broken_client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(1, 11),
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Invoked),
        )
    )
    assert result is not None and not result.items
    assert (await stats(broken_client))["not_ready"] >= 1
