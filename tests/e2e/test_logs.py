"""Logs never contain source text unless the user asks for it (issue 7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
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
    with tempfile.TemporaryDirectory() as tmp:  # the log file: not the user's
        env["LSP_COPILOT_LOG_FILE"] = os.path.join(tmp, "server.log")
        proc = subprocess.run(
            [sys.executable, "-m", "lsp_copilot", "--log-level", "debug", "serve"],
            input=frames, capture_output=True, timeout=60, env=env)
        assert b'"id": 3' in proc.stdout or b'"id":3' in proc.stdout, proc.stderr[-2000:]
        logged = proc.stderr.decode("utf-8", "replace")
        assert logged.splitlines()[-1] in Path(env["LSP_COPILOT_LOG_FILE"]).read_text()
    return logged


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


def _messages(stream: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages in a stream of Content-Length frames."""
    out, rest = [], stream
    while b"\r\n\r\n" in rest:
        header, rest = rest.split(b"\r\n\r\n", 1)
        length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
        out.append(json.loads(rest[:length]))
        rest = rest[length:]
    return out


def test_log_file_tags_request_lines_and_warnings_reach_the_editor(tmp_path) -> None:  # type: ignore[no-untyped-def]
    log_file = tmp_path / "logs" / "server.log"
    frames = b"".join(_frame(m) for m in (
        {"id": 1, "method": "initialize",
         "params": {"capabilities": {}, "initializationOptions": {"enable": False}}},
        {"method": "initialized", "params": {}},
        {"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": "file:///tmp/logs_tag.py", "languageId": "python", "version": 1,
            "text": MARKER + "\n"}}},
        {"method": "textDocument/didOpen", "params": {}},  # invalid: a warning
        {"id": "tagged-7", "method": "textDocument/inlineCompletion", "params": {
            "textDocument": {"uri": "file:///tmp/logs_tag.py"},
            "position": {"line": 0, "character": 4}, "context": {"triggerKind": 2}}},
        {"id": 3, "method": "shutdown"},
        {"method": "exit"},
    ))
    env = {k: v for k, v in os.environ.items() if k != "LSP_COPILOT_LOG_SOURCE_TEXT"}
    env["LSP_COPILOT_LOG_FILE"] = str(log_file)
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_copilot", "--log-level", "debug", "serve"],
        input=frames, capture_output=True, timeout=60, env=env)
    logged = log_file.read_text()
    request_lines = [ln for ln in logged.splitlines() if "logs_tag.py:0:4" in ln]
    assert request_lines and all("[req tagged-7]" in ln for ln in request_lines), logged
    warning = [ln for ln in logged.splitlines() if "invalid params for textDocument/didOpen" in ln]
    assert warning and "[req " not in warning[0]  # a notification: no request id
    assert "zebra_quokka" not in logged
    # Warnings also go to the editor, as window/logMessage.
    messages = _messages(proc.stdout)
    assert any(m.get("method") == "window/logMessage"
               and "invalid params for textDocument/didOpen" in m["params"]["message"]
               for m in messages), proc.stdout[-2000:]
