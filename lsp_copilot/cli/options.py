"""What the command families share on the command line: help texts and subcommand groups."""

from __future__ import annotations

import argparse

MODEL_HELP = "preset name, model folder or hub id (default: this device's preset)"
VERBOSE_HELP = "also print the log (the engine's included) to stderr"

Subparsers = argparse._SubParsersAction
"""Where a command family adds its commands (what ``add_subparsers()`` returns)."""


def group(sub: Subparsers, name: str, help: str) -> Subparsers:
    """A command that only groups subcommands (`model list`, `cache clear`, ...)."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help)
    return parser.add_subparsers(dest=f"{name}_command", required=True)
