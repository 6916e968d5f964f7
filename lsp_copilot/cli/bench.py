"""`lsp-copilot bench`: every measurement, run from the `lsp_copilot_bench` package (outside
the runtime package: imported only when a benchmark runs)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from lsp_copilot.cli.options import MODEL_HELP, Subparsers


def typing_settings(value: str | None, what: str) -> dict[str, Any]:
    """``--settings``: editor settings (JSON) for both of bench typing's configurations,
    checked as the server checks them, so that a typo stops the run before any engine."""
    if value is None:
        return {}
    if what != "typing":
        raise SystemExit("error: --settings is for `bench typing`")
    try:
        raw = json.loads(value)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"error: --settings is not JSON: {exc}") from None
    from lsp_copilot.settings.core import parse_settings

    _, errors = parse_settings(raw)
    if errors:
        raise SystemExit("error: --settings: " + "; ".join(errors))
    return dict(raw)


def cmd_bench(args: argparse.Namespace) -> int:
    from lsp_copilot_bench import main as bench

    result: Any
    settings = typing_settings(args.settings, args.what)
    languages = None
    if args.what == "quality" and args.language_corpus:
        from lsp_copilot_bench.quality import parse_languages

        try:
            languages = parse_languages(args.language_corpus)
        except ValueError as exc:
            raise SystemExit(f"error: {exc}") from None
    if args.split:
        if args.what not in ("quality", "typing"):
            raise SystemExit("error: --split applies to bench quality and bench typing")
        from lsp_copilot_bench.corpus import split_corpora

        try:  # before the engine loads: say what to run
            for root in (languages or {"": args.corpus}).values():
                split_corpora(root, args.split)
        except ValueError as exc:
            raise SystemExit(f"error: {exc}") from None
    if args.what == "quality":  # the whole pipeline, ours against prefix-only
        from lsp_copilot_bench import quality as bench_quality

        log = Path(f"{args.json}.holes.jsonl") if isinstance(args.json, str) else None
        if log is not None:
            log.unlink(missing_ok=True)
        result = bench_quality.run(args.corpus, args.count, args.model, log=log,
                                   split=args.split, languages=languages)
        if isinstance(args.json, str):
            Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False))
        if args.json is True:
            print(json.dumps(result, indent=2, ensure_ascii=False))
        else:
            print(bench_quality.render(result))
        return 0
    if args.what == "safety":  # no engine: the rules on real code and on the snippets
        from lsp_copilot_bench import safety as bench_safety

        try:
            folders = bench_safety.parse_folders(args.language_corpus)
        except ValueError as exc:
            raise SystemExit(f"error: {exc}") from None
        result = bench_safety.run(folders, args.max_files)
        print(json.dumps(result, indent=2) if args.json else bench_safety.render(result))
        return 0
    if args.what == "robustness":  # through the real protocol: one line per trial
        from lsp_copilot_bench import robustness as bench_robustness

        return bench_robustness.run(args.messages, args.soak, args.examples, args.trial,
                                    args.json, args.out)
    if args.what == "context":  # no engine: measures the prompt itself
        from lsp_copilot_bench import context as context_bench
        from lsp_copilot_bench import languages as bench_languages

        try:
            folders = bench_languages.parse_folders(args.language_corpus)
        except ValueError as exc:
            raise SystemExit(f"error: {exc}") from None
        result = context_bench.run(args.corpus, args.count, args.model, folders,
                                   args.per_language)
    elif args.what == "starts":  # the shared engine started again and again
        from lsp_copilot_bench import starts

        result = starts.run(args.count, args.model)
    elif args.what == "coldstart":  # through the real protocol: two cold servers
        from lsp_copilot_bench import coldstart

        result = coldstart.run()
    elif args.what == "typing":  # through the real protocol: spawns two servers
        import tempfile

        from lsp_copilot_bench import ablation as bench_ablation
        from lsp_copilot_bench import typing_replay as bench_typing

        try:
            ablate = bench_ablation.names(args.ablate) if args.ablate else ()
        except ValueError as exc:
            raise SystemExit(f"error: {exc}") from None
        if ablate and args.from_start:
            raise SystemExit("error: --ablate and --from-start are two different runs")

        with tempfile.TemporaryDirectory(prefix="lsp-copilot-bench-") as tmp:
            result = bench_typing.run(args.corpus or bench.default_corpus(), args.keystrokes,
                                      args.out, Path(tmp), args.model, args.seed, args.split,
                                      settings, args.language, args.autoclose == "on",
                                      args.from_start, ablate)
        print(f"wrote {args.out / 'bench-typing.json'} and {args.out / 'bench-typing.png'}",
              file=sys.stderr)
        if not args.json:
            from lsp_copilot_bench.pauses import render

            print(render(result))
            if ablate:
                print("\n" + bench_ablation.render(result))
            return 0
    else:
        weights = None
        if args.weights:
            if args.what != "engine":
                raise SystemExit("error: --weights is for `bench engine`")
            from lsp_copilot_bench.weights import parse_weights

            try:
                weights = parse_weights(args.weights)
            except ValueError as exc:
                raise SystemExit(f"error: {exc}") from None
        result = bench.run(args.what, args.corpus, args.count, args.model, args.keystrokes,
                           weights)
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


def add_commands(sub: Subparsers) -> None:
    bench = sub.add_parser("bench", help="measure through the real engine")
    bench.add_argument("what", choices=["engine", "prompt", "context", "typing", "coldstart",
                                          "starts", "robustness", "quality", "safety"])
    bench.add_argument("--keystrokes", type=int, default=300, help="typing, engine: keys to replay")
    bench.add_argument("--seed", type=int, default=1,
                       help="typing: which functions are typed and how (same seed, same keys)")
    bench.add_argument("--out", type=Path, default=Path("bench-results"),
                       help="typing: folder for the JSON summary and the PNG plot; "
                       "robustness: the server's log")
    bench.add_argument("--corpus", type=Path, help="folder of code (default: Python's stdlib); "
                       "with --split, the folder made by scripts/fresh-corpus.sh DIR")
    bench.add_argument("--split", choices=["tune", "report"],
                       help="quality, typing: run every package of DIR/<split> (DIR: "
                       "--corpus), figures per package and pooled; tune rules on tune, "
                       "report on report")
    bench.add_argument("--language", default="python",
                       choices=["python", "typescript", "rust", "go", "java"],
                       help="typing: type functions of this language's files (the didOpen "
                       "language id); with --split, --corpus is "
                       "scripts/fresh-corpus-languages.sh DIR's DIR/LANG")
    bench.add_argument("--from-start", action="store_true",
                       help="typing: type from a cold start as soon as the first suggestion "
                       "comes (engines loading, the compiled copy built meanwhile), beside "
                       "the default at steady state, instead of the naive configuration")
    bench.add_argument("--ablate", metavar="NAME[,NAME]",
                       help="typing: the default twice (its noise), then with each of these "
                       "mechanisms off, on the same keys: supersede, debounce, "
                       "adaptive-debounce, typing-through, cache, merge, merge-window, "
                       "continuation, deadline, prefetch, warm-up, or all")
    bench.add_argument("--autoclose", choices=["on", "off"], default="on",
                       help="typing: the editor pairs brackets and quotes as VS Code does "
                       "(off: every key is a plain insertion, as before)")
    bench.add_argument("--count", type=int, default=40, help="holes / requests to run")
    bench.add_argument("--model", help=MODEL_HELP)
    bench.add_argument("--weights", metavar="W1,W2",
                       help="engine: compare a preset's weights side by side in one run "
                       "(bf16,int8 or bf16,int8,int4; the first is the baseline; a format "
                       "with +compiled loads with torch.compile: bf16,bf16+compiled; with "
                       "+float32 or +bfloat16 it computes in that dtype: "
                       "bf16+bfloat16,bf16+float32) instead of speculation on and off")
    bench.add_argument("--settings", metavar="JSON",
                       help="typing: settings for both configurations, as an editor sends "
                       "them, e.g. '{\"enforceEager\": false}'")
    bench.add_argument("--language-corpus", action="append", metavar="LANG=PATH",
                       help="context: code of one language for the enclosing-function check "
                       "(go, rust, cpp, java, typescript, python; a folder, .zip or .tgz; "
                       "default: where Debian's packages put it); repeatable; safety: the "
                       "same for python, site-packages, go, java, cpp, rust, javascript, "
                       "typescript; quality: holes in that language's files of PATH (with "
                       "--split, PATH is scripts/fresh-corpus-languages.sh DIR's DIR/LANG), "
                       "figures per language, instead of --corpus")
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
                       choices=["fuzz", "edits", "burst", "engine-kill", "secrets", "soak",
                                "adversarial"],
                       help="robustness: run only this trial (repeatable)")
    bench.set_defaults(func=cmd_bench)
