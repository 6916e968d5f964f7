"""Per-language fixtures: every grammars/<language>/ folder finds the enclosing scope at a
cursor (marked § in tests/fixtures/grammars/sample.*), the definitions and the imports."""

from __future__ import annotations

import glob
from pathlib import Path

import pytest
import tree_sitter

from lsp_copilot.context.index.symbols import extract
from lsp_copilot.language import folders
from lsp_copilot.language.folders import (
    LanguageConfig,
    grammars_dir,
    language_config,
    query_source,
    supported,
)
from lsp_copilot.language.grammars import queries_for
from lsp_copilot.language.ids import ts_language
from lsp_copilot.language.scopes import scopes_at

FIXTURES = Path(__file__).parent.parent / "fixtures" / "grammars"

# grammar: (fixture, first line of the enclosing function, definitions, imports)
CASES: dict[str, tuple[str, str, set[str], set[str]]] = {
    "python": ("sample.py", "def area(self, scale):", {"Shape", "area", "helper", "sides"},
               {"os.path", "collections"}),
    "javascript": ("sample.js", "area(scale) {", {"Shape", "area", "helper"},
                   {"./fsutil.js", "path"}),
    "typescript": ("sample.ts", "area(scale: number): number {",
                   {"Shape", "Sized", "area", "helper", "size"}, {"./fsutil"}),
    "tsx": ("sample.tsx", "area(scale: number): number {",
            {"Shape", "Sized", "area", "helper", "size"}, {"./fsutil"}),
    "go": ("sample.go", "func (s *Shape) Area(scale int) int {",
           {"Shape", "Area", "Helper", "Sides"}, {"fmt", "example.com/m/util"}),
    "rust": ("sample.rs", "pub fn area(&self, scale: u32) -> u32 {",
             {"Shape", "area", "helper", "sides"}, {"crate::util::fmt_area", "util"}),
    "java": ("Sample.java", "public int area(int scale) {", {"Shape", "area", "helper", "sides"},
             {"java.util.List"}),
    "c": ("sample.c", "int area(struct shape *s, int scale) {",
          {"shape", "area", "helper", "sides"}, {"stdio.h", "util.h"}),
    "cpp": ("sample.cpp", "int area(int scale) {", {"Shape", "area", "helper", "sides"},
            {"vector", "util.hpp"}),
    "csharp": ("sample.cs", "public int Area(int scale) {", {"Shape", "Area", "Helper", "sides"},
               {"System.Text"}),
    "ruby": ("sample.rb", "def area(scale)", {"Shape", "area", "helper", "sides"},
             {"json", "util"}),
    "php": ("sample.php", "public function area($scale) {", {"Shape", "area", "helper", "sides"},
            {"Geo\\Util", "util.php"}),
    "bash": ("sample.sh", "area() {", {"area", "helper"}, {"./util.sh"}),
    "lua": ("sample.lua", "function Shape:area(scale)", {"area", "helper", "Shape"},
            {"geo.util"}),
    "kotlin": ("sample.kt", "fun area(scale: Int): Int {", {"Shape", "area", "helper", "name"},
               {"geo.util.Helper"}),
}


def test_every_required_language_has_queries_and_a_readme() -> None:
    root = grammars_dir()
    assert root is not None and (root / "README.md").is_file()
    assert set(CASES) <= set(supported())


@pytest.mark.parametrize("grammar", sorted(CASES))
def test_language_fixture(grammar: str) -> None:
    fixture, scope_line, definitions, imports = CASES[grammar]
    text = (FIXTURES / fixture).read_text()
    offset = text.encode().index("§".encode())
    data = text.replace("§", "").encode()
    q = queries_for(grammar)
    language = ts_language(grammar)
    assert q is not None and language is not None
    tree = tree_sitter.Parser(language).parse(data)
    scopes = scopes_at(q, tree, offset)
    assert scopes.function is not None, "no enclosing function at the cursor"
    first = data[scopes.function.start_byte:].split(b"\n", 1)[0].decode().strip()
    assert first == scope_line
    symbols = extract(q, tree.root_node, data)
    names = {d.name for d in symbols.definitions}
    assert definitions <= names, f"missing definitions: {definitions - names}"
    found = {i.module for i in symbols.imports}
    assert imports <= found, f"missing imports: {imports - found}"
    assert not scopes.in_comment


def test_wheel_ships_every_grammar_file() -> None:
    """pyproject's data-files must list each file of grammars/ (checked by hand once with
    `pip wheel .` and a clean venv: the queries land in share/lsp-copilot/grammars)."""
    import tomllib

    root = grammars_dir()
    assert root is not None
    pyproject = tomllib.loads((root.parent / "pyproject.toml").read_text())
    data_files = pyproject["tool"]["setuptools"]["data-files"]
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        patterns = data_files.get(f"share/lsp-copilot/grammars/{folder.name}", [])
        shipped = {Path(f).name for pattern in patterns
                   for f in glob.glob(str(root.parent / pattern))}
        assert shipped == {p.name for p in folder.iterdir()}, folder.name


def test_a_folder_reuses_what_it_inherits() -> None:
    """tsx is typescript's folder, typescript has javascript's safety rules, and cpp adds
    patterns to c's: each rule is written once."""
    tsx, typescript = queries_for("tsx"), queries_for("typescript")
    assert tsx is not None and typescript is not None
    assert tsx.symbols.pattern_count == typescript.symbols.pattern_count
    assert language_config("tsx") == language_config("typescript")
    assert language_config("typescript").blocks > language_config("javascript").blocks
    assert query_source("typescript", "safety") == query_source("javascript", "safety")
    c, cpp = query_source("c", "safety"), query_source("cpp", "safety")
    assert c is not None and cpp is not None and cpp.startswith(c) and len(cpp) > len(c)
    assert query_source("bash", "safety") is None


def _folders(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"python/symbols.scm": "", **files}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_inheritance_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _folders(tmp_path, {
        "a/language.json": '{"comment": "#", "blocks": ["block"]}',
        "a/safety.scm": "(a) @x",
        "b/language.json": '{"inherits": "a", "comment": "//"}',
        "b/safety.scm": "; inherits: a\n(b) @x",
        "c/language.json": '{"inherits": "b"}',
        "loop/language.json": '{"inherits": "loop"}',
        "lost/language.json": '{"inherits": "nowhere"}',
        "selfish/safety.scm": "; inherits: selfish\\n(x) @x",
    })
    monkeypatch.setattr(folders, "grammars_dir", lambda: root)
    assert folders.load_config("b") == LanguageConfig(comment="//", blocks=frozenset({"block"}))
    assert folders.load_config("c") == folders.load_config("b")
    assert folders.query_source("c", "safety") == "(a) @x\n; inherits: a\n(b) @x"
    assert folders.has_query("c", "safety") and not folders.has_query("c", "scope")
    assert folders.load_config("none") == LanguageConfig()
    for broken in ("loop", "lost"):
        with pytest.raises(ValueError):
            folders.load_config(broken)
    with pytest.raises(ValueError):
        folders.query_source("selfish", "safety")
    assert folders.supported() == ["a", "b", "c", "loop", "lost", "python"]
