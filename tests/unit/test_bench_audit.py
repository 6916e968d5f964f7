"""bench context's audit across requests: tokens per layer, cuts, what summaries save."""

from __future__ import annotations

from pathlib import Path

from lsp_copilot.context.builder import build_context
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.context.index.workspace_index import WorkspaceIndex
from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.prompts.templates import template_for
from lsp_copilot.tokens import TiktokenCounter
from lsp_copilot_bench.context_audit import LayerAudit


def test_audit_counts_layers_and_summary_savings(tmp_path: Path, cl100k: TiktokenCounter) -> None:
    methods = "".join(
        f"    def op{i}(self, x):\n        '''Operation {i}.'''\n"
        + "".join(f"        x = x * {j} + {i}\n" for j in range(8)) + "        return x\n\n"
        for i in range(6))
    (tmp_path / "lib.py").write_text(f"class Engine:\n{methods}")
    main = "from lib import Engine\n\n\ndef run(v):\n    e = Engine()\n    return e.op1(v) + \n"
    (tmp_path / "main.py").write_text(main)
    index = WorkspaceIndex(tmp_path)
    index.build()
    store = DocumentStore()
    uri = (tmp_path / "main.py").as_uri()
    store.open(uri, "python", 1, main)
    counter = cl100k
    audit = LayerAudit(index, counter)
    for budget in (256, 2048):
        ctx = build_context(store.snapshot(uri), len(main) - 1, counter, template_for(None),
                            budget, "single-line", workspace=Workspace(index))
        audit.add(ctx)
    report = audit.report()
    assert report["builds"] == 2
    assert report["layers"]["P0 cursor window"]["present"] == 2
    # The class (60 lines) came as its summary: header, docstrings, method signatures.
    assert report["summaries"] >= 1
    assert report["summary_saving"] is not None and report["summary_saving"] > 0.5
    assert report["full_definition_tokens"] > report["summary_tokens"]
