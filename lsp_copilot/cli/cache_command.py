"""`lsp-copilot cache clear`: the completion caches of every workspace."""

from __future__ import annotations

import argparse
from pathlib import Path

from lsp_copilot.cli.options import Subparsers, group


def cmd_cache_clear(args: argparse.Namespace) -> int:
    from lsp_copilot.pipeline.completion_cache import cache_root, clear_all

    root = args.dir or cache_root()
    print(f"removed the completion caches of {clear_all(root)} workspace(s) in {root}")
    return 0


def add_commands(sub: Subparsers) -> None:
    cache_sub = group(sub, "cache", "manage the completion cache")
    clear = cache_sub.add_parser("clear", help="empty the completion cache of every workspace")
    clear.add_argument("--dir", type=Path, help="cache folder (default: the cacheDir default)")
    clear.set_defaults(func=cmd_cache_clear)
