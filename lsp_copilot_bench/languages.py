"""`bench context`, per language: is the enclosing function's name line in the prompt?

At a cursor 10 lines before the end of a long function (120 lines or more, else the
longest ones found), in real code of each language (none of it written here), the line
that names the function must be in the prompt: without it the model writes a body
without knowing what the function is for. The functions are found by this module's own
small table of node types (not by the query files the engine uses), so that the check
judges the engine from outside.

Corpora are folders (or a ``.zip``/``.tgz`` archive, read without unpacking) given on the
command line; the defaults are where Debian's packages put them. A language whose corpus
is absent is skipped, with the reason in the report.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tree_sitter

from lsp_copilot.context.builder import build_context
from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.language.ids import ts_language
from lsp_copilot.prompts.templates import template_for
from lsp_copilot.tokens import TokenCounter
from lsp_copilot_bench.corpus import SOURCES, Reader, archive_files, default_corpus, folder_files

BUDGET = 1024
LONG_LINES = 120
"""A function this long or longer; when a corpus has too few, the longest ones."""
BEFORE_END = 10
MAX_FILE_BYTES = 400_000
MAX_PER_FILE = 2


@dataclass(frozen=True)
class Corpus:
    language: str  # LSP language id
    extensions: tuple[str, ...]  # empty: every file (the C++ library's headers have none)
    defaults: tuple[str, ...]
    hint: str  # how to get it


CORPORA: dict[str, Corpus] = {
    "go": Corpus("go", (".go",), SOURCES["go"], "apt-get install golang-src"),
    "rust": Corpus("rust", (".rs",), SOURCES["rust"], "apt-get install rust-src"),
    "cpp": Corpus("cpp", (), SOURCES["cpp"], "apt-get install libstdc++-12-dev"),
    "java": Corpus("java", (".java",), SOURCES["java"], "apt-get install openjdk-17-source"),
    "typescript": Corpus("typescript", (".ts",), ("/tmp/lsp-copilot-npm",),
                         "npm pack <a package shipping .ts sources, e.g. zod> into "
                         "/tmp/lsp-copilot-npm (the .tgz is read as it is)"),
    "python": Corpus("python", (".py",), (str(default_corpus()),),
                     "the running interpreter's standard library"),
}

# Node types that define a named function, per grammar. The name is the node's `name`
# field, else the innermost `declarator` (C, C++), else the enclosing variable's name
# (`const f = () => {...}`).
FUNCTION_NODES: dict[str, frozenset[str]] = {
    "go": frozenset({"function_declaration", "method_declaration"}),
    "rust": frozenset({"function_item"}),
    "cpp": frozenset({"function_definition"}),
    "java": frozenset({"method_declaration", "constructor_declaration"}),
    "typescript": frozenset({"function_declaration", "method_definition",
                             "generator_function_declaration", "arrow_function",
                             "function_expression"}),
    "python": frozenset({"function_definition"}),
}


@dataclass(frozen=True)
class Position:
    source: str  # file (inside the archive, if one)
    text: str
    function: str
    name_line: str  # stripped
    lines: int
    cursor_row: int
    cursor_col: int


def _files(root: Path, extensions: tuple[str, ...]) -> list[tuple[str, Reader]]:
    """(name, reader) of the corpus's files, in a stable order; read only when needed.
    A folder's archives (npm ``.tgz`` files side by side) are read as part of it."""
    out: list[tuple[str, Reader]] = []
    if root.is_file() and root.suffix in (".zip", ".tgz", ".gz"):
        out = archive_files(root, extensions, MAX_FILE_BYTES)
    elif root.is_dir():
        for path in root.iterdir():
            if path.suffix in (".tgz", ".zip"):
                out += [(f"{path.name}/{n}", r) for n, r in _files(path, extensions)]
        out += [(str(path.relative_to(root)), read)
                for path, read in folder_files(root, extensions, MAX_FILE_BYTES)
                if "site-packages" not in path.parts]
    return sorted((f for f in out if not f[0].endswith(".d.ts")), key=lambda f: f[0])


def _name_node(node: tree_sitter.Node) -> tree_sitter.Node | None:
    name = node.child_by_field_name("name")
    if name is not None:
        return name
    declarator = node.child_by_field_name("declarator")
    while declarator is not None:
        inner = declarator.child_by_field_name("declarator")
        if inner is None:
            break
        declarator = inner
    if declarator is not None:
        # `basic_filebuf<_CharT, _Traits>::underflow`: the last part names the function.
        last = declarator.child_by_field_name("name")
        return last if last is not None else declarator
    parent = node.parent
    if parent is not None and parent.type in ("variable_declarator", "pair",
                                              "public_field_definition", "assignment_expression"):
        return (parent.child_by_field_name("name") or parent.child_by_field_name("key")
                or parent.child_by_field_name("left"))
    return None


def _functions(tree: tree_sitter.Tree, types: frozenset[str]
               ) -> Iterator[tuple[tree_sitter.Node, tree_sitter.Node]]:
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in types:
            name = _name_node(node)
            if name is not None:
                yield node, name
        stack.extend(reversed(node.children))


def _word(name: str) -> str:
    return re.split(r"::|\.", name.strip())[-1].strip()


def positions(key: str, root: Path, count: int, seed: int = 0) -> list[Position]:
    """Up to ``count`` cursors, one per long function (at most ``MAX_PER_FILE`` per
    file), 10 lines before its end, at the first character of a non-blank line."""
    corpus = CORPORA[key]
    language = ts_language("typescript" if key == "typescript" else key)
    assert language is not None
    parser = tree_sitter.Parser(language)
    found: list[tuple[int, float, Position]] = []
    rng = random.Random(seed)
    files = _files(root, corpus.extensions)
    long_found = 0
    rng.shuffle(files)
    for name, read in files:
        if long_found >= count * 2:
            break  # enough to choose from
        data = read()
        if b"\0" in data:
            continue
        tree = parser.parse(data)
        text = data.decode("utf-8", "surrogateescape")
        rows = text.split("\n")
        per_file = 0
        for node, name_node in _functions(tree, FUNCTION_NODES[key]):
            first, last = node.start_point.row, node.end_point.row
            span = last - first + 1
            if span < 30 or per_file >= MAX_PER_FILE:
                continue
            row = last - BEFORE_END
            while row > name_node.start_point.row and not rows[row].strip():
                row -= 1
            if row <= name_node.start_point.row:
                continue
            col = len(rows[row]) - len(rows[row].lstrip())
            word = _word(name_node.text.decode("utf-8", "replace") if name_node.text else "")
            name_line = rows[name_node.start_point.row].strip()
            if not word or not name_line:
                continue
            per_file += 1
            long_found += span >= LONG_LINES
            found.append((span, rng.random(), Position(name, text, word, name_line, span,
                                                      row, col)))
    long = [f for f in found if f[0] >= LONG_LINES]
    rng.shuffle(long)
    chosen = long[:count]
    if len(chosen) < count:  # the longest of the rest
        rest = sorted((f for f in found if f[0] < LONG_LINES), key=lambda f: (-f[0], f[1]))
        chosen += rest[:count - len(chosen)]
    return [c[2] for c in chosen]


def check(key: str, root: Path, counter: TokenCounter, count: int,
          budget: int = BUDGET) -> dict[str, Any]:
    """Share of positions whose prompt holds the enclosing function's name line."""
    corpus = CORPORA[key]
    template = template_for(None)
    store = DocumentStore()
    hits = 0
    misses: list[str] = []
    chosen = positions(key, root, count)
    for i, pos in enumerate(chosen):
        uri = f"file:///bench-languages/{key}/{i}/{pos.source.rsplit('/', 1)[-1]}"
        store.open(uri, corpus.language, 1, pos.text)
        offset = store.get_offset(uri, pos.cursor_row, pos.cursor_col, "utf-32")
        ctx = build_context(store.snapshot(uri), offset, counter, template, budget,
                            "single-line")
        store.close(uri)
        if pos.name_line in ctx.prompt:
            hits += 1
        else:
            misses.append(f"{pos.source}:{pos.cursor_row + 1} in {pos.function} "
                          f"({pos.lines} lines)")
    return {
        "corpus": str(root),
        "positions": len(chosen),
        "long_functions": sum(p.lines >= LONG_LINES for p in chosen),
        "name_line_in_prompt": hits,
        "share": round(hits / len(chosen), 3) if chosen else None,
        "misses": misses[:10],
    }


def run(counter: TokenCounter, count: int, folders: dict[str, Path] | None = None
        ) -> dict[str, Any]:
    """The check for every language whose corpus exists; the others say why not."""
    out: dict[str, Any] = {}
    for key in CORPORA:
        root = corpus_root(key, folders)
        out[key] = check(key, root, counter, count) if isinstance(root, Path) else {
            "skipped": root}
    return out


def corpus_root(key: str, folders: dict[str, Path] | None = None) -> Path | str:
    """The corpus of language ``key`` (given, else the first default that exists), or why
    there is none."""
    corpus = CORPORA[key]
    given = (folders or {}).get(key)
    if given is not None:
        return given if given.exists() else f"no corpus at {given}"
    found = next((Path(p) for p in corpus.defaults if Path(p).exists()), None)
    return found or f"no corpus (looked in {', '.join(corpus.defaults)}; {corpus.hint})"


def parse_folders(values: list[str] | None) -> dict[str, Path]:
    """``LANG=PATH`` arguments (``--language-corpus go=/usr/share/go/src``)."""
    out: dict[str, Path] = {}
    for value in values or []:
        key, sep, path = value.partition("=")
        if not sep or key not in CORPORA:
            raise ValueError(f"expected LANG=PATH with LANG one of {', '.join(CORPORA)}: "
                             f"{value!r}")
        out[key] = Path(path)
    return out


__all__ = ["CORPORA", "check", "corpus_root", "parse_folders", "positions", "run"]

