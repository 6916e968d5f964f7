"""Does the model fit the GPU? Arithmetic from the model folder, before vLLM loads it.

vLLM takes ``gpuMemoryUtilization`` x the card's total memory and, at start, refuses when
that much is not free, or when after the weights there is no room for the KV cache of one
``maxModelLen`` sequence. Both can be foreseen from the folder: the weights are the
safetensors files' sizes, the KV cache per token is 2 (K and V) x layers x KV heads x head
size x bytes per element. What vLLM adds on top (activations, CUDA graphs, the CUDA
context) is an allowance here, not a measurement.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_copilot.engine.device import GpuInfo
from lsp_copilot.settings.engine import EngineSettings

GIB = 2**30
OVERHEAD_BYTES = 2 * GIB
"""Activations, CUDA graphs and the CUDA context of one small-batch engine: an allowance."""
OVERHEAD_SHARE = 0.1
"""...plus this share of the weights (larger models have larger activations)."""
MARGIN = 1.15
"""Utilization computed from the fit asks for this much more than the estimate."""
MAX_UTILIZATION = 0.9
"""vLLM's own default; the most a computed utilization asks for."""
MIN_UTILIZATION = 0.1

_DTYPE_BYTES = {"float32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2}


@dataclass(frozen=True)
class ModelShape:
    """What the memory estimate needs from a model folder."""

    weight_bytes: int
    kv_bytes_per_token: int


def _config(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / "config.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    text = data.get("text_config")  # multimodal configs keep the LM's numbers here
    return {**data, **text} if isinstance(text, dict) else data


def weight_bytes(folder: Path) -> int:
    """Bytes of the folder's safetensors files (0 if it has none)."""
    return sum(p.stat().st_size for p in folder.glob("*.safetensors") if p.is_file())


def kv_bytes_per_token(config: dict[str, Any], settings: EngineSettings) -> int | None:
    """2 x layers x KV heads x head size x element bytes, or None if config lacks them."""
    layers = config.get("num_hidden_layers")
    heads = config.get("num_attention_heads")
    kv_heads = config.get("num_key_value_heads") or heads
    head = config.get("head_dim")
    if not isinstance(head, int) and isinstance(config.get("hidden_size"), int) and heads:
        head = config["hidden_size"] // heads
    if not (isinstance(layers, int) and isinstance(kv_heads, int) and isinstance(head, int)
            and min(layers, kv_heads, head) > 0):
        return None
    kv = settings.kv_cache_dtype
    if kv.startswith("fp8"):
        element = 1
    elif kv in _DTYPE_BYTES:
        element = _DTYPE_BYTES[kv]
    else:  # auto: the model's dtype (the dtype setting, else the checkpoint's)
        dtype = settings.dtype if settings.dtype != "auto" else str(
            config.get("torch_dtype") or config.get("dtype") or "bfloat16")
        element = _DTYPE_BYTES.get(dtype, 2)
    return 2 * layers * kv_heads * head * element


def model_shape(model: str, settings: EngineSettings) -> ModelShape | None:
    """The shape of a local model folder; None for a hub id or a folder without numbers."""
    folder = Path(model).expanduser()
    config = _config(folder)
    if config is None:
        return None
    weights = weight_bytes(folder)
    per_token = kv_bytes_per_token(config, settings)
    if not weights or per_token is None:
        return None
    return ModelShape(weights, per_token)


def needed_bytes(shape: ModelShape, settings: EngineSettings, sequences: int) -> int:
    """Per GPU: weights + KV cache for ``sequences`` x maxModelLen tokens + the allowance.
    Tensor parallelism splits weights and KV cache across GPUs."""
    split = max(1, settings.tensor_parallel_size)
    kv = shape.kv_bytes_per_token * settings.model_len("cuda") * max(1, sequences)
    overhead = OVERHEAD_BYTES + OVERHEAD_SHARE * shape.weight_bytes
    return int((shape.weight_bytes + kv) / split + overhead)


def utilization_for(shape: ModelShape, settings: EngineSettings, sequences: int,
                    gpu: GpuInfo) -> float:
    """The share of ``gpu`` to ask for: the estimate with a margin, in steps of 0.05,
    between MIN_UTILIZATION and MAX_UTILIZATION; the rest of the card stays free for the
    user's other programs (and for other engines: tests run several at once). vLLM refuses
    to start when the share is not free, so a busy card gets what is free, as long as one
    maxModelLen sequence still fits."""
    total = gpu.total_bytes
    want = math.ceil(needed_bytes(shape, settings, sequences) * MARGIN / total * 20) / 20
    want = min(MAX_UTILIZATION, max(MIN_UTILIZATION, want))
    free = math.floor(gpu.free_bytes / total * 100) / 100 - 0.01
    if want > free >= needed_bytes(shape, settings, 1) / total:
        want = free
    return round(want, 2)


def fit_report(shape: ModelShape | None, settings: EngineSettings, sequences: int,
               utilization: float, gpus: list[GpuInfo] | None) -> dict[str, Any]:
    """What doctor shows: the arithmetic, one verdict per GPU and the setting to change."""
    if shape is None:
        return {"known": False, "detail": "the model is not a local folder with safetensors "
                "files and a config.json: vLLM decides at load time"}
    one = needed_bytes(shape, settings, 1)
    full = needed_bytes(shape, settings, sequences)
    report: dict[str, Any] = {
        "known": True,
        "weights_gib": round(shape.weight_bytes / GIB, 2),
        "kv_cache_mib_per_1k_tokens": round(shape.kv_bytes_per_token * 1000 / 2**20, 1),
        "needed_gib_one_sequence": round(one / GIB, 2),
        "needed_gib_all_sequences": round(full / GIB, 2),
        "sequences": sequences,
        "allowance_gib": round((OVERHEAD_BYTES + OVERHEAD_SHARE * shape.weight_bytes) / GIB, 2),
        "gpus": [],
    }
    split = max(1, settings.tensor_parallel_size)
    kv_one = shape.kv_bytes_per_token * settings.model_len("cuda") / split
    fixed = one - kv_one  # weights on this GPU + the allowance
    for gpu in gpus or []:
        budget = utilization * gpu.total_bytes
        verdict: dict[str, Any] = {"index": gpu.index, "budget_gib": round(budget / GIB, 2),
                                   "fits": one <= budget and budget <= gpu.free_bytes}
        if budget > gpu.free_bytes:
            most = math.floor(gpu.free_bytes / gpu.total_bytes * 100) / 100
            verdict["change"] = (
                f"only {gpu.free_bytes / GIB:.1f} GiB is free but gpuMemoryUtilization "
                f"{utilization} asks for {budget / GIB:.1f} GiB: lower gpuMemoryUtilization "
                f"to at most {most:.2f}, or close what holds the GPU")
        elif fixed > budget:
            verdict["change"] = (
                "the weights alone do not fit: raise gpuMemoryUtilization, use a quantized "
                "model (AWQ, or `quantization: fp8`), a smaller model, or tensorParallelSize")
        elif one > budget:
            tokens = int((budget - fixed) * split // shape.kv_bytes_per_token) // 256 * 256
            verdict["change"] = (
                f"no room for the KV cache of one maxModelLen ({settings.model_len('cuda')}) "
                f"sequence: lower maxModelLen to about {tokens}, set kvCacheDtype "
                "'fp8', or raise gpuMemoryUtilization")
        report["gpus"].append(verdict)
    return report
