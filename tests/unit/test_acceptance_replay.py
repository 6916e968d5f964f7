"""A recorded session replayed through the server's handlers: does `lsp-copilot stats`
tell the arms of an experiment apart when one is worse, and not when they are the same?

The session is the typing of a real module (the standard library's ``heapq``): at every
line that assigns or returns, the user pauses after ``= `` or ``return ``, sees the
suggestion, and accepts it when it is the rest of the line, else rejects it and types the
line. The main engine is scripted to answer the rest of the line at two pauses in three
(the others: a wrong value); the worse arm's model answers ``None`` everywhere.
"""

from __future__ import annotations

import heapq
import inspect
import re
import zlib
from pathlib import Path
from typing import Any

from lsprotocol import types

from lsp_copilot.acceptance import report
from lsp_copilot.acceptance.store import read
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.server.handlers import completion, documents, feedback
from lsp_copilot.server.state import CopilotServer
from tests.support.fakes import FakeEngine
from tests.support.pipeline import server_for

URI = "file:///w/heapq.py"
PAUSE = re.compile(r"^(\s+(?:return |[a-z_][a-z_0-9]* = ))(\S.*)$")


def _session() -> tuple[list[str], list[tuple[int, str, str]]]:
    """The module's lines, and each pause: (line, what is typed before it, the rest)."""
    lines = inspect.getsource(heapq).splitlines()
    pauses = [(i, m.group(1), m.group(2)) for i, line in enumerate(lines)
              if (m := PAUSE.match(line))]
    return lines, pauses


class Scripted(FakeEngine):
    """The main engine: the test sets the answer of the next request."""


async def _replay(tmp_path: Path, arms: dict[str, Any]) -> dict[str, Any]:
    main = Scripted("", 0.0005, "good-model")
    ls: CopilotServer = await server_for(main, None, cache=False, max_suggestions=1,
                                         routes=(), acceptance_file=str(tmp_path / "a.db"),
                                         experiment=tuple(arms.items()))
    junk = FakeEngine(" None\n", 0.0005, "junk-model")
    ls.routes._make_manager = lambda: EngineManager(factory=lambda s, report: junk)
    assert ls.apply_experiment() == []
    await ls.routes.start(ls.hub.settings.engine_setup, "cpu", lambda _: None)
    for name in {a.get("model") for a in arms.values()} - {None}:
        manager = ls.routes.manager_named(name)
        assert manager is not None
        await manager.wait_ready()

    lines, pauses = _session()
    typed = list(lines)
    for i, head, _ in pauses:
        typed[i] = head  # the rest of the line is what the user is about to type
    documents.did_open(ls, types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=URI, language_id="python", version=1, text="\n".join(typed))))
    version = 1
    for i, head, rest in pauses:
        right = zlib.crc32(lines[i].encode()) % 3 != 0
        main.reply = (rest if right else "0") + "\n"
        at = types.Position(i, len(head))
        answer = await completion.inline_completion(ls, types.InlineCompletionParams(
            context=types.InlineCompletionContext(
                trigger_kind=types.InlineCompletionTriggerKind.Automatic),
            text_document=types.TextDocumentIdentifier(uri=URI), position=at))
        item = answer.items[0] if answer.items else None
        args = item.command.arguments[0] if item and item.command and item.command.arguments \
            else None
        if args:
            feedback.did_show(ls, args)
        version += 1
        documents.did_change(ls, types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=at, end=at), text=rest)]))
        if args and args["text"] == rest:
            feedback.did_accept(ls, args)
        elif args:
            feedback.did_reject(ls, args)
    ls.acceptance.flush()
    records = read(tmp_path / "a.db")
    assert len(records) > 60, len(records)
    (compared,) = report.build(records)["experiments"]
    result: dict[str, Any] = compared
    return result


async def test_an_arm_whose_model_answers_nothing_useful_is_told_apart(tmp_path: Path) -> None:
    result = await _replay(tmp_path, {"good": {}, "bad": {"model": "junk-model"}})
    good, bad = result["arms"]
    assert good["acceptance"] > 0.4 and bad["acceptance"] == 0.0, result
    diff = result["difference"]
    assert diff["of"] == "bad - good" and diff["ci95"][1] < 0 and diff["significant"], diff


async def test_two_arms_alike_are_not_told_apart(tmp_path: Path) -> None:
    result = await _replay(tmp_path, {"a": {}, "b": {}})
    lo, hi = result["difference"]["ci95"]
    assert lo < 0 < hi and not result["difference"]["significant"], result
    assert all(a["shown"] > 25 for a in result["arms"]), result
