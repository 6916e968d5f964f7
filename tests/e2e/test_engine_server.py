"""Through the real protocol (stdio) and the real engine (vLLM on CPU, SmolLM2-135M)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.e2e.conftest import ROOT, send_raw, stats

pytestmark = pytest.mark.engine

PY_SOURCE = '''import os


def read_lines(path):
    """Return the lines of the file at path."""
    with open(path) as handle:
        return handle.read().splitlines()


def count_words(text):
    words = text.split()
'''


def _open(client: LanguageClient, uri: str, text: str, language: str = "python") -> None:
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id=language, version=1, text=text
            )
        )
    )


def _edit(client: LanguageClient, uri: str, version: int, line: int, char: int, text: str) -> None:
    pos = types.Position(line, char)
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(range=types.Range(pos, pos), text=text)
            ],
        )
    )


async def _inline(client: LanguageClient, uri: str, line: int, char: int) -> Any:
    return await client.text_document_inline_completion_async(
        types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line, char),
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Automatic
            ),
        )
    )


def _uri(name: str) -> str:
    return (ROOT / "tests" / "fixtures" / name).as_uri()


async def test_capabilities_and_engine_info(engine_client: LanguageClient) -> None:
    caps = engine_client.init_result.capabilities  # type: ignore[attr-defined]
    assert caps.inline_completion_provider is not None
    assert caps.completion_provider is not None
    sync = caps.text_document_sync
    assert sync.change == types.TextDocumentSyncKind.Incremental
    assert caps.position_encoding == "utf-16"  # VS Code offers only UTF-16
    s = await stats(engine_client)
    engine = s["engine"]
    assert engine["backend"] == "vllm"
    assert engine["device"] == "cpu"
    assert engine["prefix_caching"] is True
    assert engine["speculative"] == "ngram"
    # Loading was reported as work-done progress that began and ended.
    kinds = [
        getattr(v, "kind", None)
        for reports in engine_client.progress_reports.values()
        for v in reports
    ]
    assert "begin" in kinds and "end" in kinds


async def test_incremental_edits_then_inline_and_item(engine_client: LanguageClient) -> None:
    uri = _uri("e2e_words.py")
    _open(engine_client, uri, PY_SOURCE)
    # Type "    return len(" after `words = text.split()` (line 10), keystroke by keystroke.
    _edit(engine_client, uri, 2, 10, len("    words = text.split()"), "\n")
    typed = "    return len("
    for i, ch in enumerate(typed):
        _edit(engine_client, uri, 3 + i, 11, i, ch)
    before = await stats(engine_client)
    result = await _inline(engine_client, uri, 11, len(typed))
    assert result is not None and result.items, "expected a suggestion"
    text = result.items[0].insert_text
    assert isinstance(text, str) and text.strip(), text
    assert "\n" not in text  # single-line mode: the rest of the line only
    after = await stats(engine_client)
    assert after["requests"] == before["requests"] + 1
    assert after["engine_requests"] == before["engine_requests"] + 1
    assert after["prompt_tokens"] > before["prompt_tokens"]
    assert after["generated_tokens"] > before["generated_tokens"]
    assert after["latency_ms"]["p50"] > 0

    items = await engine_client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(11, len(typed)),
        )
    )
    assert items is not None
    entries = items.items if isinstance(items, types.CompletionList) else items
    assert len(entries) == 1
    edit = entries[0].text_edit
    assert isinstance(edit, types.TextEdit) and edit.new_text.strip()
    # The item's edit starts at the word before the cursor ("len" has "(" after it: none).
    assert edit.range.end == types.Position(11, len(typed))


async def test_repeated_prompt_hits_prefix_cache(engine_client: LanguageClient) -> None:
    uri = _uri("e2e_cache.py")
    body = "".join(f"def handler_{i}(event):\n    return event.get('{i}')\n\n" for i in range(20))
    _open(engine_client, uri, body + "def handler_20(event):\n    return ")
    line = body.count("\n") + 1
    before = await stats(engine_client)
    await _inline(engine_client, uri, line, len("    return "))
    await _inline(engine_client, uri, line, len("    return "))
    after = await stats(engine_client)
    assert after["cached_prompt_tokens"] > before["cached_prompt_tokens"]
    # The prompt repeats itself: n-gram speculation finds drafts in it.
    assert after["spec_draft_tokens"] >= before["spec_draft_tokens"]


async def _wait_engine_request(client: LanguageClient, count: int) -> None:
    deadline = time.monotonic() + 60
    while (await stats(client))["engine_requests"] < count:
        assert time.monotonic() < deadline, f"never reached the engine: {await stats(client)}"
        await asyncio.sleep(0.02)


async def test_cancel_request_aborts_engine(engine_client: LanguageClient) -> None:
    uri = _uri("e2e_cancel.py")
    _open(engine_client, uri, "class Inventory:\n    def __init__(self):\n")
    before = await stats(engine_client)
    msg_id = "cancel-me-1"
    params = types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(2, 0),
        context=types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Invoked
        ),
    )
    fut = asyncio.ensure_future(  # pytest-lsp's send_request_async is a coroutine
        engine_client.protocol.send_request_async(
            types.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id=msg_id
        )
    )
    await _wait_engine_request(engine_client, before["engine_requests"] + 1)
    engine_client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    with pytest.raises(JsonRpcException) as err:
        await fut
    assert err.value.code == types.LSPErrorCodes.RequestCancelled
    after = await stats(engine_client)
    assert after["engine_aborted"] == before["engine_aborted"] + 1
    assert after["cancelled"] == before["cancelled"] + 1


async def test_newer_request_supersedes_older(engine_client: LanguageClient) -> None:
    uri = _uri("e2e_supersede.py")
    _open(engine_client, uri, "class Queue:\n    def __init__(self):\n")
    before = await stats(engine_client)
    first = asyncio.ensure_future(_inline(engine_client, uri, 2, 0))
    await _wait_engine_request(engine_client, before["engine_requests"] + 1)
    second = await _inline(engine_client, uri, 2, 0)
    first_result = await first
    assert first_result is not None and not first_result.items
    assert second is not None
    after = await stats(engine_client)
    assert after["engine_aborted"] == before["engine_aborted"] + 1
    assert after["superseded"] == before["superseded"] + 1


async def test_bad_input_keeps_server_answering(engine_client: LanguageClient) -> None:
    uri = _uri("e2e_bad.py")
    _open(engine_client, uri, "def add(a, b):\n    return ")
    # A position past the end: a clear InvalidParams error naming the position.
    with pytest.raises(JsonRpcException) as err:
        await _inline(engine_client, uri, 50, 0)
    assert err.value.code == types.ErrorCodes.InvalidParams
    assert "50" in str(err.value)
    # An unknown document.
    with pytest.raises(JsonRpcException) as err:
        await _inline(engine_client, _uri("never_opened.py"), 0, 0)
    assert "never_opened" in str(err.value)
    # Params that do not deserialize: pygls alone would never answer this one.
    with pytest.raises(JsonRpcException) as err:
        await send_raw(
            engine_client, "bad-params-1", types.TEXT_DOCUMENT_INLINE_COMPLETION,
            {"textDocument": {"uri": uri}, "position": {"line": "zero", "character": 0},
             "context": {"triggerKind": 1}},
        )
    assert err.value.code == types.ErrorCodes.InvalidParams
    assert "line" in str(err.value)
    # A 10 MB document is tracked but never sent to the model: an empty answer.
    big = _uri("e2e_big.py")
    _open(engine_client, big, "x = 1\n" * (10_000_000 // 6))
    result = await _inline(engine_client, big, 5, 0)
    assert result is not None and not result.items
    # Binary content: empty answer too.
    binary = _uri("e2e_binary.bin")
    _open(engine_client, binary, "\x00\x01\x02ELF\x00" * 100, language="plaintext")
    result = await _inline(engine_client, binary, 0, 3)
    assert result is not None and not result.items
    # A malformed setting is reported and replaced by its default; nothing breaks.
    engine_client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspCopilot": {"maxPromptTokens": "lots"}})
    )
    # And after all that, a real completion still comes back.
    result = await _inline(engine_client, uri, 1, len("    return "))
    assert result is not None and result.items and result.items[0].insert_text.strip()
    warnings = [m.message for m in engine_client.messages]
    assert any("maxPromptTokens" in m for m in warnings), warnings
    assert any("e2e_big.py" in m for m in warnings), warnings
