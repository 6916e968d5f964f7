"""Logs never contain source text unless the user asks for it (issue 7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

MARKER = "def zebra_quokka_marker_1234(): pass"


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _stderr_of_session(env_extra: dict[str, str], options: dict[str, Any]) -> str:
    """A whole session at --log-level debug; returns what the server logged."""
    frames = b"".join(_frame(m) for m in (
        {"id": 1, "method": "initialize",
         "params": {"capabilities": {}, "initializationOptions": options}},
        {"method": "initialized", "params": {}},
        {"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": "file:///tmp/logs_test.py", "languageId": "python", "version": 1,
            "text": MARKER + "\n"}}},
        {"id": 2, "method": "textDocument/inlineCompletion", "params": {
            "textDocument": {"uri": "file:///tmp/logs_test.py"},
            "position": {"line": 0, "character": 4}, "context": {"triggerKind": 2}}},
        {"id": 3, "method": "shutdown"},
        {"method": "exit"},
    ))
    env = {k: v for k, v in os.environ.items() if k != "LSP_COPILOT_LOG_SOURCE_TEXT"}
    env.update(env_extra)
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_copilot", "--log-level", "debug", "serve"],
        input=frames, capture_output=True, timeout=60, env=env)
    assert b'"id": 3' in proc.stdout or b'"id":3' in proc.stdout, proc.stderr[-2000:]
    return proc.stderr.decode("utf-8", "replace")


# pygls logs each message it sends ("Sending data: <body>": completions, i.e. code) at
# INFO; nothing of the client's messages reaches the log unless that logging is on.
BODIES = "Sending data:"


def test_debug_logs_contain_no_message_bodies() -> None:
    logged = _stderr_of_session({}, {"enable": False})
    assert "DEBUG" in logged  # the server did log at debug level
    assert BODIES not in logged
    assert "zebra_quokka" not in logged


def test_message_bodies_logged_only_when_asked() -> None:
    assert BODIES in _stderr_of_session({"LSP_COPILOT_LOG_SOURCE_TEXT": "1"}, {"enable": False})
    assert BODIES in _stderr_of_session({}, {"enable": False, "logSourceText": True})
