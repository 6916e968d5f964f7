"""P2's call sites of the function being written: the function found from the cursor
(also on a header still being typed), its callers found through the index, and their
call in the prompt."""

from __future__ import annotations

import re
from pathlib import Path

from lsp_copilot.context.builder import build_context
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.context.index.workspace_index import WorkspaceIndex
from lsp_copilot.context.layers.call_sites import function_being_written
from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.language.folders import language_config
from lsp_copilot.prompts.templates import template_for
from lsp_copilot.tokens import TiktokenCounter

PY = re.compile(language_config("python").function_header)


def test_the_function_being_written_is_found_from_its_header_or_body() -> None:
    assert function_being_written("x = 1\n\ndef init_workspace(", PY) == ("init_workspace", 2)
    signature = "def init_workspace(\n    target: Path,\n    "
    assert function_being_written(signature, PY) == ("init_workspace", 0)
    body = "class W:\n    async def lrem(self, name):\n        if name:\n            "
    assert function_being_written(body, PY) == ("lrem", 1)
    over_lines = "def f(\n    a,\n) -> None:\n    x = 1\n    "
    assert function_being_written(over_lines, PY) == ("f", 0)
    line_start = "def init_workspace(\n    target: Path,\n"  # where a prompt's base is cut
    assert function_being_written(line_start, PY) == ("init_workspace", 0)
    sibling = "class W:\n    def a(self):\n        pass\n\n    def b(self):\n        "
    assert function_being_written(sibling, PY) == ("b", 4)


def test_outside_a_function_there_is_none() -> None:
    assert function_being_written("import os\n\nx = os.getcwd(", PY) is None
    assert function_being_written("def f():\n    pass\n\n\nclass W:\n    ", PY) is None
    assert function_being_written("def f():\n    pass\nx = 1\n", PY) is None
    assert function_being_written("import os\n", PY) is None


def test_a_callers_keywords_are_in_the_prompt(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "cli.py").write_text(
        "from pkg.workspace import init_workspace\n\n\ndef main(args):\n"
        "    result = init_workspace(\n        args.target,\n        baseline=args.baseline,\n"
        "        force_overwrite=True,\n    )\n    return result\n")
    (tmp_path / "pkg" / "other.py").write_text("def unrelated():\n    return 1\n")
    text = "from pathlib import Path\n\n\ndef init_workspace(\n    target: Path,\n    "
    (tmp_path / "pkg" / "workspace.py").write_text(text)
    index = WorkspaceIndex(tmp_path)
    index.build()
    assert index.callers("init_workspace") == ["pkg/cli.py"]
    store = DocumentStore()
    uri = (tmp_path / "pkg" / "workspace.py").as_uri()
    store.open(uri, "python", 1, text)
    snap = store.snapshot(uri)
    ctx = build_context(snap, len(snap.data), TiktokenCounter(), template_for(None), 1024,
                        "single-line", workspace=Workspace(index))
    assert "force_overwrite=True," in ctx.prompt
    p2 = next(layer for layer in ctx.layers if layer.name.startswith("P2"))
    assert p2.source.startswith("pkg/cli.py")
    index.remove("pkg/cli.py")
    assert index.callers("init_workspace") == []


def _prompt(root: Path, rel: str, text: str) -> str:
    index = WorkspaceIndex(root)
    index.build()
    store = DocumentStore()
    uri = (root / rel).as_uri()
    store.open(uri, "python", 1, text)
    snap = store.snapshot(uri)
    return build_context(snap, len(snap.data), TiktokenCounter(), template_for(None), 1024,
                         "single-line", workspace=Workspace(index)).prompt


def test_a_method_of_the_same_name_or_another_language_is_no_caller(tmp_path: Path) -> None:
    (tmp_path / "seen.py").write_text("def mark(seen, x):\n    seen.add(x_marked_here)\n")
    (tmp_path / "ui.ts").write_text("function f(s: Set<number>) {\n  add(typescript_call);\n}\n")
    (tmp_path / "use.py").write_text("from calc import add\n\nTOTAL = add(1, plain_call)\n")
    text = "def add(a, b):\n    return "
    (tmp_path / "calc.py").write_text(text)
    prompt = _prompt(tmp_path, "calc.py", text)
    assert "plain_call" in prompt
    assert "x_marked_here" not in prompt and "typescript_call" not in prompt


def test_a_method_is_called_on_an_object(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("def run(r):\n    r.lrem('k', 0, value_from_caller)\n")
    text = "class Pipe:\n    def lrem(self, name,\n             "
    (tmp_path / "pipe.py").write_text(text)
    assert "value_from_caller" in _prompt(tmp_path, "pipe.py", text)
