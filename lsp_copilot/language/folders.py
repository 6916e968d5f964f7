"""The data files of ``grammars/<language>/``: where they are, and the one loader of
``language.json`` and of the query files, with what a folder reuses from another.

A folder may reuse another language's files instead of copying them:

- ``"inherits": "<folder>"`` in ``language.json``: the keys it does not set, and the query
  files it does not have, come from that folder (``tsx`` is ``typescript``'s).
- ``; inherits: <folder>`` as a query file's first line: that folder's query of the same
  name comes first, then this file's patterns (``cpp/safety.scm`` adds to ``c``'s).

The folder is found next to the package in a source checkout, or under the installed
data directory (``share/lsp-copilot/grammars``) in a wheel install.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import sysconfig
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

log = logging.getLogger(__name__)

# tree-sitter-language-pack grammar name -> grammars/ folder, where they differ.
_FOLDER = {"csharp": "c_sharp"}

_INHERITS_LINE = re.compile(r";\s*inherits:\s*(\S.*)")


@dataclass(frozen=True)
class LanguageConfig:
    """A language's ``language.json``; a language without a folder gets these defaults."""

    comment: str = ""
    """How a line comment starts (a layer's header in the prompt)."""
    placeholder: str = ""
    """A statement that stands for an elided body (``...``)."""
    close: str = ""
    """What ends a block (``}``, ``end``), empty for indentation."""
    resolver: str = ""
    """Which import resolver of ``context/imports.py`` applies."""
    blocks: frozenset[str] = frozenset()
    """Node types that are a block's body."""
    brackets: tuple[str, ...] = ("()", "[]", "{}")
    quotes: tuple[str, ...] = ('"', "'")
    function_header: str = ""
    """A regular expression for a line that starts a function definition, its group 1
    the function's name (the function being written: its call sites are context)."""
    compound_header: str = ""
    """A regular expression for a line that starts a block header (``if``, ``for``)."""
    header_end: str = ""
    """What ends such a header where the body is indented under it (``:``); empty where
    a brace opens the body."""
    closers: dict[str, str] = field(init=False, compare=False)
    """Closing bracket -> its opening bracket."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "closers", {b[1]: b[0] for b in self.brackets if len(b) == 2})


def grammars_dir() -> Path | None:
    """Where ``grammars/`` is: source checkout first, then the installed data files."""
    candidates = [
        Path(__file__).resolve().parent.parent.parent / "grammars",
        Path(sysconfig.get_path("data")) / "share/lsp-copilot/grammars",
        Path(sys.prefix) / "share/lsp-copilot/grammars",
    ]
    for path in candidates:
        if (path / "python" / "symbols.scm").is_file():
            return path
    return None


def folder_for(grammar: str) -> str:
    return _FOLDER.get(grammar, grammar)


def _json(folder: Path) -> dict[str, object]:
    path = folder / "language.json"
    if not path.is_file():
        return {}
    config = json.loads(path.read_text())
    if not isinstance(config, dict):
        raise ValueError(f"{path}: not a JSON object")
    return config


def _chain(folder: str) -> list[tuple[Path, dict[str, object]]]:
    """The folder and those it inherits from, nearest first, each with its language.json;
    empty when the folder does not exist."""
    root = grammars_dir()
    chain: list[tuple[Path, dict[str, object]]] = []
    name = folder
    while root is not None and name:
        path = root / name
        if not path.is_dir():
            if chain:
                raise ValueError(f"grammars/{folder}: inherits from {name}, which is no folder")
            break
        if any(path == seen for seen, _ in chain):
            raise ValueError(f"grammars/{folder}: language.json inherits in a circle")
        config = _json(path)
        chain.append((path, config))
        name = str(config.get("inherits", ""))
    return chain


def _query_in(folder: str, name: str, within: tuple[str, ...]) -> str | None:
    for path, _ in _chain(folder):
        file = path / f"{name}.scm"
        if file.is_file():
            text = file.read_text()
            first = text.split("\n", 1)[0].strip()
            match = _INHERITS_LINE.fullmatch(first)
            if match is None:
                return text
            parts = []
            for parent in (p.strip() for p in match.group(1).split(",")):
                if parent in within:
                    raise ValueError(f"grammars/{folder}/{name}.scm inherits in a circle")
                inherited = _query_in(parent, name, (*within, parent))
                if inherited is None:
                    raise ValueError(f"grammars/{folder}/{name}.scm inherits from "
                                     f"{parent}, which has no {name}.scm")
                parts.append(inherited)
            return "\n".join([*parts, text])
    return None


def query_source(grammar: str, name: str) -> str | None:
    """The text of query ``name`` (``scope``, ``symbols``, ``safety``) for ``grammar``,
    with what it inherits; None when the language has none."""
    folder = folder_for(grammar)
    return _query_in(folder, name, (folder,))


def load_config(grammar: str | None) -> LanguageConfig:
    """``grammar``'s ``language.json`` with what it inherits (raises on a broken file)."""
    merged: dict[str, object] = {}
    for _, config in reversed(_chain(folder_for(grammar)) if grammar else []):
        merged.update(config)
    defaults = LanguageConfig()

    def strings(key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        value = merged.get(key, default)
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{grammar}: language.json {key!r} is not a list")
        return tuple(str(v) for v in value)

    return LanguageConfig(
        comment=str(merged.get("comment", defaults.comment)),
        placeholder=str(merged.get("placeholder", defaults.placeholder)),
        close=str(merged.get("close", defaults.close)),
        resolver=str(merged.get("resolver", defaults.resolver)),
        blocks=frozenset(strings("blocks", ())),
        brackets=strings("brackets", defaults.brackets),
        quotes=strings("quotes", defaults.quotes),
        function_header=str(merged.get("function_header", defaults.function_header)),
        compound_header=str(merged.get("compound_header", defaults.compound_header)),
        header_end=str(merged.get("header_end", defaults.header_end)),
    )


@cache
def language_config(grammar: str | None) -> LanguageConfig:
    """``load_config``, with the defaults for a language whose file cannot be read."""
    try:
        return load_config(grammar)
    except (OSError, ValueError) as exc:
        log.warning("cannot read language.json of %s: %s", grammar, exc)
        return LanguageConfig()


def supported() -> list[str]:
    """Grammar names with a folder (pack names, e.g. ``csharp``)."""
    root = grammars_dir()
    if root is None:
        return []
    inverse = {v: k for k, v in _FOLDER.items()}
    return sorted(inverse.get(p.name, p.name) for p in root.iterdir()
                  if (p / "language.json").is_file() or (p / "symbols.scm").is_file())


def has_query(grammar: str, name: str) -> bool:
    """Whether ``grammar``'s folder, or one it inherits from, has query ``name`` (its own
    file alone when what it inherits cannot be read: loading it then says why)."""
    try:
        return any((path / f"{name}.scm").is_file() for path, _ in _chain(folder_for(grammar)))
    except (OSError, ValueError):
        root = grammars_dir()
        return root is not None and (root / folder_for(grammar) / f"{name}.scm").is_file()
