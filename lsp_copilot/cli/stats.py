"""`lsp-copilot stats`: what became of the suggestions shown."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lsp_copilot.cli.options import Subparsers

BY = ("arm", "route", "model", "language", "mode")  # (as acceptance.report.BY)


def cmd_stats(args: argparse.Namespace) -> int:
    from lsp_copilot.acceptance import report, store

    try:
        since = report.parse_since(args.since) if args.since else None
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    path = args.file or store.default_path()
    try:
        records = store.read(path, since)
    except store.StoreError as exc:  # a damaged file: one line saying what to do
        raise SystemExit(f"error: {exc}") from None
    result = report.build(records, since, args.by)
    if args.json:
        print(json.dumps({"file": str(path), **result}, indent=2))
    else:
        print(report.render(result, str(path)))
    if args.plot:
        from lsp_copilot.acceptance.plot import PlotUnavailable, plot

        try:
            drawn = plot(records, args.by or "arm", args.plot)
        except PlotUnavailable as exc:
            raise SystemExit(f"error: {exc}") from None
        if not args.json:
            print(f"\nwrote {args.plot} ({drawn} group{'s' if drawn != 1 else ''})")
    return 0


def add_commands(sub: Subparsers) -> None:
    stats = sub.add_parser("stats", help="acceptance of the suggestions shown, by model, "
                           "template, route, mode, language, latency and experiment arm")
    stats.add_argument("--by", choices=BY, help="one table, grouped by this: shown, accepted, "
                       "partly accepted, acceptance with its 95%% interval, accepted "
                       "characters per shown suggestion, latency p50/p90")
    stats.add_argument("--since", metavar="D", help="only outcomes since D: a date "
                       "(2026-11-24), a time (2026-11-24T09:00) or an age (7d, 12h, 30m)")
    stats.add_argument("--json", action="store_true", help="print a JSON object")
    stats.add_argument("--plot", type=Path, metavar="FILE.png", help="also draw acceptance "
                       "and latency over time, a line per group (--by, default arm); needs "
                       "matplotlib (the bench extra)")
    stats.add_argument("--file", type=Path, help="the outcomes file (default: "
                       "acceptance.sqlite3 in the cache folder; see acceptanceFile)")
    stats.set_defaults(func=cmd_stats)
