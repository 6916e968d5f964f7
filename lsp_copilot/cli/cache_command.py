"""`lsp-copilot cache clear`: the completion caches of every workspace."""

from __future__ import annotations

import argparse
from pathlib import Path

from lsp_copilot.cli.options import Subparsers, group


def cmd_cache_clear(args: argparse.Namespace) -> int:
    """Only what the completion cache made goes (a workspace's folder, known by its name
    and its diskcache file): never another folder, whatever ``--dir`` names."""
    from lsp_copilot.pipeline.completion_cache import NotACacheFolder, cache_root, clear_all

    root = args.dir or cache_root()
    try:
        removed, left = clear_all(root)
    except NotACacheFolder as exc:
        raise SystemExit(f"error: {exc}") from None
    print(f"removed the completion caches of {removed} workspace(s) in {root}")
    if left:
        print(f"left alone (not a completion cache): {', '.join(left)}")
    return 0


def add_commands(sub: Subparsers) -> None:
    cache_sub = group(sub, "cache", "manage the completion cache")
    clear = cache_sub.add_parser("clear", help="empty the completion cache of every workspace")
    clear.add_argument("--dir", type=Path, help="cache folder (default: the cacheDir default)")
    clear.set_defaults(func=cmd_cache_clear)
