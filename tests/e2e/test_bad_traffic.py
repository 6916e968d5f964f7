"""Broken traffic through the real protocol (no engine): skipped, answered, told once."""

from __future__ import annotations

import asyncio
import json

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp import send_raw, stats


def _write(client: LanguageClient, data: bytes) -> None:
    client.protocol.writer.write(data)


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def test_broken_messages_are_skipped_and_told_once(light_client: LanguageClient) -> None:
    before = len(light_client.messages)
    for body in (b"{", b"nul", b"[1, 2", b"{}}", b"\xff\xfe"):  # invalid JSON
        _write(light_client, _frame(body))
    for junk in (b"garbage line\r\n", b"Content-Length: abc\r\n\r\nnot a body\r\n"):
        _write(light_client, junk)  # malformed frames
    for method in ("$/fuzz", "custom/thing"):  # unknown notifications, bad notification params
        _write(light_client, _frame(json.dumps({"jsonrpc": "2.0", "method": method}).encode()))
    _write(light_client, _frame(json.dumps({
        "jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"x": 1}}).encode()))
    # The connection survived: the next request is answered. The server handles messages
    # in order and tells synchronously, so any popup came before this answer.
    await asyncio.wait_for(stats(light_client), 30)
    popups = [m for m in light_client.messages[before:] if m.type <= types.MessageType.Warning]
    assert len(popups) <= 1, [m.message for m in popups]  # not one popup per bad message


async def test_accept_command_without_arguments_is_not_an_internal_error(
    light_client: LanguageClient,
) -> None:
    result = await send_raw(light_client, "no-args", "workspace/executeCommand",
                            {"command": "lspCopilot.didAccept"})
    assert result is None
