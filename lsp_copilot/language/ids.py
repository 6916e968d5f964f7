"""Which tree-sitter grammar parses a document, from its LSP languageId or file name.

Grammars come from ``tree-sitter-language-pack`` 0.13 (bundled, offline); grammar
names are the pack's names (``csharp``, not ``c_sharp``). ``cobol`` is never
loaded: its 0.13 grammar hangs on some input.
"""

from __future__ import annotations

import logging
import os
import typing
from functools import cache

import tree_sitter
import tree_sitter_language_pack as pack

log = logging.getLogger(__name__)

# Grammars we refuse to load, with the reason.
_BLOCKED = {"cobol": "the grammar in tree-sitter-language-pack 0.13 hangs on some input"}

# LSP languageId -> grammar, where the two differ or the id is an alias.
# Ids the LSP specification lists, plus those common editors send.
_ID_TO_GRAMMAR: dict[str, str] = {
    "javascriptreact": "javascript",
    "typescriptreact": "tsx",
    "shellscript": "bash",
    "sh": "bash",
    "zsh": "bash",
    "c#": "csharp",
    "cs": "csharp",
    "c_sharp": "csharp",
    "objective-c": "objc",
    "objective-cpp": "cpp",
    "cuda-cpp": "cuda",
    "jsonc": "json",
    "json5": "json",
    "git-commit": "gitcommit",
    "git-rebase": "gitcommit",
    "dockerfile": "dockerfile",
    "makefile": "make",
    "tex": "latex",
    "plaintex": "latex",
    "terraform": "hcl",
    "terraform-vars": "hcl",
    "fsharp": "fsharp",
    "ocaml.interface": "ocaml_interface",
    "emacs-lisp": "elisp",
    "common-lisp": "commonlisp",
    "viml": "vim",
    "vimscript": "vim",
    "protobuf": "proto",
    "proto3": "proto",
    "restructuredtext": "rst",
    "pip-requirements": "requirements",
    "html.erb": "embeddedtemplate",
    "erb": "embeddedtemplate",
    "javascript.jsx": "javascript",
    "typescript.tsx": "tsx",
    "xsl": "xml",
    "svg": "xml",
    "jsonnet": "jsonnet",
    "ini": "ini",
    "properties": "properties",
    "scss": "scss",
    "glsl": "glsl",
    "hlsl": "hlsl",
    "wgsl": "wgsl",
}

# File extension (lower case, with the dot) or whole file name -> LSP languageId.
_EXT_TO_ID: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "javascriptreact",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "typescriptreact",
    ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp",
    ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp", ".h++": "cpp", ".ipp": "cpp", ".tcc": "cpp",
    ".cu": "cuda-cpp", ".cuh": "cuda-cpp",
    ".m": "objective-c", ".mm": "objective-cpp",
    ".cs": "csharp", ".rb": "ruby", ".php": "php",
    ".sh": "shellscript", ".bash": "shellscript", ".zsh": "shellscript",
    ".lua": "lua", ".kt": "kotlin", ".kts": "kotlin",
    ".json": "json", ".jsonc": "jsonc",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".css": "css", ".scss": "scss",
    ".md": "markdown", ".markdown": "markdown",
    ".swift": "swift", ".scala": "scala", ".sc": "scala",
    ".dart": "dart", ".ex": "elixir", ".exs": "elixir",
    ".erl": "erlang", ".hrl": "erlang",
    ".hs": "haskell", ".ml": "ocaml", ".mli": "ocaml.interface",
    ".fs": "fsharp", ".fsx": "fsharp", ".fsi": "fsharp",
    ".jl": "julia", ".r": "r", ".pl": "perl", ".pm": "perl",
    ".zig": "zig", ".nim": "nim", ".nix": "nix", ".elm": "elm",
    ".clj": "clojure", ".cljs": "clojure", ".cljc": "clojure", ".edn": "clojure",
    ".el": "emacs-lisp", ".lisp": "common-lisp", ".scm": "scheme", ".rkt": "racket",
    ".sql": "sql", ".graphql": "graphql", ".gql": "graphql",
    ".proto": "proto", ".tf": "terraform", ".tfvars": "terraform-vars", ".hcl": "hcl",
    ".vue": "vue", ".svelte": "svelte", ".astro": "astro",
    ".xml": "xml", ".xsl": "xsl", ".svg": "svg",
    ".tex": "latex", ".bib": "bibtex", ".rst": "restructuredtext",
    ".ini": "ini", ".cfg": "ini", ".properties": "properties",
    ".ps1": "powershell", ".psm1": "powershell",
    ".groovy": "groovy", ".gradle": "groovy",
    ".sol": "solidity", ".v": "v", ".sv": "verilog", ".vhd": "vhdl", ".vhdl": "vhdl",
    ".d": "d", ".f90": "fortran", ".f95": "fortran", ".f03": "fortran",
    ".pas": "pascal", ".hx": "haxe", ".gd": "gdscript", ".odin": "odin",
    ".glsl": "glsl", ".vert": "glsl", ".frag": "glsl", ".hlsl": "hlsl", ".wgsl": "wgsl",
    ".cmake": "cmake", ".mk": "makefile", ".vim": "vim", ".fish": "fish",
    ".erb": "erb", ".twig": "twig", ".typ": "typst", ".kdl": "kdl", ".ron": "ron",
    ".csv": "csv", ".tsv": "tsv", ".jsonnet": "jsonnet", ".libsonnet": "jsonnet",
    ".star": "starlark", ".bzl": "starlark", ".prisma": "prisma", ".thrift": "thrift",
    ".gleam": "gleam", ".purs": "purescript", ".tcl": "tcl", ".janet": "janet",
    ".fnl": "fennel", ".capnp": "capnp", ".smithy": "smithy", ".wat": "wat", ".wast": "wast",
    ".ll": "llvm", ".asm": "asm", ".s": "asm", ".cairo": "cairo", ".luau": "luau",
    ".hack": "hack", ".rego": "rego", ".bicep": "bicep", ".qml": "qmljs",
}  # fmt: skip

# Whole file names (compared case-sensitively first, then in lower case).
_NAME_TO_ID: dict[str, str] = {
    "Dockerfile": "dockerfile", "Containerfile": "dockerfile",
    "Makefile": "makefile", "GNUmakefile": "makefile", "makefile": "makefile",
    "CMakeLists.txt": "cmake", "meson.build": "meson",
    "go.mod": "gomod", "go.sum": "gosum",
    "BUILD": "starlark", "BUILD.bazel": "starlark", "WORKSPACE": "starlark",
    ".gitignore": "gitignore", ".gitattributes": "gitattributes",
    "COMMIT_EDITMSG": "git-commit", "requirements.txt": "pip-requirements",
    ".bashrc": "shellscript", ".zshrc": "shellscript", ".profile": "shellscript",
    "Gemfile": "ruby", "Rakefile": "ruby", "Kconfig": "kconfig",
}  # fmt: skip


@cache
def _pack_grammars() -> frozenset[str]:
    """Grammar names the installed language pack declares, minus blocked ones."""
    names = typing.get_args(getattr(pack, "SupportedLanguage", None))
    return frozenset(str(n) for n in names if n not in _BLOCKED)


def _grammar_for_id(language_id: str) -> str | None:
    key = language_id.strip().lower()
    grammar = _ID_TO_GRAMMAR.get(key, key)
    return grammar if grammar in _pack_grammars() else None


def extensions() -> list[str]:
    """File extensions with a known languageId (lower case, with the dot)."""
    return sorted(_EXT_TO_ID)


def language_id_for_path(path: str) -> str:
    """The LSP languageId an editor would send for ``path`` ("plaintext" if unknown)."""
    name = os.path.basename(path)
    if name in _NAME_TO_ID:
        return _NAME_TO_ID[name]
    lowered = name.lower()
    for key, value in _NAME_TO_ID.items():
        if key.lower() == lowered:
            return value
    if lowered.startswith("dockerfile.") or lowered.endswith(".dockerfile"):
        return "dockerfile"
    ext = os.path.splitext(lowered)[1]
    return _EXT_TO_ID.get(ext, "plaintext")


def language_for(language_id: str | None, path: str | None) -> str | None:
    """Grammar name for a document: from its languageId, else from its path.

    The path is a fallback because clients send "plaintext" or odd ids for files
    they do not recognise, while the extension may still be telling.
    """
    if language_id:
        grammar = _grammar_for_id(language_id)
        if grammar is not None:
            return grammar
    if path:
        from_path = language_id_for_path(path)
        if from_path != "plaintext":
            return _grammar_for_id(from_path)
    return None


@cache
def ts_language(grammar: str) -> tree_sitter.Language | None:
    """The tree-sitter Language of a grammar (for queries), or None if unavailable."""
    if grammar not in _pack_grammars():
        return None
    try:
        return pack.get_language(grammar)  # type: ignore[arg-type]
    except Exception as exc:  # a broken or missing binding must not stop the server
        log.warning("cannot load tree-sitter grammar %r: %s", grammar, exc)
        return None


def parser_for(grammar: str) -> tree_sitter.Parser | None:
    """A new parser for ``grammar``, or None if the grammar cannot be loaded.

    Not shared: a parser holds state and is not thread-safe, and making one takes about
    a microsecond (the Language it needs is loaded once).
    """
    language = ts_language(grammar)
    if language is None:
        return None
    try:
        return tree_sitter.Parser(language)
    except Exception as exc:
        log.warning("cannot create a parser for %r: %s", grammar, exc)
        return None


def available_grammars() -> list[str]:
    """Grammars that actually load here, sorted (for ``lsp-copilot doctor``)."""
    return sorted(g for g in _pack_grammars() if ts_language(g) is not None)
