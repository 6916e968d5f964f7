"""What a syntax tree defines, references and imports, and summaries of long definitions.

Everything comes from the captures of ``grammars/<language>/symbols.scm`` and
``scope.scm``; this module knows capture names, not node types. Summaries are made of
whole lines only: a class becomes its header, fields and method signatures; a function
its signature and the first line of its docstring (or doc comment).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import tree_sitter

from lsp_copilot.language.grammars import LanguageQueries


class Starts(Protocol):
    """Line start offsets by row (a list, or the rows of one span)."""

    def __getitem__(self, row: int) -> int: ...
    def __len__(self) -> int: ...


CONTAINER_KINDS = frozenset({"class", "interface", "module", "impl", "enum"})
MAX_SIGNATURE_LINES = 6
MAX_SUMMARY_LINES = 40
FULL_TEXT_LINES = 12
"""Definitions up to this many lines are shown whole; longer ones as summaries."""


@dataclass(frozen=True, slots=True)
class Definition:
    name: str
    kind: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    signature: str
    summary: str
    full: str
    container: str | None = None

    @property
    def text(self) -> str:
        """What a prompt shows: the whole definition when short, else its summary."""
        return self.full if self.full else self.summary


@dataclass(frozen=True, slots=True)
class Import:
    module: str
    names: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class FileSymbols:
    definitions: tuple[Definition, ...]
    imports: tuple[Import, ...]
    package: str | None = None
    calls: frozenset[str] = frozenset()  # the names this file calls (its callers' index)


def _lines(data: bytes, first: int, last: int, starts: Starts) -> str:
    end = starts[last + 1] if last + 1 < len(starts) else len(data)
    text = data[starts[first]:end].decode("utf-8", "replace")
    return text if text.endswith("\n") else text + "\n"


class _SpanStarts:
    """Line starts of the rows a span covers (plus the next line), indexed by file row.

    Extracting one top-level node of a big file must not scan the whole file for lines.
    """

    def __init__(self, data: bytes, lo_byte: int, hi_byte: int, lo_row: int) -> None:
        start = data.rfind(b"\n", 0, lo_byte) + 1
        starts = [start]
        pos = data.find(b"\n", start, hi_byte)
        while pos >= 0:
            starts.append(pos + 1)
            pos = data.find(b"\n", pos + 1, hi_byte)
        nxt = data.find(b"\n", max(starts[-1], hi_byte))
        if nxt >= 0 and nxt + 1 > starts[-1]:
            starts.append(nxt + 1)
        self._starts = starts
        self._base = lo_row

    def __getitem__(self, row: int) -> int:
        return self._starts[row - self._base]

    def __len__(self) -> int:
        return self._base + len(self._starts)


class _ListStarts:
    def __init__(self, starts: list[int]) -> None:
        self._starts = starts

    def __getitem__(self, row: int) -> int:
        return self._starts[row]

    def __len__(self) -> int:
        return len(self._starts)


def line_starts(data: bytes) -> list[int]:
    starts = [0]
    pos = data.find(b"\n")
    while pos >= 0:
        starts.append(pos + 1)
        pos = data.find(b"\n", pos + 1)
    return starts


def _body(node: tree_sitter.Node) -> tree_sitter.Node | None:
    body = node.child_by_field_name("body")
    if body is not None:
        return body
    for child in reversed(node.named_children):
        kind = child.type
        if ("body" in kind or "block" in kind or kind in (
                "declaration_list", "compound_statement", "field_declaration_list",
                "enumerator_list", "class_body")):
            return child
    return None


def body_of(node: tree_sitter.Node) -> tree_sitter.Node | None:
    """The node's body (its ``body`` field, else a child named like one)."""
    return _body(node)


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _doc_line(node: tree_sitter.Node, body: tree_sitter.Node | None, data: bytes) -> str | None:
    """First line of a docstring (first statement string) or of the comment just above."""
    if body is not None and body.named_child_count:
        first = body.named_children[0]
        if first.type == "expression_statement" and first.named_child_count:
            first = first.named_children[0]
        if first.type == "string":
            text = data[first.start_byte:first.end_byte].decode("utf-8", "replace")
            line = text.split("\n", 1)[0].strip()
            quote = line[:3] if line[:3] in ('"""', "'''") else line[:1]
            if line and not (len(line) > len(quote) and line.endswith(quote)):
                line += quote
            return line
    prev = node.prev_named_sibling
    if (prev is not None and "comment" in prev.type
            and prev.end_point.row >= node.start_point.row - 1):
        text = data[prev.start_byte:prev.end_byte].decode("utf-8", "replace")
        line = text.split("\n", 1)[0].strip()
        if line and line not in ("/**", "/*", "///", "//", "#", "--"):
            return line
        more = text.split("\n")[1:2]
        return more[0].strip() if more and more[0].strip() else None
    return None


def _signature_rows(node: tree_sitter.Node, body: tree_sitter.Node | None,
                    data: bytes, starts: Starts) -> tuple[int, int]:
    first = node.start_point.row
    if body is None:
        return first, first
    brow = body.start_point.row
    own_line = not data[starts[brow]:body.start_byte].strip()
    last = brow - 1 if own_line and brow > first else brow
    return first, min(max(first, last), first + MAX_SIGNATURE_LINES - 1)


class _Raw:
    __slots__ = ("body", "children", "kind", "name", "node", "sig_rows")

    def __init__(self, node: tree_sitter.Node, kind: str, name: str) -> None:
        self.node = node
        self.kind = kind
        self.name = name
        self.children: list[_Raw] = []
        self.body: tree_sitter.Node | None = None
        self.sig_rows = (0, 0)


def extract(q: LanguageQueries, root: tree_sitter.Node, data: bytes,
            starts: Starts | None = None, span: tree_sitter.Node | None = None) -> FileSymbols:
    """Definitions (with signatures and summaries) and imports under ``root``.

    With ``span`` (a child of ``root``), only what lies inside it; the query still runs
    from ``root`` so that patterns anchored on a parent (``(module ...)``) match.
    """
    lo, hi = (span.start_byte, span.end_byte) if span is not None else (0, len(data) + 1)
    if starts is None:
        starts = (_SpanStarts(data, lo, hi, span.start_point.row) if span is not None
                  else _ListStarts(line_starts(data)))
    cursor = tree_sitter.QueryCursor(q.symbols)
    if span is not None:
        cursor.set_byte_range(lo, hi)
    raws: dict[tuple[int, int], _Raw] = {}
    imports: list[Import] = []
    package: str | None = None
    calls: set[str] = set()
    for _, caps in cursor.matches(root):
        if span is not None and not any(
                lo <= ns[0].start_byte and ns[0].end_byte <= hi for ns in caps.values()):
            continue
        for cap, nodes in caps.items():
            if cap.startswith("definition."):
                kind = cap.split(".", 1)[1]
                names = caps.get(f"name.definition.{kind}")
                if not names:
                    continue
                node = nodes[0]
                key = (node.start_byte, node.end_byte)
                if key not in raws:
                    name = data[names[0].start_byte:names[0].end_byte].decode("utf-8", "replace")
                    raws[key] = _Raw(node, kind, name.lstrip(":$"))
            elif cap == "import":
                modules = caps.get("import.module", [])
                if modules:
                    mod = data[modules[0].start_byte:modules[0].end_byte].decode("utf-8", "replace")
                    listed = tuple(
                        data[n.start_byte:n.end_byte].decode("utf-8", "replace")
                        for n in caps.get("import.name", []))
                    imports.append(Import(mod.strip("\"'<>"), listed, nodes[0].start_point.row))
            elif cap == "name.reference.call":
                calls.update(data[n.start_byte:n.end_byte].decode("utf-8", "replace")
                             for n in nodes)
            elif cap == "package":
                package = data[nodes[0].start_byte:nodes[0].end_byte].decode("utf-8", "replace")
            elif cap == "import.name" and "import" not in caps and imports:
                # A name listed in its own pattern belongs to the import on the same line range.
                for n in nodes:
                    last = imports[-1]
                    name = data[n.start_byte:n.end_byte].decode("utf-8", "replace")
                    if name not in last.names:
                        imports[-1] = Import(last.module, (*last.names, name), last.line)
    ordered = sorted(raws.values(), key=lambda r: (r.node.start_byte, -r.node.end_byte))
    # Nesting: the innermost container definition holds a definition.
    stack: list[_Raw] = []
    parents: dict[int, _Raw | None] = {}
    for raw in ordered:
        while stack and stack[-1].node.end_byte <= raw.node.start_byte:
            stack.pop()
        parent = stack[-1] if stack else None
        parents[id(raw)] = parent
        if parent is not None:
            parent.children.append(raw)
        raw.body = _body(raw.node)
        raw.sig_rows = _signature_rows(raw.node, raw.body, data, starts)
        if raw.kind in CONTAINER_KINDS or raw.kind in ("function", "method"):
            stack.append(raw)
    defs = []
    for raw in ordered:
        first, last_row = raw.sig_rows
        signature = _lines(data, first, last_row, starts)
        end_row = raw.node.end_point.row
        if raw.node.end_point.column == 0 and end_row > first:
            end_row -= 1
        full = _lines(data, first, end_row, starts) if end_row - first < FULL_TEXT_LINES else ""
        summary = _summary(q, raw, data, starts, signature, end_row)
        parent = parents[id(raw)]
        defs.append(Definition(
            name=raw.name, kind=raw.kind, start_line=first, end_line=end_row,
            start_byte=raw.node.start_byte, end_byte=raw.node.end_byte,
            signature=signature, summary=summary, full=full,
            container=parent.name if parent is not None else None,
        ))
    return FileSymbols(tuple(defs), tuple(imports), package, frozenset(calls))


def _summary(q: LanguageQueries, raw: _Raw, data: bytes, starts: Starts,
             signature: str, end_row: int) -> str:
    first_line = signature.split("\n", 1)[0]
    indent = _indent(first_line)
    inner = indent + "    "
    if raw.body is not None:
        brow = raw.body.start_point.row
        if brow > raw.sig_rows[1] or (brow == raw.sig_rows[1] and raw.body.named_child_count):
            child = raw.body.named_children[0] if raw.body.named_child_count else None
            if child is not None and child.start_point.row > raw.sig_rows[1]:
                row_text = _lines(data, child.start_point.row, child.start_point.row, starts)
                inner = _indent(row_text) or inner
    out = [signature]
    if end_row == raw.sig_rows[1]:
        return signature  # the whole definition is its signature
    if raw.kind in CONTAINER_KINDS and raw.children:
        doc = _doc_line(raw.node, raw.body, data)
        if doc:
            out.append(f"{inner}{doc}\n")
        for member in raw.children:
            first, last = member.sig_rows
            out.append(_lines(data, first, last, starts) if member.kind != "field"
                       else _lines(data, first, first, starts))
            if len(out) >= MAX_SUMMARY_LINES:
                out.append(f"{inner}{q.placeholder}\n")
                break
    else:
        doc = _doc_line(raw.node, raw.body, data)
        if doc:
            out.append(f"{inner}{doc}\n")
        out.append(f"{inner}{q.placeholder}\n")
    if q.close:
        closing = _lines(data, end_row, end_row, starts)
        if closing.strip() == q.close or closing.strip().startswith(q.close):
            out.append(closing)
    return "".join(out)




def references_near(q: LanguageQueries, tree: tree_sitter.Tree, data: bytes,
                    start: int, end: int) -> list[tuple[str, bool]]:
    """Names referenced between byte ``start`` and ``end``, nearest to ``end`` first, each
    with whether a reference query captured it.

    Query captures (calls, types, module qualifiers) come first; other identifiers in the
    range follow, since a variable used near the cursor may be a global defined elsewhere.
    """
    cursor = tree_sitter.QueryCursor(q.references)
    cursor.set_byte_range(start, end)
    found: dict[str, int] = {}
    for cap, nodes in cursor.captures(tree.root_node).items():
        if not cap.startswith("name.reference"):
            continue
        for node in nodes:
            if start <= node.start_byte and node.end_byte <= end:
                name = data[node.start_byte:node.end_byte].decode("utf-8", "replace")
                found[name] = max(found.get(name, -1), node.end_byte + len(data))
    # Other identifiers: the last occurrence of each. A tree cursor walks only the nodes
    # that reach into the range (a node list per level would wrap every child in Python).
    top = tree.root_node.descendant_for_byte_range(start, end)
    plain: dict[str, int] = {}
    if top is not None:
        walker = top.walk()
        depth = 0
        while True:
            n = walker.node
            assert n is not None
            if n.end_byte >= start and n.start_byte <= end:
                if n.child_count == 0:
                    if n.is_named and n.end_byte <= end and (
                            "identifier" in n.type or n.type in ("constant", "name", "word")):
                        name = data[n.start_byte:n.end_byte].decode("utf-8", "replace")
                        if plain.get(name, -1) < n.end_byte:
                            plain[name] = n.end_byte
                elif walker.goto_first_child():
                    depth += 1
                    continue
            elif n.start_byte > end and depth > 0:  # the later siblings are past the range
                walker.goto_parent()
                depth -= 1
            while depth > 0 and not walker.goto_next_sibling():
                walker.goto_parent()
                depth -= 1
            if depth == 0:
                break
    for name, pos in plain.items():
        found.setdefault(name, pos)
    ranked = sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(name, pos > len(data)) for name, pos in ranked]
