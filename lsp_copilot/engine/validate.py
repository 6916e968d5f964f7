"""Engine settings checked before vLLM starts: a clear sentence instead of a traceback.

vLLM finds most bad combinations itself, but only after it has spent 20-90 s importing,
spawning its EngineCore and loading weights, and then as a stack trace from a child
process. What can be decided from the settings, the model folders and the machine is
decided here, first: ``settings_problems`` when settings arrive (no files, no device),
``engine_problems`` just before the engine is created.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_copilot.engine.device import DeviceChoice, cpu_flags, gpu_count, installed_vllm
from lsp_copilot.settings.core import camel
from lsp_copilot.settings.engine import EngineSettings

NEEDS_MODEL = ("draft_model", "eagle", "eagle3")
"""Methods whose proposer is a separate set of weights named by `speculativeModel`."""

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")

ARCTIC_INFERENCE = "arctic-inference==0.1.1"
"""The version vLLM's suffix decoding names (`vllm/config/speculative.py`)."""

VERSION_FLOORS: tuple[tuple[str, str, str, str], ...] = (
    # (setting, value, first vLLM version that takes it, what to use before)
    ("speculative_method", "draft_model", "0.15.0",
     "before it vLLM's V1 engine raises NotImplementedError; use 'ngram' or 'eagle'"),
    ("speculative_method", "suffix", "0.12.0", "0.11 has no suffix method; use 'ngram'"),
    ("kv_cache_dtype", "float16", "0.19.0", "use 'auto' (the model's dtype)"),
    ("kv_cache_dtype", "bfloat16", "0.11.1", "use 'auto' (the model's dtype)"),
)
"""Settings the oldest vLLM the `gpu` extra allows (0.11) refuses, read from vLLM's
source: SpeculativeConfig's methods and CacheConfig's CacheDType in each release."""


class EngineConfigError(ValueError):
    """Settings that cannot work together; the message names the settings and the fix."""


def _name(field: str) -> str:
    return f"`{camel(field)}`"


def settings_problems(settings: EngineSettings) -> list[str]:
    """Combinations that are wrong whatever the machine and model (one sentence each)."""
    out: list[str] = []
    method = settings.speculative_method
    if method in NEEDS_MODEL and not settings.speculative_model.strip():
        weights = "draft model" if method == "draft_model" else "EAGLE head"
        out.append(
            f"{_name('speculative_method')} {method!r} needs {_name('speculative_model')}: the "
            f"folder (or hub id) of the {weights}; set it, or use 'ngram', which needs no weights"
        )
    if method == "ngram" and settings.prompt_lookup_min > settings.prompt_lookup_max:
        out.append(
            f"{_name('prompt_lookup_min')} ({settings.prompt_lookup_min}) must not exceed "
            f"{_name('prompt_lookup_max')} ({settings.prompt_lookup_max})"
        )
    if method == "suffix" and importlib.util.find_spec("arctic_inference") is None:
        out.append(
            f"{_name('speculative_method')} 'suffix' needs the arctic-inference package "
            f"(`pip install '{ARCTIC_INFERENCE}'`, or the 'lsp-copilot[suffix]' extra), which "
            "is not installed; or use 'ngram'"
        )
    if settings.weights not in (None, "bf16") and settings.quantization:
        out.append(
            f"{_name('weights')} {settings.weights!r} prepares a model whose folder declares "
            f"its quantization, which {_name('quantization')} "
            f"({settings.quantization!r}) would override; set one of them"
        )
    if (settings.enable_chunked_prefill is False and settings.max_num_batched_tokens is not None
            and settings.max_num_batched_tokens < settings.model_len("cpu")):
        out.append(
            f"{_name('max_num_batched_tokens')} ({settings.max_num_batched_tokens}) must be at "
            f"least {_name('max_model_len')} ({settings.model_len('cpu')}) when "
            f"{_name('enable_chunked_prefill')} is false: a whole prompt must fit in one step"
        )
    return out


def _release(version: str) -> tuple[int, int, int]:
    """The leading X.Y.Z of a version (0.15.0rc1 -> (0, 15, 0))."""
    found = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    if not found:
        return (0, 0, 0)
    major, minor, patch = found.groups()
    return int(major), int(minor), int(patch or 0)


def version_problems(settings: EngineSettings, installed: tuple[str, str] | None) -> list[str]:
    """Settings the installed vLLM does not know yet, each naming the version it needs."""
    if installed is None:
        return []
    dist, version = installed
    out = []
    for field, value, floor, before in VERSION_FLOORS:
        if getattr(settings, field) == value and _release(version) < _release(floor):
            out.append(
                f"{_name(field)} {value!r} needs vLLM {floor} or newer, but {dist} {version} "
                f"is installed: upgrade (`pip install -U '{dist}>={floor}'`), or {before}"
            )
    return out


def _config(model: str) -> dict[str, Any] | None:
    """A local model folder's config.json, or None (a hub id cannot be read offline)."""
    path = Path(model).expanduser() / "config.json"
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _vocab_size(config: dict[str, Any]) -> int | None:
    value = config.get("vocab_size", (config.get("text_config") or {}).get("vocab_size"))
    return value if isinstance(value, int) else None


def _head_size(config: dict[str, Any]) -> int | None:
    head = config.get("head_dim")
    if isinstance(head, int):
        return head
    hidden, heads = config.get("hidden_size"), config.get("num_attention_heads")
    if isinstance(hidden, int) and isinstance(heads, int) and heads:
        return hidden // heads
    return None


def numa_nodes() -> int:
    """NUMA nodes of this machine: vLLM's CPU backend gives each parallel worker its own."""
    nodes = list(Path("/sys/devices/system/node").glob("node[0-9]*"))
    return max(1, len(nodes))


def cuda_devices() -> int:
    """GPUs visible to NVML (never ``torch.cuda.is_available()``: see engine/device.py)."""
    return gpu_count()


def engine_problems(
    settings: EngineSettings,
    model: str,
    device: str,
    *,
    flags: Callable[[], set[str]] = cpu_flags,
    nodes: Callable[[], int] = numa_nodes,
    gpus: Callable[[], int] = cuda_devices,
    installed: Callable[[], tuple[str, str] | None] = installed_vllm,
    choice: DeviceChoice | None = None,
) -> list[str]:
    """Everything ``settings_problems`` finds, plus what depends on the device and models.

    ``model`` is the resolved target (a folder, or a hub id whose config cannot be read
    offline, in which case the checks that need it are skipped and vLLM decides).
    """
    out = settings_problems(settings)
    if choice is not None and choice.problem:
        out.append(choice.problem)
    out += version_problems(settings, installed())
    target = _config(model)
    workers = settings.tensor_parallel_size * settings.data_parallel_size
    if device == "cpu":
        if workers > nodes():
            out.append(
                f"{_name('tensor_parallel_size')} x {_name('data_parallel_size')} = {workers}, "
                f"but on CPU vLLM splits a model across NUMA nodes (sockets) and this machine "
                f"has {nodes()}; set both to 1 (they are for several GPUs or sockets)"
            )
        if settings.kv_cache_dtype.startswith("fp8"):
            have = flags()
            if not have & {"avx512f", "amx_tile"}:
                out.append(
                    f"{_name('kv_cache_dtype')} {settings.kv_cache_dtype!r} on CPU needs x86 "
                    "with AVX-512 or AMX, which this CPU lacks; use 'auto'"
                )
            head = _head_size(target) if target else None
            if head is not None and head % 32:
                out.append(
                    f"{_name('kv_cache_dtype')} {settings.kv_cache_dtype!r} on CPU needs an "
                    f"attention head size divisible by 32; this model's is {head}; use 'auto'"
                )
    elif device == "cuda" and workers > 1:
        count = gpus()
        if workers > count:
            out.append(
                f"{_name('tensor_parallel_size')} x {_name('data_parallel_size')} = {workers} "
                f"GPUs, but {count} {'is' if count == 1 else 'are'} visible; lower them"
            )
    method = settings.speculative_method
    draft = settings.speculative_model.strip()
    if method in NEEDS_MODEL and draft:
        path = Path(draft).expanduser()
        if not path.exists() and not _HUB_ID.match(draft):
            out.append(
                f"{_name('speculative_model')} {draft!r} is neither an existing folder nor a "
                "hub id (org/name)"
            )
        elif path.exists() and _config(draft) is None:
            out.append(f"{_name('speculative_model')} {draft!r} has no readable config.json")
        elif method == "draft_model" and target is not None:
            small = _config(draft)
            a, b = _vocab_size(target), _vocab_size(small) if small else None
            if a is not None and b is not None and a != b:
                out.append(
                    f"the draft model's vocabulary ({b} tokens, {draft}) differs from the "
                    f"model's ({a} tokens): draft_model needs the same tokenizer; pick a "
                    "draft model of the same family, or use 'ngram'"
                )
    return out


def check_engine(settings: EngineSettings, model: str, device: str,
                 choice: DeviceChoice | None = None) -> None:
    """Raise ``EngineConfigError`` naming every problem, before vLLM is even imported."""
    problems = engine_problems(settings, model, device, choice=choice)
    if problems:
        raise EngineConfigError("; ".join(problems))
