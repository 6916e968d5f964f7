"""`lsp-copilot serve`: the language server over stdio (or TCP)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from lsp_copilot.cli.options import Subparsers
from lsp_copilot.logs import Logs
from lsp_copilot.process import exit_now

log = logging.getLogger("lsp_copilot")


def _parse_tcp(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    try:
        return host or "127.0.0.1", int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected [HOST:]PORT, got {value!r}") from None


def cmd_serve(args: argparse.Namespace, logs: Logs | None = None) -> int:
    from lsp_copilot.paths import leave_launch_folder
    from lsp_copilot.server.app import create_server

    # The editor starts us in the user's project: work (and start every process) in a
    # folder of our own, so that no file of the project can replace a module we import.
    leave_launch_folder()
    if args.tcp is None:
        # Keep fd 1 for JSON-RPC alone: vLLM's child process inherits our descriptors and
        # anything it (or any library) prints to stdout would corrupt the LSP stream.
        rpc_out = os.fdopen(os.dup(1), "wb", buffering=0)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    server = create_server(logs=logs)
    # An editor that stops us with SIGTERM must not wait for a loading engine, nor leave
    # vLLM's EngineCore behind.
    signal.signal(signal.SIGTERM, lambda *_: exit_now(0))
    try:
        if args.tcp is None:
            server.start_io(sys.stdin.buffer, rpc_out)
        else:
            host, port = args.tcp
            if host not in ("127.0.0.1", "localhost", "::1"):
                log.warning(
                    "listening on %s:%d: anyone who can reach this address can read the "
                    "code sent for completion. Use loopback unless you mean it.", host, port
                )
            server.start_tcp(host, port)
    finally:
        # The client went away (stdin closed) or asked us to exit: leave now.
        exit_now(0 if server.protocol._shutdown else 1)
    return 0


def add_commands(sub: Subparsers) -> None:
    serve = sub.add_parser("serve", help="run the language server (stdio unless --tcp)")
    serve.add_argument("--stdio", action="store_true", help="the default; accepted for editors")
    serve.add_argument("--tcp", type=_parse_tcp, metavar="[HOST:]PORT",
                       help="listen on TCP (127.0.0.1 unless a host is given)")
    serve.set_defaults(func=cmd_serve)
