"""Acceptance records through the real server and engine, fed by the feedback an editor
client sends (ids from the items' commands, and the older id-less form), then read back
with `lsp-copilot stats --json` as a user would."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_copilot.acceptance import experiment
from lsp_copilot.settings.arms import experiment_arms
from lsp_copilot.settings.core import Settings, parse_settings
from tests.support.lsp import edit_doc, fixture_uri, inline, open_doc, plain, stats

pytestmark = pytest.mark.engine

INVOKED = types.InlineCompletionTriggerKind.Invoked
EXPERIMENT = {"a": {}, "b": {"maxTokensSingleLine": 12}}


def _configure(client: LanguageClient, settings: dict[str, Any]) -> None:
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspCopilot": settings}))


async def _suggest(client: LanguageClient, name: str, source: str) -> tuple[str, int, int, dict]:
    """Open ``source`` and ask (explicitly: an answer is sure) at the end of its last line;
    return the uri, the position and the item's command arguments."""
    uri = fixture_uri(name)
    open_doc(client, uri, source)
    line, col = source.count("\n"), len(source.rsplit("\n", 1)[-1])
    result = await inline(client, uri, line, col, INVOKED)
    assert result is not None and result.items, f"no suggestion in {name}"
    item = result.items[0]
    (args,) = plain(item.command.arguments)
    assert args["text"] == item.insert_text and args["uri"] == uri
    assert isinstance(args["id"], str) and args["id"]
    return uri, line, col, args


def _stats_json(path: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "lsp_copilot", "stats", "--json", "--file",
                          str(path)], capture_output=True, text=True, timeout=60, check=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


async def test_feedback_outcomes_reach_lsp_copilot_stats(
        engine_client: LanguageClient, tmp_path: Path) -> None:
    path = tmp_path / "outcomes.sqlite3"  # this test's own file, switched to by a setting
    _configure(engine_client, {"acceptanceFile": str(path), "experiment": EXPERIMENT})
    try:
        await _run_session(engine_client, path)
    finally:
        _configure(engine_client, {"experiment": None})


async def _run_session(client: LanguageClient, path: Path) -> None:
    notify = client.protocol.notify
    before = (await stats(client))["outcomes"]

    # 1. Typed through: key by key, each rest answered under the same id, as the clients
    # replace (reject) the old item and show the rest; then the document closes.
    uri, line, col, args = await _suggest(client, "acc_add.py",
                                          "def add(a, b):\n    return ")
    text = args["text"]
    assert "\n" not in text and text.isascii() and len(text) >= 2, text
    notify("lspCopilot/didShow", args)
    shown: dict[str, Any] | None = args
    continued = 0
    for i, ch in enumerate(text[:-1]):
        edit_doc(client, uri, 2 + i, line, col + i, ch)
        rest = await inline(client, uri, line, col + i + 1)
        if shown is not None:
            notify("lspCopilot/didReject", shown)
        shown = None  # (no rest where typing it needs none, e.g. in a comment)
        if rest.items:
            assert rest.items[0].insert_text == text[i + 1:], (text, i, rest)
            (shown,) = plain(rest.items[0].command.arguments)
            assert shown["id"] == args["id"]  # the same suggestion, continued
            notify("lspCopilot/didShow", shown)
            continued += 1
    assert continued >= 1
    edit_doc(client, uri, 1 + len(text), line, col + len(text) - 1, text[-1])
    if shown is not None:
        notify("lspCopilot/didReject", shown)  # the client drops it: nothing left to show
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))

    # 2. Accepted through the item's own command (workspace/executeCommand), by id.
    uri, line, col, args = await _suggest(client, "acc_scale.py",
                                          "def scale(values, factor):\n    return ")
    notify("lspCopilot/didShow", args)
    edit_doc(client, uri, 2, line, col, args["text"])
    await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="lspCopilot.didAccept", arguments=[args]))

    # 3. Partly accepted: the first character only (acceptedChars), by id.
    uri, line, col, args = await _suggest(client, "acc_mean.py",
                                          "def mean(xs):\n    total = sum(xs)\n    return ")
    assert len(args["text"]) >= 2, args
    notify("lspCopilot/didShow", args)
    edit_doc(client, uri, 2, line, col, args["text"][:1])
    notify("lspCopilot/didAccept", {**args, "acceptedChars": 1})

    # 4. An older client without ids: shown, rejected, then the user types on.
    uri, line, col, args = await _suggest(client, "acc_area.py",
                                          "import math\n\ndef area(r):\n    return ")
    old = {k: args[k] for k in ("uri", "position", "text")}
    notify("lspCopilot/didShow", old)
    notify("lspCopilot/didReject", old)
    edit_doc(client, uri, 2, line, col, "@@")  # (no suggestion starts so)

    counts = (await stats(client))["outcomes"]  # (a round trip: the notifications are in)
    for outcome in ("accepted", "partly_accepted", "rejected", "typed_through"):
        assert counts[outcome] == before[outcome] + 1, (outcome, counts)
    assert counts["write_errors"] == 0

    report = _stats_json(path)
    assert report["file"] == str(path)
    assert (report["shown"], report["accepted"], report["partly_accepted"],
            report["rejected"], report["typed_through"]) == (4, 1, 1, 1, 1)
    assert report["acceptance"] == 0.5 and report["ci95"][0] < 0.5 < report["ci95"][1]
    engine = (await stats(client))["engine"]
    by = {key: {row["value"]: row["shown"] for row in rows}
          for key, rows in report["by"].items()}
    assert by["route"] == {"main": 4} and by["language"] == {"python": 4}  # explicit: main
    assert by["mode"] == {"explicit": 4}
    assert by["model"] == {Path(engine["model"]).name: 4}
    assert by["template"] == {engine["template"]: 4}
    # Each line's arm is the one the setting's stable hash gives it.
    exp = experiment.build(experiment_arms(parse_settings({"experiment": EXPERIMENT})[0])[0],
                           Settings().engine)
    assert exp is not None
    arms = [exp.choose(fixture_uri(name), line)[0] for name, line in (
        ("acc_scale.py", 1), ("acc_mean.py", 2), ("acc_area.py", 3), ("acc_add.py", 1))]
    assert by["experiment"] == {"a vs b": 4}
    assert by["arm"] == {arm: arms.count(arm) for arm in set(arms)}
    (compared,) = report["experiments"]
    assert sum(arm["shown"] for arm in compared["arms"]) == 4
    assert b"return" not in path.read_bytes()  # no code text in the file


async def test_an_arm_with_another_model_runs_both_engines_and_the_report_compares_them(
        engine_client: LanguageClient, tmp_path: Path) -> None:
    """`{"qwen": {}, "smol": {"model": "smollm2-135m"}}`: the arm's lines are answered by
    the small model's engine (loaded beside the main one), the others by the main engine,
    and `lsp-copilot stats --by model` tells them apart."""
    path = tmp_path / "arms.sqlite3"
    arms = {"main": {}, "smol": {"model": "smollm2-135m"}}
    _configure(engine_client, {"acceptanceFile": str(path), "experiment": arms})
    try:
        exp = experiment.build(experiment_arms(parse_settings({"experiment": arms})[0])[0],
                               Settings().engine)
        assert exp is not None
        for _ in range(1200):  # the arm's engine: loaded already, or loading now
            s = await stats(engine_client)
            states = {r["state"] for r in s["experiment_routes"].get("smol", {}).values()}
            if states == {"ready"}:
                break
            await asyncio.sleep(0.5)
        assert states == {"ready"}, s["experiment_routes"]
        names = {exp.choose(fixture_uri(f"arm_{i}.py"), 1)[0]: f"arm_{i}.py"
                 for i in range(20)}
        for arm in ("main", "smol"):
            uri, line, col, args = await _suggest(engine_client, names[arm],
                                                  "def add(a, b):\n    return ")
            engine_client.protocol.notify("lspCopilot/didShow", args)
            edit_doc(engine_client, uri, 2, line, col, args["text"])
            engine_client.protocol.notify("lspCopilot/didAccept", args)
        await stats(engine_client)  # (a round trip: the notifications are in)
    finally:
        _configure(engine_client, {"experiment": None})
    main_model = Path((await stats(engine_client))["engine"]["model"]).name
    out = subprocess.run([sys.executable, "-m", "lsp_copilot", "stats", "--by", "model",
                          "--json", "--file", str(path)], capture_output=True, text=True,
                         timeout=60, check=True)
    report = json.loads(out.stdout)
    assert {row["value"]: row["accepted"] for row in report["by"]["model"]} == {
        main_model: 1, "smollm2-135m": 1}
    (compared,) = report["experiments"]
    assert [(a["arm"], a["shown"]) for a in compared["arms"]] == [("main", 1), ("smol", 1)]
    assert "difference" in compared
