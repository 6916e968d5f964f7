"""The CUDA path, checked without a GPU: device detection, per-device engine arguments,
the memory fit and the vLLM version floors (issue 14's items 1-7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lsp_copilot.cli import doctor
from lsp_copilot.engine import device, vllm
from lsp_copilot.engine.device import GpuInfo, choose_device
from lsp_copilot.engine.fit import fit_report, model_shape
from lsp_copilot.engine.validate import (
    EngineConfigError,
    check_engine,
    engine_problems,
    settings_problems,
    version_problems,
)
from lsp_copilot.engine.vllm import engine_args, prepare_environment
from lsp_copilot.settings.core import Settings, parse_settings
from lsp_copilot.settings.hub import SettingsHub

GIB = 2**30


def _never(*_: object) -> bool:
    raise AssertionError("torch.cuda.is_available() initialises CUDA: vLLM's fork would fail")


@pytest.fixture
def cuda_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CUDA build with two GPUs, where calling torch.cuda.is_available() fails."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", _never)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(device, "_pynvml", lambda: None)  # NVML absent: torch's count
    monkeypatch.setattr(device, "vllm_build", lambda: ("cuda", "0.20.0"))


def _model(folder: Path, weights: int, layers: int = 28, hidden: int = 3584, heads: int = 28,
           kv_heads: int = 4) -> str:
    """A model folder as the fit sees it: config.json and a sparse safetensors file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({
        "num_hidden_layers": layers, "hidden_size": hidden, "num_attention_heads": heads,
        "num_key_value_heads": kv_heads, "torch_dtype": "bfloat16", "vocab_size": 152064}))
    with (folder / "model.safetensors").open("wb") as f:
        f.truncate(weights)
    return str(folder)


def _gpu(total_gib: float = 24, free_gib: float = 23.5) -> GpuInfo:
    return GpuInfo(0, "RTX 4090", int(total_gib * GIB), int(free_gib * GIB))


# -- 1. device detection -------------------------------------------------------------------

def test_auto_finds_the_gpu_without_torch_cuda_is_available(cuda_machine: None) -> None:
    assert vllm.detect_device("auto") == "cuda"
    assert device.gpu_count() == 2
    report = doctor.engine_report(Settings().engine_setup, gpus=lambda: None)
    assert report["device"] == "cuda"


def test_cuda_engine_processes_are_spawned_not_forked(monkeypatch: pytest.MonkeyPatch) -> None:
    env: dict[str, str] = {}
    monkeypatch.setattr("os.environ", env)
    prepare_environment(Settings(), "cuda")
    assert env["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    assert "VLLM_CPU_KVCACHE_SPACE" not in env and "VLLM_CPU_OMP_THREADS_BIND" not in env
    env.clear()
    prepare_environment(Settings(cpu_kv_cache_gib=3), "cpu")
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "3" and "VLLM_WORKER_MULTIPROC_METHOD" not in env


def test_cpu_engine_gets_intel_openmp_and_keeps_a_users_preload(tmp_path: Path) -> None:
    from lsp_copilot.engine import defaults

    iomp = defaults.intel_openmp()
    assert iomp is not None, "vllm-cpu requires intel-openmp: libiomp5.so is in the venv"
    env = defaults.environment(Settings(), "cpu", {})
    assert env["LD_PRELOAD"] == str(iomp) and env["KMP_BLOCKTIME"] == "5"
    env = defaults.environment(Settings(), "cpu", {"LD_PRELOAD": "/x/libfoo.so"})
    assert env["LD_PRELOAD"] == f"/x/libfoo.so:{iomp}"
    chosen = defaults.environment(Settings(), "cpu", {"LD_PRELOAD": "/x/libgomp.so.1"})
    assert "LD_PRELOAD" not in chosen  # the user's OpenMP runtime is left alone
    assert "LD_PRELOAD" not in defaults.environment(Settings(), "cuda", {})
    assert defaults.intel_openmp(str(tmp_path)) is None


def test_cpu_engine_runs_its_model_in_the_engine_core_unless_threads_are_bound() -> None:
    """One process (and one import of torch and vLLM) fewer per start on CPU; a user's
    explicit thread binding needs vLLM's worker process, which sets it up."""
    from lsp_copilot.engine import defaults

    assert defaults.environment(Settings(), "cpu", {})["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    bound = defaults.environment(Settings(), "cpu", {"VLLM_CPU_OMP_THREADS_BIND": "0-1"})
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in bound
    assert "VLLM_ENABLE_V1_MULTIPROCESSING" not in defaults.environment(Settings(), "cuda", {})



def test_a_host_on_a_cpu_runs_its_engine_core_itself_and_starts_with_intel_openmp() -> None:
    """The shared engine's host runs the EngineCore in its own process on a CPU (no second
    import of vLLM), so it must be started with LD_PRELOAD, which only a new program
    reads; the user's own values stay, the settings' KV cache size wins."""
    from lsp_copilot.engine import defaults

    env = defaults.environment(Settings(), "cpu", {})
    assert vllm.runs_inprocess("cpu", env)
    assert not vllm.runs_inprocess("cuda", env)
    bound = defaults.environment(Settings(), "cpu", {"VLLM_CPU_OMP_THREADS_BIND": "0-1"})
    assert not vllm.runs_inprocess("cpu", bound)  # vLLM's worker sets the binding up
    started = defaults.with_environment(
        {"PATH": "/bin", "VLLM_LOGGING_STREAM": "ext://sys.stdout",
         "VLLM_CPU_KVCACHE_SPACE": "9"}, Settings(cpu_kv_cache_gib=3), "cpu")
    assert started["PATH"] == "/bin" and started["LD_PRELOAD"] == str(defaults.intel_openmp())
    assert started["VLLM_LOGGING_STREAM"] == "ext://sys.stdout"  # the user's
    assert started["VLLM_CPU_KVCACHE_SPACE"] == "3"  # the settings'
    assert started["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"

# -- 5. the build decides ------------------------------------------------------------------

def test_the_cuda_build_runs_on_the_gpu_whatever_device_says(cuda_machine: None) -> None:
    assert vllm.detect_device("cpu") == "cuda"
    choice = device.detect("cpu")
    assert "CUDA build" in choice.reason and choice.problem is None


def test_the_cpu_build_refuses_device_cuda() -> None:
    choice = choose_device("cuda", "cpu", lambda: 0)
    assert choice.device == "cpu" and choice.problem and "lsp-copilot[gpu]" in choice.problem
    with pytest.raises(EngineConfigError, match="CPU build"):
        check_engine(Settings(device="cuda"), "org/model", "cpu", choice)
    assert choose_device("auto", "cpu", lambda: 4).device == "cpu"


def test_the_cuda_build_without_a_visible_gpu_says_so() -> None:
    choice = choose_device("auto", "cuda", lambda: 0)
    assert choice.device == "cuda" and choice.problem and "NVML sees no GPU" in choice.problem


def test_build_comes_from_package_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    versions = {"vllm": "0.20.0+cpu"}
    monkeypatch.setattr(device, "_version", versions.get)
    assert device.vllm_build() == ("cpu", "0.20.0+cpu")
    versions["vllm"] = "0.20.0"
    assert device.vllm_build() == ("cuda", "0.20.0")
    versions["vllm-cpu"] = "0.32.0"
    assert device.vllm_build() == ("cpu", "0.32.0")
    assert device.installed_vllm() == ("vllm-cpu", "0.32.0")


# -- 2, 3, 6. per-device engine arguments --------------------------------------------------

def test_cuda_engine_args_use_cuda_graphs_most_of_the_gpu_and_few_sequences() -> None:
    args = engine_args(Settings(), "/m", "cuda", max_queue=8)
    assert args["enforce_eager"] is False
    assert args["gpu_memory_utilization"] >= 0.8
    assert args["max_num_seqs"] == Settings().max_queue + 2
    assert args["dtype"] == "auto" and "block_size" not in args
    assert engine_args(Settings(), "/m", "cuda", max_queue=4)["max_num_seqs"] == 6


AVX512 = {"fpu", "avx2", "avx512f", "avx512_vnni", "avx512_bf16"}
AVX2 = {"fpu", "avx", "avx2", "fma", "f16c"}


def test_cpu_engine_args_are_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lsp_copilot.engine.defaults.cpu_flags", lambda: AVX512)
    args = engine_args(Settings(), "/m", "cpu", max_queue=8)
    assert (args["enforce_eager"], args["dtype"], args["block_size"],
            args["gpu_memory_utilization"]) == (True, "bfloat16", 32, 0.5)
    assert "max_num_seqs" not in args


@pytest.mark.parametrize(("flags", "given", "chosen"), [
    (AVX512, {}, "bfloat16"),
    (AVX512 - {"avx512_bf16"}, {}, "bfloat16"),  # AVX-512 converts bf16 itself
    ({"fpu", "avx2", "amx_bf16", "amx_tile"}, {}, "bfloat16"),
    (AVX2, {}, "float32"),  # AVX2 alone: bf16 prefills six times slower
    (AVX2, {"weights": "int8"}, "bfloat16"),  # packed weights keep their bf16 kernels
    (AVX2, {"quantization": "awq"}, "bfloat16"),
    (AVX2, {"dtype": "bfloat16"}, "bfloat16"),  # the user's choice wins
    (set(), {}, "bfloat16"),  # no x86 flags (Arm): as before
])
def test_cpu_dtype_follows_what_the_cpu_computes_fast(
        monkeypatch: pytest.MonkeyPatch, flags: set[str], given: dict[str, Any],
        chosen: str) -> None:
    monkeypatch.setattr("lsp_copilot.engine.defaults.cpu_flags", lambda: flags)
    s = parse_settings(given)[0]
    assert engine_args(s, "/m", "cpu", max_queue=8)["dtype"] == chosen
    assert engine_args(s, "/m", "cuda", max_queue=8)["dtype"] == (
        given.get("dtype", "auto"))


def test_settings_given_by_the_user_win_on_every_device() -> None:
    s = parse_settings({"enforceEager": True, "gpuMemoryUtilization": 0.6, "maxNumSeqs": 3,
                        "dtype": "float16", "blockSize": 16})[0]
    for where in ("cuda", "cpu"):
        args = engine_args(s, "/m", where, max_queue=s.max_queue)
        assert (args["enforce_eager"], args["gpu_memory_utilization"], args["max_num_seqs"],
                args["dtype"], args["block_size"]) == (True, 0.6, 3, "float16", 16)
    assert parse_settings({"enforceEager": None, "gpuMemoryUtilization": None})[1] == []


def test_a_7b_model_on_a_24_gb_card_gets_at_least_0_8(tmp_path: Path) -> None:
    model = _model(tmp_path / "qwen-7b", weights=int(15.2 * GIB))
    args = engine_args(Settings(), model, "cuda", [_gpu()], max_queue=8)
    assert 0.8 <= args["gpu_memory_utilization"] <= 0.9


def test_a_small_model_leaves_the_gpu_to_the_desktop(tmp_path: Path) -> None:
    model = _model(tmp_path / "qwen-0.5b", weights=int(0.99 * GIB), layers=24, hidden=896,
                   heads=14, kv_heads=2)
    utilization = engine_args(Settings(), model, "cuda", [_gpu()],
                              max_queue=8)["gpu_memory_utilization"]
    assert 0.1 <= utilization <= 0.3  # (KV cache for 10 x 10,240 tokens included)
    shape = model_shape(model, Settings())
    assert shape is not None
    report = fit_report(shape, Settings(), 10, utilization, [_gpu()])
    assert report["gpus"][0]["fits"] is True and "change" not in report["gpus"][0]


def test_maxqueue_restarts_the_engine_only_while_it_sizes_the_batch() -> None:
    a = Settings()
    assert parse_settings({"maxQueue": 4}, a)[0].engine_key("cuda") != a.engine_key("cuda")
    # On the CPU maxQueue sizes nothing in vLLM: changing it must not reload the model.
    assert parse_settings({"maxQueue": 4}, a)[0].engine_key("cpu") == a.engine_key("cpu")
    b = Settings(max_num_seqs=6)
    assert parse_settings({"maxQueue": 4}, b)[0].engine_key("cuda") == b.engine_key("cuda")


# -- the fit -------------------------------------------------------------------------------

def test_weights_that_do_not_fit_name_the_settings_to_change(tmp_path: Path) -> None:
    model = _model(tmp_path / "qwen-14b", weights=int(29.5 * GIB), layers=48, hidden=5120,
                   heads=40, kv_heads=8)
    shape = model_shape(model, Settings())
    assert shape is not None
    verdict = fit_report(shape, Settings(), 10, 0.9, [_gpu()])["gpus"][0]
    assert verdict["fits"] is False and "quantized" in verdict["change"]


def test_a_kv_cache_that_does_not_fit_suggests_a_shorter_max_model_len(tmp_path: Path) -> None:
    model = _model(tmp_path / "qwen-7b", weights=int(15.2 * GIB))
    s = Settings(max_model_len=131072)
    shape = model_shape(model, s)
    assert shape is not None
    verdict = fit_report(shape, s, 10, 0.9, [_gpu()])["gpus"][0]
    assert verdict["fits"] is False and "lower maxModelLen to about" in verdict["change"]
    fp8 = model_shape(model, Settings(kv_cache_dtype="fp8"))
    assert fp8 is not None and fp8.kv_bytes_per_token * 2 == shape.kv_bytes_per_token


def test_a_busy_gpu_asks_for_a_lower_utilization(tmp_path: Path) -> None:
    model = _model(tmp_path / "qwen-7b", weights=int(15.2 * GIB))
    shape = model_shape(model, Settings())
    assert shape is not None
    verdict = fit_report(shape, Settings(), 10, 0.9, [_gpu(free_gib=18)])["gpus"][0]
    assert verdict["fits"] is False and "lower gpuMemoryUtilization" in verdict["change"]


# -- 4, 7. versions ------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "too_old", "new_enough"), [
    ({"speculativeMethod": "draft_model", "speculativeModel": "org/d"}, "0.14.1", "0.15.0"),
    ({"speculativeMethod": "suffix"}, "0.11.0", "0.12.0"),
    ({"kvCacheDtype": "float16"}, "0.18.1", "0.19.0"),
    ({"kvCacheDtype": "bfloat16"}, "0.10.2", "0.11.1"),
])
def test_settings_older_vllm_lacks_are_refused_naming_the_version(
        raw: dict[str, object], too_old: str, new_enough: str) -> None:
    s = parse_settings(raw)[0]
    problems = version_problems(s, ("vllm", too_old))
    assert len(problems) == 1 and new_enough in problems[0] and too_old in problems[0]
    assert version_problems(s, ("vllm", new_enough)) == []
    assert version_problems(s, ("vllm", new_enough + "rc1")) == []
    found = engine_problems(s, "org/model", "cuda", installed=lambda: ("vllm", too_old),
                            gpus=lambda: 1)
    assert any(new_enough in p for p in found)


def test_defaults_run_on_the_oldest_vllm_allowed() -> None:
    assert version_problems(Settings(), ("vllm", "0.11.0")) == []


def test_suffix_decoding_names_the_pinned_arctic_inference(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "arctic_inference" else real(name, *a))
    (problem,) = settings_problems(Settings(speculative_method="suffix"))
    assert "arctic-inference==0.1.1" in problem


# -- doctor --------------------------------------------------------------------------------

def test_doctor_previews_a_cuda_machine_without_loading_anything(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from lsp_copilot.cli import doctor

    monkeypatch.setattr(torch.cuda, "is_available", _never)
    monkeypatch.setattr(device, "nvml_gpus", lambda: None)
    report = doctor.run("cuda", SettingsHub())
    args = report["engine_args"]
    assert report["device"] == "cuda" and args["enforce_eager"] is False
    assert args["gpu_memory_utilization"] >= 0.8 and args["max_num_seqs"] == 10
    assert report["engine_env"]["VLLM_WORKER_MULTIPROC_METHOD"] == "spawn"
    assert report["engine_defaults"]["enforce_eager"]["why"]
    cpu = doctor.run("cpu", SettingsHub())["engine_args"]
    assert cpu["enforce_eager"] is True and cpu["block_size"] == 32


def test_doctor_imports_neither_vllm_nor_torch(tmp_path: Path) -> None:
    """'Without loading anything': no vLLM import (it reads its environment once), no torch
    (no CUDA context can be created)."""
    import subprocess
    import sys

    found = tmp_path / "imported.json"
    code = ("import sys, json\nfrom lsp_copilot.cli.main import main\n"
            "main(['doctor', '--json', '--device', 'cuda'])\nmain(['doctor', '--json'])\n"
            f"open({str(found)!r}, 'w').write(json.dumps(sorted(m for m in ('vllm', 'torch')"
            " if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(found.read_text()) == []


def test_a_busy_card_gets_what_is_free_when_the_model_still_fits(tmp_path: Path) -> None:
    model = _model(tmp_path / "qwen-7b", weights=int(15.2 * GIB))
    busy = _gpu(free_gib=20.4)  # a desktop holds 3.6 GiB: 0.9 of the card is not free
    utilization = engine_args(Settings(), model, "cuda", [busy],
                              max_queue=8)["gpu_memory_utilization"]
    assert 0.8 <= utilization < 0.85 and utilization * busy.total_bytes <= busy.free_bytes
    shape = model_shape(model, Settings())
    assert shape is not None
    assert fit_report(shape, Settings(), 10, utilization, [busy])["gpus"][0]["fits"] is True
    too_busy = _gpu(free_gib=12)  # not even the weights: keep asking, doctor says why
    assert engine_args(Settings(), model, "cuda", [too_busy],
                       max_queue=8)["gpu_memory_utilization"] == 0.9


def test_only_the_gpus_cuda_will_show_count() -> None:
    gpus = [GpuInfo(i, f"gpu{i}", 24 * GIB, 24 * GIB) for i in range(4)]
    uuids = [f"GPU-{i}aaa" for i in range(4)]
    assert device.visible(gpus, uuids, None) == gpus
    assert [g.index for g in device.visible(gpus, uuids, "2,0")] == [2, 0]
    assert [g.index for g in device.visible(gpus, uuids, "GPU-3")] == [3]
    assert device.visible(gpus, uuids, "") == []
    assert [g.index for g in device.visible(gpus, uuids, "1,GPU-x,2")] == [1]
