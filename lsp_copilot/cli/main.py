"""Command line: the parser of every command family, logging, and the dispatch."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from lsp_copilot import __version__
from lsp_copilot.cli import (
    bench,
    cache_command,
    complete,
    doctor,
    engine,
    model,
    safety,
    serve,
    stats,
)
from lsp_copilot.logs import Logs, QuietOutput, discard_output

log = logging.getLogger("lsp_copilot")


QUIET_COMMANDS = ("complete", "context", "doctor")
"""Commands that print their result and nothing else (unless --verbose)."""


def _setup_logging(args: argparse.Namespace) -> Logs:
    """The log file always; stderr too for the server (editors show it) and --verbose."""
    quiet = args.command in QUIET_COMMANDS and not getattr(args, "verbose", False)
    logs = Logs(args.log_level, None if quiet else sys.stderr)
    logs.use_file()
    # vLLM reads this at import time; stdout belongs to JSON-RPC or to the result.
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    return logs


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lsp-copilot", description="Copilot-style completions from your own model."
    )
    parser.add_argument("--version", action="version", version=f"lsp-copilot {__version__}")
    parser.add_argument("--log-level", default=os.environ.get("LSP_COPILOT_LOG", "info"),
                        help="debug, info, warning or error (default: $LSP_COPILOT_LOG or "
                        "info); the log goes to a file, see `lsp-copilot doctor`")
    sub = parser.add_subparsers(dest="command", required=True)
    for family in (serve, complete, doctor, bench, safety, cache_command, stats, model, engine):
        family.add_commands(sub)  # in this order in --help
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command. A reader that closes the pipe early (``lsp-copilot model list
    --json | head -1``) ends it quietly: as the Python docs advise for SIGPIPE, what is
    left of the output goes to /dev/null (the flush at exit would raise again) and the
    exit code is 1, with no traceback."""
    try:
        try:
            return _run(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, inside the handler
    except BrokenPipeError:
        discard_output(sys.stdout)
        return 1


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    logs = _setup_logging(args)
    args.log_path = logs.path
    if args.command == "serve":
        return serve.cmd_serve(args, logs)
    if args.command not in QUIET_COMMANDS or args.verbose:
        code: int = args.func(args)
        return code
    quiet = QuietOutput(logs.path)
    args.err = quiet.stderr  # the user's terminal, for errors and the human summary
    try:
        code = args.func(args)
        return code
    except BrokenPipeError:  # the reader left: not an error of the command
        discard_output(quiet.stdout)
        return 1
    except SystemExit as exc:  # our own "error: ..." messages
        if isinstance(exc.code, str):
            print(exc.code, file=quiet.stderr)
            return 1
        raise
    except Exception as exc:
        log.exception("%s failed", args.command)
        where = f"; details in {logs.path}" if logs.path else ""
        print(f"error: {type(exc).__name__}: {exc}{where}", file=quiet.stderr)
        return 1
    finally:
        quiet.close()
