"""The context engine over a small workspace: import resolution (Python, TypeScript, Go,
Rust, Java), layers, budget and determinism (hypothesis)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_copilot.context.builder import build_context
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.context.index.workspace_index import WorkspaceIndex
from lsp_copilot.context.result import Layer
from lsp_copilot.documents.store import DocumentStore, Snapshot
from lsp_copilot.language.ids import language_id_for_path
from lsp_copilot.prompts.templates import template_for
from lsp_copilot.tokens import TiktokenCounter

FILES = {
    "pkg/__init__.py": "",
    "pkg/geometry.py": (
        "class Rectangle:\n"
        '    """An axis-aligned rectangle."""\n'
        "    width: float\n"
        "    height: float\n\n"
        "    def area(self) -> float:\n"
        + "".join(f"        x{i} = {i}\n" for i in range(20))
        + "        return self.width * self.height\n\n"
        "    def scaled(self, k: float) -> 'Rectangle':\n"
        "        return Rectangle()\n\n\n"
        "def perimeter(r: Rectangle) -> float:\n"
        '    """Sum of the four sides."""\n'
        "    return 2 * (r.width + r.height)\n"
    ),
    "pkg/sub/__init__.py": "",
    "pkg/sub/tools.py": "from ..geometry import perimeter\n\ndef twice(x):\n    return 2 * x\n",
    "app.py": (
        "import os\n"
        "from pkg.geometry import Rectangle, perimeter\n"
        "from pkg.sub import tools\n\n\n"
        "def main():\n"
        "    r = Rectangle()\n"
        "    total = perimeter(r)\n"
        "    return \n"
    ),
    "web/src/lib/shapes.ts": "export function makeShape(n: number): Shape { return {n}; }\n"
                             "export interface Shape { n: number }\n",
    "web/src/lib/index.ts": "export const ZERO = 0;\n",
    "web/src/app.ts": "import { makeShape } from './lib/shapes';\nimport * as lib from './lib';\n"
                      "const s = makeShape(1);\n",
    "go/go.mod": "module example.com/m\n",
    "go/geo/shape.go": "package geo\n\nfunc Area(w, h int) int { return w * h }\n",
    "go/main.go": 'package main\n\nimport "example.com/m/geo"\n\nfunc main() { geo.Area(1, 2) }\n',
    "rs/src/lib.rs": "mod util;\nuse crate::util::helper;\n",
    "rs/src/util.rs": "pub fn helper() -> u32 { 1 }\n",
    "java/src/main/java/com/acme/Shape.java": "package com.acme;\npublic class Shape {}\n",
    "java/src/main/java/com/acme/app/Main.java":
        "package com.acme.app;\nimport com.acme.Shape;\nclass Main {}\n",
    "node_modules/dep/index.js": "function ignored() {}\n",
    "gen/big_pb2.py": "def generated(): pass\n",
    "skip/me.py": "def ignored_by_gitignore(): pass\n",
    ".gitignore": "skip/\n",
}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, WorkspaceIndex]:
    root = tmp_path_factory.mktemp("ws")
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    index = WorkspaceIndex(root)
    index.build()
    return root, index


def _snapshot(root: Path, rel: str, text: str | None = None) -> Snapshot:
    store = DocumentStore()
    path = root / rel
    uri = path.as_uri()
    store.open(uri, language_id_for_path(rel), 1, text if text is not None else path.read_text())
    return store.snapshot(uri)


def _resolved(index: WorkspaceIndex, rel: str) -> set[str]:
    entry = index.file(rel)
    assert entry is not None
    imports = ((i.module, i.names) for i in entry.symbols.imports)
    return {target for _, target, _ in index.resolve_imports(rel, entry.grammar, imports)}


def test_index_skips_vendored_generated_and_ignored(workspace: tuple[Path, WorkspaceIndex]) -> None:
    _, index = workspace
    files = index.files()
    assert "app.py" in files and "pkg/geometry.py" in files
    assert not any(f.startswith(("node_modules", "skip/", "gen/")) for f in files)


def test_python_imports_resolve(workspace: tuple[Path, WorkspaceIndex]) -> None:
    _, index = workspace
    assert _resolved(index, "app.py") == {"pkg/geometry.py", "pkg/sub/__init__.py"}
    assert _resolved(index, "pkg/sub/tools.py") == {"pkg/geometry.py"}  # relative import


def test_typescript_imports_resolve(workspace: tuple[Path, WorkspaceIndex]) -> None:
    _, index = workspace
    assert _resolved(index, "web/src/app.ts") == {"web/src/lib/shapes.ts", "web/src/lib/index.ts"}


def test_go_imports_resolve(workspace: tuple[Path, WorkspaceIndex]) -> None:
    _, index = workspace
    assert _resolved(index, "go/main.go") == {"go/geo/shape.go"}


def test_rust_and_java_imports_resolve(workspace: tuple[Path, WorkspaceIndex]) -> None:
    _, index = workspace
    assert _resolved(index, "rs/src/lib.rs") == {"rs/src/util.rs"}
    assert _resolved(index, "java/src/main/java/com/acme/app/Main.java") == {
        "java/src/main/java/com/acme/Shape.java"}


def test_layers_bring_definitions_from_other_files(
    workspace: tuple[Path, WorkspaceIndex], cl100k: TiktokenCounter,
) -> None:
    root, index = workspace
    snap = _snapshot(root, "app.py")
    ctx = build_context(snap, len(snap.data), cl100k, template_for(None), 512,
                        "single-line", workspace=Workspace(index))
    assert "def perimeter(r: Rectangle) -> float:" in ctx.prompt
    assert "class Rectangle:" in ctx.prompt
    # Long definitions come as summaries: signatures, not bodies.
    assert "def area(self) -> float:" in ctx.prompt and "x19 = 19" not in ctx.prompt
    assert ctx.prompt.endswith(ctx.prefix) and ctx.layers[-1].name.startswith("P0")
    assert ctx.prompt_tokens <= 512
    # The lines that name the prompt's files, which post-processing never lets through.
    assert ctx.headers and all(h in ctx.prompt for h in ctx.headers)
    assert "# app.py" in ctx.headers and any(h != "# app.py" for h in ctx.headers)


def test_index_follows_edits(workspace: tuple[Path, WorkspaceIndex]) -> None:
    root, index = workspace
    ws = Workspace(index)
    ws.edited((root / "pkg/sub/tools.py").as_uri(), b"def thrice(x):\n    return 3 * x\n")
    ws.flush()
    assert [rel for rel, _ in index.lookup("thrice")] == ["pkg/sub/tools.py"]
    assert index.lookup("twice") == []


TEXT = FILES["pkg/geometry.py"] + FILES["app.py"] * 3


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    budget=st.integers(min_value=16, max_value=1500),
    position=st.floats(min_value=0, max_value=1),
    fim=st.booleans(),
)
def test_budget_never_exceeded_and_deterministic(
    workspace: tuple[Path, WorkspaceIndex], budget: int, position: float, fim: bool,
    cl100k: TiktokenCounter,
) -> None:
    root, index = workspace
    snap = _snapshot(root, "app.py", TEXT)
    offset = int(len(snap.data) * position)
    while 0 < offset < len(snap.data) and (snap.data[offset] & 0xC0) == 0x80:
        offset -= 1
    template = template_for("starcoder-fim" if fim else None)
    counter = cl100k
    a = build_context(snap, offset, counter, template, budget, workspace=Workspace(index))
    b = build_context(snap, offset, counter, template, budget, workspace=Workspace(index))
    assert a.prompt == b.prompt
    assert counter.count(a.prompt) <= budget
    assert a.prompt_tokens <= budget


def test_p4_similar_snippets_from_open_buffers(
    workspace: tuple[Path, WorkspaceIndex], cl100k: TiktokenCounter,
) -> None:
    root, index = workspace
    other = (root / "other.py").as_uri()
    similar = ("def report(rect):\n    width_total = rect.width * 3\n"
               "    height_total = rect.height\n")
    snap = _snapshot(root, "app.py", "def area(rect):\n    width_total = rect.width\n    ")
    ws = Workspace(index, lambda: [(other, "x = 1\n" * 40 + similar), (snap.uri, snap.text)])
    ctx = build_context(snap, len(snap.data), cl100k, template_for(None), 512,
                        workspace=ws)
    p4 = [layer for layer in ctx.layers if layer.name.startswith("P4")]
    assert p4 and "height_total = rect.height" in p4[0].text and "other.py" in p4[0].source



def test_p4_skips_an_open_buffer_larger_than_the_index_reads(
    workspace: tuple[Path, WorkspaceIndex], cl100k: TiktokenCounter,
) -> None:
    """A buffer of megabytes (a log, a data dump opened in the editor) is not searched for
    snippets nor shown: the index leaves such files out on disk, open they stay out too."""
    root, index = workspace
    other = (root / "dump.py").as_uri()
    similar = ("def report(rect):\n    width_total = rect.width * 3\n"
               "    height_total = rect.height\n")
    big = "x = 1\n" * 200_000 + similar
    snap = _snapshot(root, "app.py", "def area(rect):\n    width_total = rect.width\n    ")
    ws = Workspace(index, lambda: [(other, big), (snap.uri, snap.text)])
    ws.edited(other, None, 200_001)
    ctx = build_context(snap, len(snap.data), cl100k, template_for(None), 512,
                        workspace=ws)
    assert "height_total" not in ctx.prompt and "dump.py" not in ctx.prompt


CODEC = ("import codecs\n\n"
         "class Codec(codecs.Codec):\n"
         "    def encode(self, text, errors='strict'):\n"
         "        return codecs.charmap_encode(text, errors, encoding_table)\n"
         "    def decode(self, text, errors='strict'):\n"
         "        return codecs.charmap_decode(text, errors, decoding_table)\n\n")
WRITER = "class StreamWriter(Codec, codecs.StreamWriter):\n    pass\n"


def _p4(layers: tuple[Layer, ...]) -> list[Layer]:
    return [layer for layer in layers if layer.name.startswith("P4")]


def test_p4_shows_what_follows_similar_code_in_a_file_of_the_same_folder(
        tmp_path: Path, cl100k: TiktokenCounter) -> None:
    """A file next to this one, not open, with the same code: the snippet is what comes
    after it there (RepoCoder's continuation), the line this file needs next."""
    (tmp_path / "enc").mkdir()
    (tmp_path / "enc" / "cp1251.py").write_text(CODEC + WRITER + "x = 1\n" * 30)
    (tmp_path / "enc" / "cp1252.py").write_text(CODEC)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "far.py").write_text(CODEC + "class Unrelated:\n    pass\n")
    index = WorkspaceIndex(tmp_path)
    index.build()
    snap = _snapshot(tmp_path, "enc/cp1252.py", CODEC + "class ")
    ctx = build_context(snap, len(snap.data), cl100k, template_for(None), 1024,
                        workspace=Workspace(index, lambda: [(snap.uri, snap.text)]))
    p4 = _p4(ctx.layers)
    assert p4 and "class StreamWriter(Codec, codecs.StreamWriter):" in p4[0].text
    assert "enc/cp1251.py" in p4[0].source and "far.py" not in ctx.prompt


def test_p4_shows_this_files_code_below_the_cursor(tmp_path: Path, cl100k: TiktokenCounter) -> None:
    """A model without fill-in-the-middle never sees the code after the cursor: what
    follows code like the cursor's there is shown as a snippet."""
    rows = ["utf_8", "latin_1", "ascii", "utf_16"]
    calls = "".join(f"    table.add('{r}', codecs.{r}_encode, codecs.{r}_decode)\n"
                    for r in rows)
    above = "import codecs\n\ndef setup(table):\n" + calls[:calls.rindex("    table")]
    text = (above + "    table.\n" + "y = 2\n" * 20 + "\n\ndef setup_again(table):\n" + calls
            + "z = 3\n" * 12)
    snap = _snapshot(tmp_path, "solo.py", text)
    offset = len((above + "    table.").encode())
    ctx = build_context(snap, offset, cl100k, template_for(None), 1024,
                        workspace=Workspace(WorkspaceIndex(tmp_path),
                                            lambda: [(snap.uri, snap.text)]))
    p4 = _p4(ctx.layers)
    assert p4 and "solo.py" in p4[0].source
    assert "table.add('utf_16'" in p4[0].text
    # Not what follows the window's own lines (they would match themselves best).
    assert "y = 2" not in p4[0].text


def test_p4_recent_edit_of_another_buffer(
    workspace: tuple[Path, WorkspaceIndex], cl100k: TiktokenCounter,
) -> None:
    root, index = workspace
    other = (root / "notes.py").as_uri()
    text = "".join(f"line_{i} = {i}\n" for i in range(30))
    snap = _snapshot(root, "app.py", "import os\n\n")
    ws = Workspace(index, lambda: [(other, text), (snap.uri, snap.text)])
    ws.edited(other, None, 20)
    ctx = build_context(snap, len(snap.data), cl100k, template_for(None), 512,
                        workspace=ws)
    p4 = [layer for layer in ctx.layers if layer.name.startswith("P4")]
    assert p4 and "line_20 = 20" in p4[0].text and "line_5 = 5" not in p4[0].text


def test_editing_this_document_keeps_other_buffers_recent_edits(
    workspace: tuple[Path, WorkspaceIndex], cl100k: TiktokenCounter) -> None:
    """The first keystroke in a document must not push another buffer's recent edit out
    of P4: the prompt would change early, and the warm-up's prefill would be wasted."""
    from lsp_copilot.context.layers.snippets import RECENT_EDITS

    root, index = workspace
    others = {(root / f"other{i}.py").as_uri(): f"def helper_{i}():\n    return {i}\n"
              for i in range(RECENT_EDITS)}
    snap = _snapshot(root, "app.py", "import os\n\n")
    ws = Workspace(index, lambda: [*others.items(), (snap.uri, snap.text)])
    for uri in others:
        ws.edited(uri, None, 1)

    def prompt() -> str:
        return build_context(snap, len(snap.data), cl100k, template_for(None), 1024,
                             workspace=ws).prompt

    before = prompt()
    assert all(f"return {i}" in before for i in range(RECENT_EDITS))
    ws.edited(snap.uri, None, 1)  # the user types in this document
    assert prompt() == before


def test_same_file_symbols_catch_up_after_a_pause() -> None:
    """A node away from the cursor in a document read before is extracted in the
    background: the request that finds it goes without it, the next one has it."""
    from lsp_copilot.context.index.same_file import SameFileSymbols
    from lsp_copilot.language.grammars import queries_for

    q = queries_for("python")
    assert q is not None
    symbols = SameFileSymbols()
    store = DocumentStore()
    uri = "file:///catch_up.py"
    text = "def a():\n    pass\n\n\ndef b():\n    pass\n"
    store.open(uri, "python", 1, text)
    snap = store.snapshot(uri)
    assert snap.tree is not None
    symbols.read(q, snap.tree, snap.data, uri, len(snap.data))  # the document is now warm
    store.change(uri, 2, [((0, 0, 0, 0), "def far_away():\n    pass\n")], "utf-8")
    snap = store.snapshot(uri)
    assert snap.tree is not None
    queued = symbols.read(q, snap.tree, snap.data, uri, len(snap.data))
    assert not list(queued.iter_named("far_away"))  # queued, not on this request
    assert symbols.settled(timeout=10)
    later = symbols.read(q, snap.tree, snap.data, uri, len(snap.data))
    assert list(later.iter_named("far_away"))


def test_a_failing_layer_costs_the_layers_not_the_prompt(
    workspace: tuple[Path, WorkspaceIndex], monkeypatch: pytest.MonkeyPatch,
    cl100k: TiktokenCounter,
) -> None:
    from lsp_copilot.context.layers import definitions

    def boom(*args: object) -> None:
        raise RuntimeError("bug in a layer")

    monkeypatch.setattr(definitions, "candidates", boom)
    root, index = workspace
    snap = _snapshot(root, "app.py")
    ctx = build_context(snap, len(snap.data), cl100k, template_for(None), 512,
                        workspace=Workspace(index))
    assert [layer.name for layer in ctx.layers] == ["P0 cursor window"]
    assert ctx.prompt == ctx.prefix


def test_multi_root_imports_resolve_within_the_files_folder(
    tmp_path: Path, cl100k: TiktokenCounter,
) -> None:
    """Two workspace folders both have ``util.py``: a file's import resolves in its own
    folder, and a folder removed from the workspace no longer answers."""
    for name, body in (("one", "def helper_one(a: int) -> int:\n    return a\n"),
                       ("two", "def helper_two(b: str) -> str:\n    return b\n")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "util.py").write_text(body)
        (tmp_path / name / "main.py").write_text(
            "from util import *\nimport util\n\nvalue = util.")
    one, two = WorkspaceIndex(tmp_path / "one"), WorkspaceIndex(tmp_path / "two")
    one.build()
    two.build()
    ws = Workspace(one)
    assert ws.add_index(two) and not ws.add_index(two)
    for name, other in (("one", "two"), ("two", "one")):
        snap = _snapshot(tmp_path / name, "main.py")
        ctx = build_context(snap, len(snap.data), cl100k, template_for(None), 512,
                            "single-line", workspace=ws)
        assert f"def helper_{name}(" in ctx.prompt
        assert f"def helper_{other}(" not in ctx.prompt
        assert ws.relative(snap.uri) == "main.py"
    assert ws.remove_index(tmp_path / "two") is two
    snap = _snapshot(tmp_path / "two", "main.py", "import util\n\nvalue = util.")
    ctx = build_context(snap, len(snap.data), cl100k, template_for(None), 512,
                        "single-line", workspace=ws)
    assert "def helper_" not in ctx.prompt and ws.relative(snap.uri) is None
