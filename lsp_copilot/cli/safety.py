"""`lsp-copilot safety check`: a file's findings with the rules suggestions are checked with."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from lsp_copilot.cli.options import Subparsers, group


def cmd_safety_check(args: argparse.Namespace) -> int:
    """A whole file's findings with the rules suggestions are checked with; exit 1 when
    there is one (for scripts and hooks), 2 when the file cannot be read."""
    from lsp_copilot.postprocess.safety import scan_file

    try:
        grammar, findings = scan_file(args.file)
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"findings": [f.as_json() for f in findings]}))
    else:
        if grammar is None:
            print(f"{args.file}: no grammar for this file: nothing checked", file=sys.stderr)
        for f in findings:
            print(f"{args.file}:{f.line + 1}: {f.rule}: {f.text}")
    return 1 if findings else 0


def add_commands(sub: Subparsers) -> None:
    safety_sub = group(sub, "safety", "the rules suggestions are checked with")
    check = safety_sub.add_parser("check", help="report a file's findings (exit 1 if any)")
    check.add_argument("file", type=Path, metavar="FILE")
    check.add_argument("--json", action="store_true",
                       help='print {"findings": [{"line", "rule", "text"}]} (lines 1-based)')
    check.set_defaults(func=cmd_safety_check)
