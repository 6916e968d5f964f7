"""`lsp-copilot engine status|stop`: the shared engines running on this machine for this
user; `engine host` is what a server starts (one engine, served over a Unix socket)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsp_copilot.cli.options import Subparsers, group
from lsp_copilot.process import python_command

if TYPE_CHECKING:
    from lsp_copilot.engine.shared.runtime import EnginePlace

COMPILE_LATER_ENV = "LSP_COPILOT_COMPILE_LATER"
"""``0``: no engine builds a compiled copy of itself (the tests set it: a background
compile would take both cores from tests that time what they do)."""


def _places() -> list[EnginePlace]:
    """The engines of the runtime folder, checked as a start checks it: a folder or an
    engine that is not this user's is refused with the reason, never read or trusted."""
    from lsp_copilot.engine.shared.runtime import RuntimeDirError, places, runtime_dir

    try:
        return places(runtime_dir())
    except RuntimeDirError as exc:
        raise SystemExit(f"error: {exc}") from None


def _ask(place: EnginePlace, message: dict[str, Any]) -> dict[str, Any] | None:
    from lsp_copilot.engine.shared.control import ask
    from lsp_copilot.engine.shared.runtime import RuntimeDirError

    try:
        return ask(place, message)
    except RuntimeDirError as exc:
        raise SystemExit(f"error: {exc}") from None


def cmd_status(args: argparse.Namespace) -> int:
    from lsp_copilot.engine.shared.runtime import runtime_dir

    rows = []
    for place in _places():
        reply = _ask(place, {"op": "status", "id": "status"})
        if reply is None:
            rows.append({"name": place.name, "state": "stale", "message":
                         "nobody answers its socket (a crash); the next start replaces it"})
        else:
            rows.append({k: v for k, v in reply.items() if k not in ("op", "id")})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print(f"no shared engine runs for this user (folder {runtime_dir()})")
        return 0
    for row in rows:
        if row["state"] == "stale":
            print(f"{row['name']}: stale socket ({row['message']})")
            continue
        compiled = ", compiled" if row.get("compiled") else ""
        successor = f"; {row['successor']}" if row.get("successor") else ""
        print(f"{row['name']}: {row['state']}{compiled}, model {row['model']}, pid "
              f"{row['pid']}, {row['clients']} server(s), {row['memory_mb']} MB, idle "
              f"{row['idle_s']:.0f} s of {row['idle_limit_s']:.0f} s{successor}")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from lsp_copilot.engine.shared.control import wait_gone

    chosen = [p for p in _places() if args.name in (None, p.name)]
    if args.name is not None and not chosen:
        raise SystemExit(f"error: no shared engine named {args.name} (see "
                         "`lsp-copilot engine status`)")
    for place in chosen:
        status = _ask(place, {"op": "status", "id": "status"})
        if status is None or _ask(place, {"op": "stop", "id": "stop"}) is None:
            place.socket.unlink(missing_ok=True)
            print(f"{place.name}: removed a stale socket")
            continue
        wait_gone(status.get("pid"))  # until its processes are gone and their memory free
        print(f"{place.name}: stopped")
    return 0


def compiled_copy(args: argparse.Namespace, fields: dict[str, object]
                  ) -> Callable[[int], list[str]]:
    """The command of this engine's compiled copy, given the inode of the socket it is to
    take over (engine/shared/handoff.py)."""

    def command(inode: int) -> list[str]:
        return python_command("-m", "lsp_copilot", "engine", "host", "--name", args.name,
                              "--label", args.label, "--settings", json.dumps(fields | {
                                  "enforceEager": False}),
                              "--idle-minutes", str(args.idle_minutes),
                              "--replaces", str(inode))

    return command


def cmd_host(args: argparse.Namespace) -> int:
    """Serve one engine until it is stopped or idle; never returns to a caller."""
    from lsp_copilot.engine import defaults
    from lsp_copilot.engine.device import detect
    from lsp_copilot.engine.factory import embedded_engine
    from lsp_copilot.engine.shared.host import detach, serve
    from lsp_copilot.engine.shared.runtime import EnginePlace, private_dir
    from lsp_copilot.process import exit_now
    from lsp_copilot.settings.core import parse_settings
    from lsp_copilot.tokens import TokenCounters

    fields = json.loads(args.settings)
    settings, problems = parse_settings(fields)
    if problems:
        raise SystemExit("error: " + "; ".join(problems))
    setup = settings.engine_setup
    place = EnginePlace(private_dir(), args.name)
    later = defaults.compile_later(setup.engine, detect(setup.engine.device).device).value
    later = later and os.environ.get(COMPILE_LATER_ENV) != "0"
    detach()
    counters = TokenCounters()
    code = asyncio.run(serve(place, setup, args.label, args.idle_minutes,
                             lambda s, report: embedded_engine(s, report, counters,
                                                               inprocess=True),
                             compiled_copy=compiled_copy(args, fields) if later else None,
                             replaces=args.replaces))
    exit_now(code)  # with the EngineCore: nothing of this engine outlives it
    return code


def add_commands(sub: Subparsers) -> None:
    engine_sub = group(sub, "engine", "the shared engines of this machine (engineShared)")
    status = engine_sub.add_parser("status", help="list the running shared engines")
    status.add_argument("--json", action="store_true", help="print a JSON list")
    status.set_defaults(func=cmd_status)
    stop = engine_sub.add_parser("stop", help="stop one shared engine (default: all)")
    stop.add_argument("name", nargs="?", help="its name, from `lsp-copilot engine status`")
    stop.set_defaults(func=cmd_stop)
    host = engine_sub.add_parser("host", help="serve one engine (servers start it)")
    host.add_argument("--name", required=True)
    host.add_argument("--label", required=True)
    host.add_argument("--settings", required=True, help="engine settings, JSON")
    host.add_argument("--idle-minutes", type=float, default=15.0)
    host.add_argument("--replaces", type=int, default=None,
                      help="load as the compiled copy of the engine whose socket has this "
                      "inode, and take that socket over once ready")
    host.set_defaults(func=cmd_host)
