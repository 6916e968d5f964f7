"""`lsp-copilot stats`: what became of the suggestions shown."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lsp_copilot.cli.options import Subparsers


def cmd_stats(args: argparse.Namespace) -> int:
    from lsp_copilot.acceptance import report, store

    try:
        since = report.parse_since(args.since) if args.since else None
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    path = args.file or store.default_path()
    result = report.build(store.read(path, since), since)
    if args.json:
        print(json.dumps({"file": str(path), **result}, indent=2))
    else:
        print(report.render(result, str(path)))
    return 0


def add_commands(sub: Subparsers) -> None:
    stats = sub.add_parser("stats", help="acceptance of the suggestions shown, by model, "
                           "template, route, mode, language, latency and experiment arm")
    stats.add_argument("--since", metavar="D", help="only outcomes since D: a date "
                       "(2026-11-24), a time (2026-11-24T09:00) or an age (7d, 12h, 30m)")
    stats.add_argument("--json", action="store_true", help="print a JSON object")
    stats.add_argument("--file", type=Path, help="the outcomes file (default: "
                       "acceptance.sqlite3 in the cache folder; see acceptanceFile)")
    stats.set_defaults(func=cmd_stats)
