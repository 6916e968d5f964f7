"""`lsp-copilot complete` and `lsp-copilot context`: one completion, or the prompt it
would get, at FILE:LINE:COL."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_copilot.cli.options import MODEL_HELP, VERBOSE_HELP, Subparsers
from lsp_copilot.settings.engine import WEIGHTS

if TYPE_CHECKING:
    from lsp_copilot.settings.hub import SettingsHub

log = logging.getLogger("lsp_copilot")


def _parse_location(value: str) -> tuple[Path, int, int]:
    try:
        path, line, col = value.rsplit(":", 2)
        return Path(path), int(line), int(col)
    except ValueError:
        raise SystemExit(f"error: expected FILE:LINE:COL (1-based), got {value!r}") from None


async def _complete(args: argparse.Namespace) -> dict[str, Any]:
    from lsp_copilot.cli.context_audit import find_root
    from lsp_copilot.context.budgets import budgets_for
    from lsp_copilot.context.index.workspace import Workspace
    from lsp_copilot.context.index.workspace_index import WorkspaceIndex
    from lsp_copilot.documents.buffer import PositionError
    from lsp_copilot.documents.store import DocumentStore
    from lsp_copilot.engine.manager import EngineManager
    from lsp_copilot.language.ids import language_id_for_path
    from lsp_copilot.pipeline.completer import Completer
    from lsp_copilot.privacy import Privacy
    from lsp_copilot.privacy.ignore import RepoIgnores
    from lsp_copilot.telemetry import Telemetry

    path, line, col = _parse_location(args.location)
    try:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
    except OSError as exc:
        raise SystemExit(f"error: cannot read {path}: {exc.strerror}") from None
    # An explicit request: the user asked for one completion and waits for the whole of it.
    hub = _settings(args, maxSuggestions=1)  # one is printed
    settings = hub.settings
    store = DocumentStore(settings.max_document_bytes)
    uri = path.resolve().as_uri()
    store.open(uri, language_id_for_path(str(path)), 0, text)
    try:
        # Columns count characters (code points), like most compilers' messages.
        offset = store.get_offset(uri, line - 1, col - 1, "utf-32")
    except PositionError as exc:
        raise SystemExit(f"error: {path}:{line}:{col}: {exc}") from None
    # The same context as the server's: the workspace index of --root (or the nearest
    # folder with a .git), built while the engine loads.
    root = args.root or find_root(path)
    ignores = RepoIgnores()  # the root's `.lspcopilotignore`, as the server reads it
    ignores.add(root)
    privacy = Privacy(ignores=ignores)
    index = WorkspaceIndex(root)
    index.private = privacy.reason
    index_task = asyncio.ensure_future(asyncio.to_thread(index.build))
    workspace = Workspace(index, lambda: [(uri, text)])
    engines = EngineManager()
    telemetry = Telemetry()
    result = await engines.start(settings.engine_setup, lambda m: log.info("engine: %s", m))
    await index_task
    if not result.ok:
        raise SystemExit(f"error: the engine could not start: {result.message}")
    try:
        completer = Completer(engines, telemetry, hub)
        completer.set_privacy(privacy)
        completer.workspace = workspace
        outcome = await completer.complete(store.snapshot(uri), offset, explicit=True)
    finally:
        info = engines.info
        await engines.shutdown()
    return {
        "completion": outcome.text,
        "mode": outcome.mode,
        "timings_ms": {k: outcome.timings_ms.get(k, 0.0) for k in ("context", "engine", "total")}
        | ({"first_token": outcome.timings_ms["first_token"]}
           if "first_token" in outcome.timings_ms else {}),
        "engine": info.as_dict() if info else None,
        "load_seconds": round(result.seconds, 2),
        "reason": outcome.reason,
        "route": outcome.route,
        "budgets": budgets_for(settings.request, info.device if info else "cpu").as_dict()
        | {"used": outcome.context.budget_tokens if outcome.context else None},
    }


def _settings(args: argparse.Namespace, **more: Any) -> SettingsHub:
    """Settings from the command line's --model, --weights and --template (and ``more``,
    by wire name), checked like the editor's."""
    from lsp_copilot.settings.core import parse_settings
    from lsp_copilot.settings.hub import SettingsHub

    # A one-shot command loads its own engine: nothing stays in memory after it.
    settings, problems = parse_settings({"model": args.model or "", "engineShared": False,
                                         "weights": getattr(args, "weights", "bf16"),
                                         "template": args.template or "auto", **more})
    if problems:
        raise SystemExit(f"error: {problems[0]}")
    return SettingsHub(settings)


def cmd_complete(args: argparse.Namespace) -> int:
    out = asyncio.run(_complete(args))
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        print(out["completion"])
        t = out["timings_ms"]
        print(
            f"[{out['mode']}; engine loaded in {out['load_seconds']} s; context "
            f"{t['context']} ms, engine {t['engine']} ms]"
            + (f" ({out['reason']})" if out["reason"] else ""),
            file=getattr(args, "err", None) or sys.stderr,
        )
    return 0


def cmd_context(args: argparse.Namespace) -> int:
    from lsp_copilot.cli.context_audit import audit, render_table

    path, line, col = _parse_location(args.location)
    if not path.is_file():
        raise SystemExit(f"error: cannot read {path}")
    from lsp_copilot.context.budgets import budgets_for
    from lsp_copilot.engine.device import detect

    try:
        settings = _settings(args).settings
        # --device previews the other machine's budgets (as doctor's --device does).
        budgets = budgets_for(settings.request, args.device or detect(settings.device).device)
        report, timings = audit(path, line, col, args.root, args.budget, args.model,
                                settings.template, budgets, args.explicit)
    except ValueError as exc:  # PositionError: a position past the end
        raise SystemExit(f"error: {path}:{line}:{col}: {exc}") from None
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print(render_table(report, timings))
    return 0


def add_commands(sub: Subparsers) -> None:
    complete = sub.add_parser("complete", help="complete at FILE:LINE:COL (1-based) and print")
    complete.add_argument("location", metavar="FILE:LINE:COL")
    complete.add_argument("--root", type=Path, help="workspace folder (default: nearest .git)")
    complete.add_argument("--json", action="store_true", help="print a JSON object")
    complete.add_argument("--model", help=MODEL_HELP)
    complete.add_argument("--weights", choices=WEIGHTS, default="bf16",
                          help="a preset's weights, as the `weights` setting (default: bf16)")
    complete.add_argument("--template", help="prompt family (default: auto, detected)")
    complete.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    complete.set_defaults(func=cmd_complete)

    context = sub.add_parser("context", help="print the context the engine would get at "
                             "FILE:LINE:COL (1-based): layers, token counts, sources")
    context.add_argument("location", metavar="FILE:LINE:COL")
    context.add_argument("--root", type=Path, help="workspace to index (default: nearest .git)")
    context.add_argument("--budget", type=int, help="prompt budget in tokens (default: the "
                         "one contextBudgets' defaults give this request: 1536 on CPU)")
    context.add_argument("--explicit", action="store_true",
                         help="as a request the user asked for (its budget, without --budget)")
    context.add_argument("--device", choices=["cpu", "cuda"],
                         help="budgets of this device (default: this machine's)")
    context.add_argument("--json", action="store_true", help="print the audit JSON")
    context.add_argument("--model", help="model folder whose tokenizer counts (default: SmolLM2)")
    context.add_argument("--template", help="prompt family (default: auto, detected)")
    context.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    context.set_defaults(func=cmd_context)
