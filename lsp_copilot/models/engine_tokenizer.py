"""The model the engine would load, and its tokenizer as a token counter, without starting
an engine: the context audit and the benchmarks count tokens as the engine does."""

from __future__ import annotations

from lsp_copilot.tokens import TokenCounter, TokenCounters


def engine_counter(model: str | None, counters: TokenCounters | None = None) -> TokenCounter:
    """The engine's tokenizer when its folder is prepared; cl100k otherwise. ``counters``
    are the caller's (a one-shot command that passes none gets its own)."""
    counters = counters or TokenCounters()
    folder = engine_model(model)
    return counters.for_model(folder) if folder else counters.fallback()


def engine_model(model: str | None) -> str | None:
    """The folder (or hub id) the engine would load: ``model`` (a preset's folder for a
    preset name), else the default preset's folder."""
    try:
        from lsp_copilot.models.folders import default_model_dir, model_dir
        from lsp_copilot.models.presets import is_preset, preset

        if model:
            return str(model_dir(preset(model))) if is_preset(model) else model
        return str(default_model_dir())
    except Exception:
        return model or None
