"""Model folders: where a preset's folder is, its manifest, and whether a folder is usable.

A folder lsp-copilot prepared (models/prepare.py) carries a manifest with the size and
sha256 of every file, so that a half-written or corrupted model is caught before vLLM
fails on it with an obscure error. A folder without one is the user's own model.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from lsp_copilot.models.presets import PRESETS, Preset, default_preset
from lsp_copilot.models.source import sha256_file
from lsp_copilot.paths import cache_dir
from lsp_copilot.settings.engine import WEIGHTS

MANIFEST_NAME = "lsp-copilot-manifest.json"
MANIFEST_FORMAT = 1
# Files vLLM needs from the folder; a manifest that lacks one describes a broken folder.
REQUIRED_FILES = ("config.json", "generation_config.json", "tokenizer.json", "model.safetensors")

PREPARE_COMMAND = "lsp-copilot model prepare"
REPAIR_COMMAND = "lsp-copilot model prepare --force"


class ModelError(RuntimeError):
    """A model problem the user can fix; the message names the problem and the command."""


# --------------------------------------------------------------------------- locations


def model_dir(preset: Preset, weights: str = "bf16") -> Path:
    """The folder a preset is prepared into; other weights than bf16 go beside it
    (``Qwen2.5-Coder-0.5B-int8``)."""
    suffix = "" if weights == "bf16" else f"-{weights}"
    return cache_dir() / "models" / f"{preset.folder}{suffix}"


def default_model_dir(device: str = "cpu") -> Path:
    """The folder of the preset a machine of this kind gets by default."""
    return model_dir(default_preset(device))


def _preset_of(path: Path) -> tuple[Preset, str] | None:
    """The preset and weights whose folder `path` is, or None."""
    for p in PRESETS:
        for weights in WEIGHTS:
            try:
                if path.expanduser().resolve() == model_dir(p, weights).resolve():
                    return p, weights
            except OSError:
                return None
    return None


def _repair_for(path: Path) -> str:
    """The command that rebuilds a folder we made: its preset and weights when known."""
    known = _preset_of(path)
    if known is None:
        return REPAIR_COMMAND
    flag = "" if known[1] == "bf16" else f" --weights {known[1]}"
    return f"{PREPARE_COMMAND} {known[0].name}{flag} --force"


def _fix_for(path: Path) -> str:
    """The command that repairs `path`: prepare for our folders, the setting for others."""
    known = _preset_of(path)
    if known is not None:
        flag = "" if known[1] == "bf16" else f" --weights {known[1]}"
        return f"run `{PREPARE_COMMAND} {known[0].name}{flag}`"
    return (
        f"point the `model` setting at a Hugging Face model folder (config.json + weights) "
        f"or a preset ({', '.join(p.name for p in PRESETS)}), or leave it empty for the "
        f"default (`{PREPARE_COMMAND}` builds it)"
    )


# ---------------------------------------------------------------------------- manifest


def installed_version(dist: str) -> str | None:
    """The installed version of a distribution, or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _folder_files(folder: Path) -> list[Path]:
    """Every regular file under `folder` except the manifest, sorted for stable manifests."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.relative_to(folder).as_posix() != MANIFEST_NAME
    )


def write_manifest(folder: Path, name: str, source: dict[str, Any],
                   weights: str = "bf16") -> None:
    """Record every file of a finished folder (size, sha256), its weights and where it
    came from."""
    files = {
        p.relative_to(folder).as_posix(): {"sha256": sha256_file(p), "size": p.stat().st_size}
        for p in _folder_files(folder)
    }
    manifest = {
        "format": MANIFEST_FORMAT,
        "name": name,
        "weights": weights,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "created_by": {
            "lsp-copilot": installed_version("lsp-copilot"),
            "transformers": installed_version("transformers"),
            "torch": installed_version("torch"),
            "dtype": "bfloat16",
        },
        "source": source,
        "files": files,
    }
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def _read_manifest(path: Path) -> dict[str, Any] | None:
    manifest_path = path / MANIFEST_NAME
    if not manifest_path.exists():
        return None
    try:
        data = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(
            f"the model manifest {manifest_path} is unreadable ({exc}); "
            f"run `{REPAIR_COMMAND}` to rebuild the model"
        ) from exc
    if (
        not isinstance(data, dict)
        or data.get("format") != MANIFEST_FORMAT
        or not isinstance(data.get("files"), dict)
    ):
        raise ModelError(
            f"the model manifest {manifest_path} has an unknown format; "
            f"run `{REPAIR_COMMAND}` to rebuild the model"
        )
    return data


# ---------------------------------------------------------------------------- verify


def verify_model(path: Path, deep: bool = True) -> None:
    """Raise ModelError unless `path` is a usable model folder.

    Folders we made carry a manifest: every listed file must exist with its size, and with
    ``deep`` its sha256 too (a 260 MB model re-hashes in ~0.2 s). A folder without our
    manifest is the user's own model and only needs a config.json; vLLM judges the rest.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise ModelError(f"model folder {path} does not exist; {_fix_for(path)}")
    if not path.is_dir():
        raise ModelError(
            f"{path} is a file, but a model must be a Hugging Face folder "
            f"(config.json, weights, tokenizer); {_fix_for(path)}"
        )
    manifest = _read_manifest(path)
    if manifest is None:
        if not (path / "config.json").is_file():
            raise ModelError(
                f"model folder {path} has no config.json, so it is not a Hugging Face model "
                f"(or it is incomplete); {_fix_for(path)}"
            )
        return
    files: dict[str, Any] = manifest["files"]
    repair = f"run `{_repair_for(path)}` to rebuild it"
    for name in REQUIRED_FILES:
        if name not in files:
            raise ModelError(f"the model in {path} is incomplete (no {name}); {repair}")
    for name, entry in files.items():
        file = path / name
        if not file.is_file():
            raise ModelError(f"the model in {path} is incomplete: {name} is missing; {repair}")
        try:
            expected_size = int(entry["size"])
            expected_sha = str(entry["sha256"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"the model manifest in {path} is damaged ({name}); {repair}") from exc
        size = file.stat().st_size
        if size != expected_size:
            raise ModelError(
                f"the model in {path} is corrupted: {name} has {size} bytes, "
                f"expected {expected_size}; {repair}"
            )
        if deep and sha256_file(file) != expected_sha:
            raise ModelError(
                f"the model in {path} is corrupted: {name} does not match its sha256 "
                f"in {MANIFEST_NAME}; {repair}"
            )


def verify_prepared(target: Path) -> None:
    """verify_model, but a folder without our manifest does not count as prepared."""
    verify_model(target, deep=True)
    if not (target / MANIFEST_NAME).is_file():
        raise ModelError(f"{target} was not prepared by lsp-copilot")


# ----------------------------------------------------------------------------- info


def model_info(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """What `doctor` shows about a model folder; never raises (errors go in "error")."""
    folder = Path(path).expanduser() if path is not None else default_model_dir("cpu")
    info: dict[str, Any] = {
        "path": str(folder),
        "present": (folder / "config.json").is_file(),
        "verified": False,
        "size_mb": None,
        "vocab_size": None,
        "architecture": None,
        "max_position_embeddings": None,
        "error": None,
    }
    if folder.is_dir():
        total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        info["size_mb"] = round(total / 1e6, 1)
    try:
        verify_model(folder, deep=True)
        info["verified"] = True
    except ModelError as exc:
        info["error"] = str(exc)
    if info["present"]:
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            archs = config.get("architectures") or [config.get("model_type")]
            info["architecture"] = archs[0] if archs else None
            info["vocab_size"] = config.get("vocab_size")
            info["max_position_embeddings"] = config.get("max_position_embeddings")
        except (OSError, ValueError, AttributeError) as exc:
            info["error"] = info["error"] or f"config.json is unreadable: {exc}"
    return info
