"""`lsp-copilot context FILE:LINE:COL`: what the engine would get, and where tokens go.

Runs the same ``build_context`` as the server, with the engine's own tokenizer (the
model folder's tokenizer.json; no engine is started) and an index of the workspace.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from lsp_copilot.context.budgets import Budgets, budgets_for
from lsp_copilot.context.builder import build_context
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.context.index.workspace_index import WorkspaceIndex
from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.engine.device import detect
from lsp_copilot.language.ids import language_id_for_path
from lsp_copilot.language.trigger import completion_mode
from lsp_copilot.models.engine_tokenizer import engine_counter, engine_model
from lsp_copilot.privacy import Privacy
from lsp_copilot.privacy.ignore import RepoIgnores
from lsp_copilot.privacy.redact import Redactor
from lsp_copilot.prompts.encoder import PromptEncoder
from lsp_copilot.prompts.family import detect_family
from lsp_copilot.prompts.templates import template_for
from lsp_copilot.settings.layers import RequestSettings


def find_root(path: Path) -> Path:
    """The nearest folder with a .git above ``path``, else the file's folder."""
    start = path.resolve().parent
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def audit(path: Path, line: int, col: int, root: Path | None, budget: int | None,
          model: str | None = None, template: str | None = None,
          budgets: Budgets | None = None, explicit: bool = False,
          ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The audit JSON (schema in docs/context.md: layers, counts, the exact prompt) and timings.

    The template is the engine's (``template``, else the family detected from the model
    folder), and ``prompt_token_ids`` are the ids the engine gets, so that the audit shows
    the engine's input exactly. Without ``budget``, the one ``budgets`` (default: the
    default settings' on this machine) gives a request of this mode (``explicit``: asked
    for by the user).
    """
    budgets = budgets or budgets_for(RequestSettings(), detect("auto").device)
    text = path.read_bytes().decode("utf-8", "surrogateescape")
    store = DocumentStore()
    uri = path.resolve().as_uri()
    store.open(uri, language_id_for_path(str(path)), 0, text)
    offset = store.get_offset(uri, line - 1, col - 1, "utf-32")
    snapshot = store.snapshot(uri)
    started = time.perf_counter()
    # The server's privacy rules (defaults, the root's `.lspcopilotignore`): files they
    # withhold stay out of the index, and this one gets no prompt at all.
    ignores = RepoIgnores()
    ignores.add(root or find_root(path))
    privacy = Privacy(ignores=ignores)
    index = WorkspaceIndex(root or find_root(path))
    index.private = privacy.reason
    index.build()
    index_seconds = time.perf_counter() - started
    withheld = privacy.reason(uri, snapshot.data)
    workspace = Workspace(index, lambda: [] if withheld else [(uri, text)])
    counter = engine_counter(model)
    folder = engine_model(model)
    chosen = template_for(template if template and template != "auto"
                          else detect_family(folder) if folder else None)
    if budget is None:
        budget = budgets.for_request(completion_mode(snapshot, offset), explicit)
    started = time.perf_counter()
    ctx = build_context(snapshot, offset, counter, chosen, budget,
                        workspace=workspace, exact_count=True, redactor=Redactor(),
                        suffix_share=budgets.suffix_share)
    build_ms = (time.perf_counter() - started) * 1000
    timings = {"index_seconds": round(index_seconds, 3), "build_ms": round(build_ms, 2),
               "indexed_files": len(index)}
    privacy_report = {"withheld": withheld, "redacted": list(ctx.redacted)}
    if withheld is not None:  # what the server does: no prompt, no completion
        return {"language": snapshot.grammar or snapshot.language_id, "mode": ctx.mode,
                "budget_tokens": ctx.budget_tokens, "prompt_tokens": 0,
                "budgets": budgets.as_dict() | {"used": ctx.budget_tokens},
                "tokenizer": ctx.tokenizer, "layers": [], "prompt": "",
                "template": chosen.name, "prompt_token_ids": None,
                "privacy": privacy_report | {"redacted": []}}, timings
    return {
        "privacy": privacy_report,
        "language": snapshot.grammar or snapshot.language_id,
        "mode": ctx.mode,
        "budget_tokens": ctx.budget_tokens,
        "budgets": budgets.as_dict() | {"used": ctx.budget_tokens},
        "prompt_tokens": ctx.prompt_tokens,
        "tokenizer": ctx.tokenizer,
        "layers": [
            {"name": layer.name, "source": layer.source, "tokens": layer.tokens,
             "truncated": layer.truncated, "text": layer.text}
            for layer in ctx.layers
        ],
        "prompt": ctx.prompt,
        "template": chosen.name,
        "prompt_token_ids": list(encoder.encode(ctx.pieces or (ctx.prompt,)).ids)
        if (encoder := PromptEncoder.for_model(folder) if folder else None) else None,
    }, timings


def render_table(report: dict[str, Any], timings: dict[str, Any] | None = None) -> str:
    """The context composition audit as a table: layer, tokens, share, truncated, sources."""
    rows = [("layer", "tokens", "share", "truncated", "source")]
    total = report["prompt_tokens"] or 1
    for layer in report["layers"]:
        source = layer["source"]
        if len(source) > 70:
            source = source[:67] + "..."
        rows.append((layer["name"], str(layer["tokens"]),
                     f"{100 * layer['tokens'] / total:.0f}%", "yes" if layer["truncated"] else "",
                     source))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4] for r in rows]
    lines.append("")
    lines.append(
        f"{report['language']}, mode {report['mode']}: {report['prompt_tokens']} of "
        f"{report['budget_tokens']} tokens ({report['tokenizer']})")
    if timings:
        lines.append(f"index: {timings['indexed_files']} files in {timings['index_seconds']} s; "
                     f"context built in {timings['build_ms']} ms")
    privacy = report.get("privacy") or {}
    if privacy.get("withheld"):
        lines.append(f"withheld: {privacy['withheld']}: no prompt, no completion here")
    elif privacy.get("redacted"):
        found = privacy["redacted"]
        lines.append(f"redacted: {len(found)} secret(s) replaced by placeholders: "
                     + ", ".join(found[:8]) + (", ..." if len(found) > 8 else ""))
    else:
        lines.append("redacted: nothing (no secret found in the prompt's text)")
    return "\n".join(lines)
