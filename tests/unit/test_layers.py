"""The layout holds: imports point down the layers only, and no modules import each other
in a circle. Every import counts, also one inside a function or under TYPE_CHECKING: a
cycle that only runs late is still a cycle a reader has to untangle.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "lsp_copilot"

# Higher layers may import lower ones; packages in one layer do not import each other.
# docs/architecture.md draws this table, row for row (test_the_architecture_doc_draws_it).
LAYERS: list[set[str]] = [
    {"__main__"},  # `python -m lsp_copilot`: calls the command line
    {"cli"},
    {"server"},
    {"pipeline"},
    {"context", "engine", "postprocess", "acceptance"},
    {"prompts", "models"},
    {"documents"},
    {"language", "tokens"},
    {"settings", "telemetry", "logs"},
    {"privacy", "paths", "gc_timing", "process"},
    {"__init__"},  # the version
]
MAX_LINES = 500
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def _rank(part: str) -> int:
    for rank, layer in enumerate(LAYERS):
        if part in layer:
            return rank
    raise AssertionError(f"{PACKAGE}.{part} is in no layer of {__file__}: place it")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:
                anchor = module.split(".")[: -node.level] if path.name != "__init__.py" else \
                    module.split(".")[: len(module.split(".")) - node.level + 1]
                base = ".".join([*anchor, node.module])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name == PACKAGE or name.startswith(PACKAGE + ".")}


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in (ROOT / PACKAGE).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets = set()
        for name in _imports(path, module):
            while name not in files and "." in name:  # `from pkg import function`
                name = name.rsplit(".", 1)[0]
            if name in files and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_imports_point_down_the_layers_only() -> None:
    upward = []
    for module, targets in sorted(_graph().items()):
        for target in sorted(targets):
            a, b = _top(module), _top(target)
            if a != b and _rank(b) <= _rank(a) and target != PACKAGE:
                upward.append(f"{module} -> {target}")
    assert upward == [], "imports that do not point down the layers:\n" + "\n".join(upward)


def _drawn_layers() -> list[set[str]]:
    """The rows of the diagram under "## Layers" in docs/architecture.md (a comment in
    parentheses ends a row)."""
    section = ARCHITECTURE.read_text("utf-8").split("\n## Layers\n", 1)[1]
    diagram = section.split("```", 2)[1]
    return [{name.removesuffix("/").removesuffix(".py") for name in row.split("(")[0].split()}
            for row in diagram.strip("\n").splitlines()]


def test_the_architecture_doc_draws_it() -> None:
    """One layer order: the one this test enforces is the one the architecture doc draws."""
    assert _drawn_layers() == LAYERS


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert cycles == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The graph is built from real imports: the server state imports the pipeline."""
    graph = _graph()
    assert f"{PACKAGE}.pipeline.completer" in graph[f"{PACKAGE}.server.state"]
    assert _rank("server") < _rank("pipeline")


def test_every_module_reads_in_one_sitting() -> None:
    long = [f"{p.relative_to(ROOT)}: {n} lines"
            for folder in (PACKAGE, "lsp_copilot_bench")
            for p in sorted((ROOT / folder).rglob("*.py"))
            if (n := len(p.read_text("utf-8").splitlines())) > MAX_LINES]
    assert long == [], f"modules over {MAX_LINES} lines:\n" + "\n".join(long)


def test_layers_take_settings_groups_not_the_flat_settings() -> None:
    """Only settings/ itself names the flat ``Settings``: a layer takes its group (or a
    composite of groups from settings/layers.py), a composition root the SettingsHub."""
    offenders = []
    for folder in (PACKAGE, "lsp_copilot_bench"):
        for path in (ROOT / folder).rglob("*.py"):
            module = _module_name(path)
            if module.startswith(f"{PACKAGE}.settings"):
                continue
            if "lsp_copilot.settings.core.Settings" in _imports(path, module):
                offenders.append(module)
    assert offenders == []
