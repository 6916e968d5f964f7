#!/usr/bin/env python3
"""A recorded session for the acceptance report: a scripted user types real functions
through `lsp-copilot serve` and reacts to the ghost text as an editor client reports it.

The keystrokes are `lsp-copilot bench typing`'s (real functions, human gaps, typos fixed
with backspace), typed into a copy of the corpus without the typed functions. A request
goes out per keystroke (the previous one cancelled). At a pause the user waits up to
WAIT_S for ghost text; the client shows it (didShow, with the item's id) and the user
compares it with what they were about to type:
- all of it right: Tab (didAccept), or, for a suggestion of at most SHORT characters,
  typed on through;
- right up to a word boundary at least WORD characters in: those words accepted
  (didAccept with acceptedChars);
- wrong from the start: typed past; the client rejects it at the first keystroke it does
  not match (didReject).
The functions are split between two server processes, one after the other, so that the
report also shows the records surviving a restart. Then it prints `lsp-copilot stats`.

usage: scripts/acceptance-session.py CORPUS OUT [--keystrokes N] [--model M]
                                     [--experiment JSON]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from lsprotocol import types

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lsp_copilot_bench.typing_replay import (  # noqa: E402
    PAUSE_MS,
    Script,
    _drain,
    _plain,
    make_scripts,
    workspace_without_answers,
)

WAIT_S = 3.0  # --wait
SHORT = 3
WORD = 4


def _words(suggestion: str, truth: str) -> int:
    """Characters of ``suggestion`` that are right, cut back to a word boundary."""
    n = 0
    while n < len(suggestion) and n < len(truth) and suggestion[n] == truth[n]:
        n += 1
    if n == len(suggestion):
        return n
    while n > 0 and (suggestion[n - 1].isalnum() or suggestion[n - 1] == "_"):
        n -= 1
    return n


class Session:
    def __init__(self, client: Any, wait_s: float = WAIT_S) -> None:
        self.client = client
        self.wait_s = wait_s
        self.ids = iter(range(1, 10**9))
        self.tally = {"pauses": 0, "shown": 0, "accepted": 0, "partly": 0}

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.client.protocol.notify(method, params)

    async def type_script(self, script: Script) -> None:
        c = self.client
        truth = ""  # the net text the keys produce (typos removed)
        for k in script.keys:
            truth = truth[:-1] if k.text is None else truth + k.text
        before = [0]  # the position before each key
        for k in script.keys:
            before.append(before[-1] + (-1 if k.text is None else 1))
        text, version = script.before, 1
        c.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
            script.uri, "python", version, text)))
        shown: dict[str, Any] | None = None
        rest = ""  # what of the shown suggestion is still untyped
        pending: tuple[str, asyncio.Future[Any]] | None = None
        i = 0
        while i < len(script.keys):
            key = script.keys[i]
            if shown is not None and rest:
                if key.text is not None and rest.startswith(key.text):
                    rest = rest[len(key.text):]  # typing it: the ghost text stays
                else:
                    self.notify("lspCopilot/didReject", shown)
                    shown, rest = None, ""
            if pending is not None and not pending[1].done():
                c.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=pending[0]))
            text, version = self._edit(script.uri, text, version, key.text)
            pending = self._request(script.uri, text)
            i += 1
            if key.gap_ms < PAUSE_MS:
                await asyncio.sleep(key.gap_ms / 1000)
                continue
            self.tally["pauses"] += 1
            try:
                result = await asyncio.wait_for(asyncio.shield(pending[1]),
                                                max(self.wait_s, key.gap_ms / 1000))
            except (asyncio.TimeoutError, Exception):
                continue
            items = result.items if result is not None else []
            if not items or not items[0].insert_text:
                if shown is not None and not rest:
                    shown = None  # typed to its end: nothing left to show or reject
                continue
            (args,) = _plain(items[0].command.arguments)
            if shown is not None and shown != args:
                self.notify("lspCopilot/didReject", shown)  # replaced on screen
            if shown != args:
                self.notify("lspCopilot/didShow", args)
                self.tally["shown"] += 1
            shown, rest = args, args["text"]
            done = len(text) - len(script.before)
            ahead = truth[done:]
            suggestion = args["text"]
            if ahead.startswith(suggestion) and len(suggestion) <= SHORT:
                continue  # typed through
            take = len(suggestion) if ahead.startswith(suggestion) else _words(suggestion, ahead)
            if take < (1 if ahead.startswith(suggestion) else WORD):
                continue  # wrong: typed past
            text, version = self._edit(script.uri, text, version, suggestion[:take])
            params = dict(args)
            if take < len(suggestion):
                params["acceptedChars"] = take
                self.tally["partly"] += 1
            else:
                self.tally["accepted"] += 1
            self.notify("lspCopilot/didAccept", params)
            shown, rest = None, ""
            target = done + take  # skip the keys the accepted text stands for
            while i < len(script.keys) and not (before[i] == target and
                                                script.keys[i].text is not None):
                i += 1
        if pending is not None and not pending[1].done():
            c.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=pending[0]))
        await asyncio.sleep(0.3)
        c.text_document_did_close(types.DidCloseTextDocumentParams(
            types.TextDocumentIdentifier(script.uri)))

    def _edit(self, uri: str, text: str, version: int, insert: str | None
              ) -> tuple[str, int]:
        line = text.count("\n")
        col = len(text) - (text.rfind("\n") + 1)
        start = types.Position(line, col)
        if insert is None:  # backspace over an ASCII character
            change = types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(line, col - 1), start), text="")
            text = text[:-1]
        else:
            change = types.TextDocumentContentChangePartial(
                range=types.Range(start, start), text=insert)
            text += insert
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=version + 1, uri=uri), [change]))
        return text, version + 1

    def _request(self, uri: str, text: str) -> tuple[str, asyncio.Future[Any]]:
        msg_id = f"session-{next(self.ids)}"
        line = text.count("\n")
        col = len(text) - (text.rfind("\n") + 1)
        fut = asyncio.ensure_future(self.client.protocol.send_request_async(
            types.TEXT_DOCUMENT_INLINE_COMPLETION,
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri),
                position=types.Position(line, col),
                context=types.InlineCompletionContext(
                    trigger_kind=types.InlineCompletionTriggerKind.Automatic)),
            msg_id=msg_id))
        fut.add_done_callback(lambda f: f.cancelled() or f.exception())
        return msg_id, fut


async def run_server(scripts: list[Script], root: Path, options: dict[str, Any],
                     log: Path, wait_s: float) -> dict[str, Any]:
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("acceptance-session", "1")
    await client.start_io(sys.executable, "-m", "lsp_copilot", "serve")
    assert client._server is not None and client._server.stderr is not None
    drain = asyncio.ensure_future(_drain(client._server.stderr, log))  # a full pipe blocks
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=root.as_uri(),
        initialization_options=options))
    client.initialized(types.InitializedParams())
    while (s := _plain(await client.protocol.send_request_async("lspCopilot/stats", {})))[
            "engine_state"] == "loading":
        await asyncio.sleep(0.5)
    if s["engine_state"] != "ready":
        raise SystemExit(f"engine failed: {s['engine_error']}")
    session = Session(client, wait_s)
    for script in scripts:
        await session.type_script(script)
    after = _plain(await client.protocol.send_request_async("lspCopilot/stats", {}))
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    await asyncio.wait_for(drain, 10)
    return {"client": session.tally, "server": after["outcomes"],
            "engine": after["engine"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--keystrokes", type=int, default=2000)
    parser.add_argument("--model")
    parser.add_argument("--wait", type=float, default=WAIT_S,
                        help="seconds the user waits for ghost text at a pause")
    parser.add_argument("--experiment", type=json.loads,
                        help='settings of two arms, e.g. \'{"a": {}, "b": {...}}\'')
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    outcomes = args.out / "acceptance.sqlite3"
    outcomes.unlink(missing_ok=True)
    scripts = make_scripts(args.corpus, args.keystrokes)
    root = args.out / "workspace"
    workspace_without_answers(args.corpus, scripts, root)
    options: dict[str, Any] = {"acceptanceFile": str(outcomes),
                               "cacheDir": str(args.out / "completions")}
    if args.model:
        options["model"] = args.model
    if args.experiment:
        options["experiment"] = args.experiment
    half = len(scripts) // 2
    runs = []
    for n, part in enumerate((scripts[:half], scripts[half:]), 1):  # two servers, in turn
        runs.append(asyncio.run(run_server(part, root, options,
                                           args.out / f"server-{n}.log", args.wait)))
    (args.out / "session.json").write_text(json.dumps(runs, indent=2))
    print(json.dumps(runs, indent=2))
    stats = [sys.executable, "-m", "lsp_copilot", "stats", "--file", str(outcomes)]
    with open(args.out / "stats.json", "w") as out:
        subprocess.run([*stats, "--json"], check=True, stdout=out)
    return subprocess.run(stats, check=False, env=os.environ).returncode


if __name__ == "__main__":
    sys.exit(main())
