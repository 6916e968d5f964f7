"""`lsp-copilot bench coldstart`: how long a new user waits for the first typing
suggestion, the engine that answers typing loaded first or last, side by side in one run.

Each variant starts a real server over stdio with no engine running (a fresh runtime
folder: nothing shared is warm), opens a small file and asks for an automatic (typing)
suggestion at a pause every half second until one comes back non-empty; it records when,
which route answered, and when each engine was ready. With shared engines a second server
then starts as a restarted editor would, and finds them warm. The engines a variant started
are stopped before the next one, so each load has the machine to itself.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types

from lsp_copilot_bench.runtime import private_runtime

STATS = "lspCopilot/stats"
SOURCE = (
    "import json\n\n\n"
    "def load_settings(path):\n"
    "    with open(path) as handle:\n"
    "        data = json.load(handle)\n"
    "    return \n"
)
POSITION = types.Position(6, len("    return "))
VARIANTS = (("in-server-main-first", {"engineLoadOrder": "main-first", "engineShared": False}),
            ("main-first", {"engineLoadOrder": "main-first"}),
            ("typing-first", {"engineLoadOrder": "typing-first"}))
"""The engines inside the server, main first (as before shared engines), then shared."""
LIMIT_S = 900.0


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


async def _session(options: dict[str, Any], env: dict[str, str], root: Path
                   ) -> dict[str, Any]:
    """One server from its start to its first typing suggestion and every engine ready."""
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("bench-coldstart", "1")
    started = time.monotonic()
    await client.start_io(sys.executable, "-m", "lsp_copilot", "serve", env=env)
    server = client._server
    assert server is not None and server.stderr is not None
    drain = asyncio.ensure_future(server.stderr.read())  # a full pipe would block it
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=root.as_uri(),
        initialization_options={**options, "cache": False}))
    client.initialized(types.InitializedParams())
    uri = (root / "settings_loader.py").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri, "python", 1, SOURCE)))
    ready: dict[str, float] = {}
    first: float | None = None
    route = None
    tries = 0
    while time.monotonic() - started < LIMIT_S:
        tries += 1
        result = await client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=POSITION,
                context=types.InlineCompletionContext(
                    trigger_kind=types.InlineCompletionTriggerKind.Automatic)))
        stats = _plain(await client.protocol.send_request_async(STATS, {}))
        now = time.monotonic() - started
        if stats["engine_state"] == "ready":
            ready.setdefault("main", round(now, 1))
        for kind, info in stats.get("routes", {}).items():
            if info["state"] == "ready":
                ready.setdefault(f"{kind}:{info['route']}", round(now, 1))
        items = result.items if isinstance(result, types.InlineCompletionList) else result
        if items and first is None:
            first = round(now, 1)
            answered = stats["routes"]["singleLine"]["answered"]
            route = answered[-1]["route"] if answered else None
        if first is not None and len(ready) > len(stats.get("routes", {})):
            break  # every engine is up: the loads are recorded too
        await asyncio.sleep(0.5)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    drain.cancel()
    return {"first_typing_suggestion_s": first, "answered_by": route,
            "engines_ready_s": ready, "requests": tries}


async def _variant(name: str, options: dict[str, Any], root: Path) -> dict[str, Any]:
    """A cold start; with shared engines also a restart that finds them warm."""
    with private_runtime() as env:
        row = {"variant": name, **await _session(options, env, root)}
        if options.get("engineShared", True):
            warm = await _session(options, env, root)
            row["warm_restart_first_suggestion_s"] = warm["first_typing_suggestion_s"]
    return row


async def _run(root: Path) -> dict[str, Any]:
    rows = [await _variant(name, options, root) for name, options in VARIANTS]
    by = {r["variant"]: r["first_typing_suggestion_s"] for r in rows}
    best = by["typing-first"]
    ratios = {name: (round(t / best, 2) if t and best else None)
              for name, t in by.items() if name != "typing-first"}
    return {"variants": rows, "typing_first_sooner_than": ratios}


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lc-cold-ws-") as folder:
        return asyncio.run(_run(Path(folder)))
