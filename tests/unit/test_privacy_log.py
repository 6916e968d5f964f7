"""With ``logSourceText`` off (the default), a server logging at debug level writes neither
the user's code nor what the model wrote: not for an answer shown, nor for one dropped."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from lsprotocol import types

from lsp_copilot.server.handlers import completion, documents, feedback
from tests.support.fakes import FakeEngine
from tests.support.pipeline import server_for

SOURCE = "SOURCE_TEXT_zq41"
SHOWN = "MODEL_SHOWN_5e1a"
DROPPED = "MODEL_DROPPED_91c4"


async def test_a_debug_log_holds_no_source_and_no_model_text(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    engine = FakeEngine(f" {SHOWN}\n", step_s=0)
    ls = await server_for(engine, acceptance_file=str(tmp_path / "acceptance.sqlite3"))
    ls.apply_settings_now()
    text = f"def {SOURCE}(a, b):\n    return "
    uri = (tmp_path / "calc.py").as_uri()
    position = types.Position(1, len("    return "))
    with caplog.at_level(logging.DEBUG):
        documents.did_open(ls, types.DidOpenTextDocumentParams(types.TextDocumentItem(
            uri=uri, language_id="python", version=1, text=text)))
        shown = await completion.inline_completion(ls, types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=position,
            context=types.InlineCompletionContext(
                types.InlineCompletionTriggerKind.Invoked)))
        assert shown.items and SHOWN in str(shown.items[0].insert_text)
        command = shown.items[0].command
        assert command is not None and command.arguments
        feedback.accept_command(ls, command.arguments)
        # An answer the checks drop entirely: the log says why, never what it was.
        engine.reply = f" self.{DROPPED}.("
        documents.did_change(ls, types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [types.TextDocumentContentChangeWholeDocument(text=text + " ")]))
        dropped = await completion.inline_completion(ls, types.InlineCompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(1, len("    return  ")),
            context=types.InlineCompletionContext(
                types.InlineCompletionTriggerKind.Invoked)))
        assert not dropped.items
    assert any(r.levelno == logging.DEBUG for r in caplog.records)  # it did log at debug
    assert "left nothing" in caplog.text
    for marker in (SOURCE, SHOWN, DROPPED):
        assert marker not in caplog.text, marker
