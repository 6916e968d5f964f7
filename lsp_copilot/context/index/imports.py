"""Resolve an import statement to the workspace files it names.

Per-language rules (the ``resolver`` of ``grammars/<language>/language.json``):
Python (dotted and relative modules, packages), JavaScript/TypeScript (relative
specifiers with extension and index probing), Go (import path suffix matched to a
package folder), Rust (``crate::``/``super::``/``self::`` paths and ``mod`` files),
Java (package path to ``.java`` file), C/C++ (``#include "..."``). Anything else falls
back to name matching in the index.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath

Exists = Callable[[str], bool]
"""Whether a workspace-relative POSIX path is an indexed file."""
Dirs = Callable[[str], list[str]]
"""Indexed files directly in a workspace-relative folder."""


def _norm(path: PurePosixPath) -> str:
    parts: list[str] = []
    for part in path.parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return "/".join(parts)


def _python(module: str, importer: str, exists: Exists, dirs: Dirs) -> list[str]:
    here = PurePosixPath(importer).parent
    dots = len(module) - len(module.lstrip("."))
    rest = module[dots:].replace(".", "/")
    if dots:
        base = here
        for _ in range(dots - 1):
            base = base.parent
        roots = [base]
    else:
        # Absolute: from the workspace root, from the importer's ancestors (src layouts,
        # the standard library's own folder), nearest first.
        roots = [here, *here.parents]
    for root in roots:
        stem = _norm(root / rest) if rest else _norm(root)
        for candidate in (f"{stem}.py", f"{stem}/__init__.py", f"{stem}.pyi"):
            if exists(candidate):
                return [candidate]
    return []


_JS_EXT = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs")


def _javascript(module: str, importer: str, exists: Exists, dirs: Dirs) -> list[str]:
    if not module.startswith("."):
        return []  # a package from node_modules: not indexed
    stem = _norm(PurePosixPath(importer).parent / module)
    if exists(stem):
        return [stem]
    for base in (stem, stem.removesuffix(".js"), f"{stem}/index"):
        for ext in _JS_EXT:
            if exists(base + ext):
                return [base + ext]
    return []


def _go(module: str, importer: str, exists: Exists, dirs: Dirs) -> list[str]:
    # A Go import path ends with the package folder; match the longest suffix present.
    parts = module.split("/")
    for i in range(len(parts)):
        folder = "/".join(parts[i:])
        files = [f for f in dirs(folder) if f.endswith(".go") and not f.endswith("_test.go")]
        if files:
            return sorted(files)
    return []


def _rust(module: str, importer: str, exists: Exists, dirs: Dirs) -> list[str]:
    path = module.split("{", 1)[0].rstrip(":").strip()
    parts = [p for p in path.replace("::*", "").split("::") if p]
    here = PurePosixPath(importer).parent
    if not parts:
        return []
    if parts[0] == "crate":
        # The crate root is the nearest ancestor folder holding lib.rs or main.rs.
        base = here
        while True:
            if exists(_norm(base / "lib.rs")) or exists(_norm(base / "main.rs")):
                break
            if base == base.parent:
                base = here
                break
            base = base.parent
        parts = parts[1:]
    elif parts[0] == "super":
        base = here.parent if PurePosixPath(importer).name in ("mod.rs",) else here
        parts = parts[1:]
    elif parts[0] == "self":
        base = here
        parts = parts[1:]
    else:
        base = here
    # Longest module path that names a file: a::b::Item -> a/b.rs or a/b/mod.rs.
    for n in range(len(parts), 0, -1):
        stem = _norm(base / "/".join(parts[:n]))
        for candidate in (f"{stem}.rs", f"{stem}/mod.rs"):
            if exists(candidate):
                return [candidate]
    return []


def _java(module: str, importer: str, exists: Exists, dirs: Dirs) -> list[str]:
    path = module.removeprefix("static ").replace(".", "/")
    for candidate in (path, path.rsplit("/", 1)[0]):
        # Source roots vary (src/main/java, src, java.base/share/classes): try suffixes.
        found = _suffix(f"{candidate}.java", importer, exists)
        if found:
            return [found]
    return []


def _suffix(tail: str, importer: str, exists: Exists) -> str | None:
    here = PurePosixPath(importer)
    for root in here.parents:
        candidate = _norm(root / tail)
        if exists(candidate):
            return candidate
    return None


def _c(module: str, importer: str, exists: Exists, dirs: Dirs) -> list[str]:
    local = _norm(PurePosixPath(importer).parent / module)
    if exists(local):
        return [local]
    found = _suffix(module, importer, exists)
    return [found] if found else []


RESOLVERS: dict[str, Callable[[str, str, Exists, Dirs], list[str]]] = {
    "python": _python,
    "javascript": _javascript,
    "go": _go,
    "rust": _rust,
    "java": _java,
    "c": _c,
}


def resolve(resolver: str, module: str, importer: str, exists: Exists, dirs: Dirs) -> list[str]:
    """Workspace-relative files that ``module`` (as written in ``importer``) refers to."""
    fn = RESOLVERS.get(resolver)
    return fn(module, importer, exists, dirs) if fn is not None else []
