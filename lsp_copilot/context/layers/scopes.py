"""P1: the chain of scopes that enclose the cursor, each as its whole header.

A function's name, parameters and return type say what the code being written is for; in
a long function (or a closure inside a test, a function nested in a function) they are far
above the cursor window. P1 shows every enclosing scope, outermost first (namespace or
module, class/impl/trait, outer function, inner function or closure), each as all the
lines of its header: decorators and attributes above it, a template line, a return type on
its own line, a signature over several lines, up to the line that opens the body. What
lies between is elided and marked; the lines nearest the window come last, as many as
fit; the members of an enclosing class follow as signatures when room is left.

Which nodes are scopes comes from ``grammars/<language>/scope.scm`` only:
``@scope.module``, ``@scope.class``, ``@scope.function`` (optionally with the pattern's
``@scope.body``), and ``@scope.attribute`` for attributes and decorators that the grammar
puts before a definition as siblings rather than inside it.
"""

from __future__ import annotations

from dataclasses import dataclass

import tree_sitter

from lsp_copilot.context.index.same_file import SameFile
from lsp_copilot.context.index.symbols import CONTAINER_KINDS, body_of
from lsp_copilot.language.grammars import LanguageQueries
from lsp_copilot.tokens import TokenCounter

SCOPE_KINDS = ("module", "class", "function")
MAX_HEADER_ROWS = 64
"""A longer header (a body that tree-sitter did not find) is cut to its first rows."""
LONG_HEADER_ROWS = 12
LONG_HEADER_KEEP = (6, 6)
"""A header over ``LONG_HEADER_ROWS`` rows (comments left out) shows its first and last
rows, elided between: the name is near the top or near the body."""
MAX_MEMBERS = 40
MEMBERS_SHARE = 0.5
"""Members' signatures take at most this share of P1's allowance; the rest flows on to the
definitions referenced near the cursor (P2), which name what the code there uses."""
MARKER_TOKENS = 4
"""What a gap's marker line (``    // ...``) is reckoned to cost until the text is counted."""
MAX_ATTRIBUTES = 8


@dataclass(frozen=True)
class Scope:
    kind: str  # one of SCOPE_KINDS
    start_byte: int
    end_byte: int
    start_row: int
    header_end_row: int  # the row that opens the body (or the header's last row)
    end_row: int
    header: tuple[int, ...]  # the header's rows to show


def _opener_row(data: bytes, node: tree_sitter.Node, body: tree_sitter.Node | None) -> int:
    """Last row of ``node``'s header: the row of the body's opener (``{``, ``:``, ``=``),
    or the row above a body that starts on its own line with a statement (Python, Ruby)."""
    first = node.start_point.row
    if body is None or body.start_byte <= node.start_byte:
        return first
    brow = body.start_point.row
    line_start = data.rfind(b"\n", 0, body.start_byte) + 1
    own_line = not data[line_start:body.start_byte].strip()
    opener = data[body.start_byte:body.start_byte + 1]
    if own_line and brow > first and (opener.isalnum() or opener in (b"_", b"$", b"@")):
        brow -= 1
    return min(brow, first + MAX_HEADER_ROWS - 1)


def _attribute_start(q: LanguageQueries, node: tree_sitter.Node) -> tree_sitter.Node:
    """``node``, or the first of the attributes/decorators right above it (siblings)."""
    first = node
    for _ in range(MAX_ATTRIBUTES):
        prev = first.prev_named_sibling
        if prev is None or prev.end_point.row < first.start_point.row - 1:
            break
        cursor = tree_sitter.QueryCursor(q.scope)
        cursor.set_byte_range(prev.start_byte, prev.end_byte)
        found = cursor.captures(prev).get("scope.attribute", [])
        if not any(n.start_byte == prev.start_byte and n.end_byte == prev.end_byte
                   for n in found):
            break
        first = prev
    return first


def _header_rows(q: LanguageQueries, tree: tree_sitter.Tree, data: bytes,
                 start: tree_sitter.Node, node: tree_sitter.Node, last: int,
                 ) -> tuple[int, ...]:
    """Rows ``start``'s row .. ``last`` without those that are only comments: a doc
    comment that tree-sitter folded into a definition (after a macro it cannot expand,
    ``_GLIBCXX_BEGIN_NAMESPACE_VERSION``) must not push out the line that names it."""
    first = start.start_point.row
    rows = set(range(first, last + 1))
    if last > first:
        end = start.start_byte
        for _ in range(last - first + 1):
            end = data.find(b"\n", end) + 1 or len(data)
        cursor = tree_sitter.QueryCursor(q.scope)
        cursor.set_byte_range(start.start_byte, end)
        for c in cursor.captures(tree.root_node).get("comment", []):
            c_end = c.end_byte
            while c_end > c.start_byte and data[c_end - 1] in (10, 13):
                c_end -= 1
            c_first, c_last = c.start_point.row, c.start_point.row + data.count(
                b"\n", c.start_byte, c_end)
            if c_first < first or c_last > last:
                continue
            line_start = data.rfind(b"\n", 0, c.start_byte) + 1
            line_end = data.find(b"\n", c_end)
            if (not data[line_start:c.start_byte].strip()
                    and not data[c_end:len(data) if line_end < 0 else line_end].strip()):
                rows.difference_update(range(c_first, c_last + 1))
    if len(rows) > LONG_HEADER_ROWS:
        _fold_lists(node, last, rows)
    picked = sorted(rows)
    if len(picked) > LONG_HEADER_ROWS:
        head, tail = LONG_HEADER_KEEP
        picked = picked[:head] + picked[-tail:]
    return tuple(picked)


def _fold_lists(node: tree_sitter.Node, last: int, rows: set[int]) -> None:
    """Drop the inner rows of the header's longest multi-row parts (parameter and template
    parameter lists), longest first, until the header is short: their first and last
    rows stay, and so does the row that names the definition, wherever it is."""
    parts: list[tree_sitter.Node] = []
    stack = list(node.children)
    while stack:
        child = stack.pop()
        if child.start_point.row > last:
            continue
        if child.end_point.row <= last and child.end_point.row - child.start_point.row >= 2:
            parts.append(child)
        stack.extend(child.children)  # (a declarator holds the parameter list)
    parts.sort(key=lambda n: n.start_point.row - n.end_point.row)
    for part in parts:
        if len(rows) <= LONG_HEADER_ROWS:
            break
        rows.difference_update(range(part.start_point.row + 1, part.end_point.row))


_Found = dict[tuple[int, int], tuple[tree_sitter.Node, str, tree_sitter.Node | None]]


def _scope_nodes(q: LanguageQueries, tree: tree_sitter.Tree, offset: int) -> _Found:
    """Scope nodes whose body holds ``offset``, by body. Patterns that wrap a definition
    in another node (a template, a decorated definition) give two captures for one body:
    they count once, from the earliest start."""
    cursor = tree_sitter.QueryCursor(q.scope)
    cursor.set_byte_range(max(0, offset - 1), offset + 1)
    found: _Found = {}
    for _, caps in cursor.matches(tree.root_node):
        for kind in SCOPE_KINDS:
            for node in caps.get(f"scope.{kind}", []):
                if not node.start_byte < offset <= node.end_byte:
                    continue
                bodies = caps.get("scope.body")
                body = bodies[0] if bodies else body_of(node)
                key = (body.start_byte, body.end_byte) if body is not None else (
                    node.start_byte, node.end_byte)
                if body is not None and offset < body.start_byte:
                    # In the header (a parameter list): not inside yet; unless the line
                    # being typed broke the parse and tree-sitter hung the code above it
                    # on the definition as an ERROR before what it took for the body.
                    broken = next((c for c in node.children if c.type == "ERROR"
                                   and c.start_byte <= offset <= c.end_byte), None)
                    if broken is None:
                        continue
                    body = broken  # the header ends where the error begins
                known = found.get(key)
                if known is None or node.start_byte < known[0].start_byte:
                    found[key] = (node, kind, body)
    return found


def _indent_width(data: bytes, byte: int) -> int:
    start = data.rfind(b"\n", 0, byte) + 1
    line = data[start:byte]
    return len(line) - len(line.lstrip())


def enclosing_scopes(q: LanguageQueries, tree: tree_sitter.Tree, data: bytes,
                     offset: int) -> list[Scope]:
    """The scopes holding byte ``offset``, outermost first.

    On a line that holds only indentation so far, the scopes of the last line above with
    code whose header is indented less than the cursor count too: a block's node ends
    with its last statement, but the user indenting a new line below it is still inside
    it (Python, or any code being written before its closing brace exists).
    """
    found = _scope_nodes(q, tree, offset)
    line_start = data.rfind(b"\n", 0, offset) + 1
    column = offset - line_start
    if column and not data[line_start:offset].strip():
        end = line_start - 1
        while end > 0 and not data[data.rfind(b"\n", 0, end) + 1:end].strip():
            end = data.rfind(b"\n", 0, end)
        if end > 0:
            for key, value in _scope_nodes(q, tree, end).items():
                if key not in found and _indent_width(data, value[0].start_byte) < column:
                    found[key] = value
    scopes = []
    for node, kind, body in found.values():
        start = _attribute_start(q, node)
        end_row = node.end_point.row
        if node.end_point.column == 0 and end_row > node.start_point.row:
            end_row -= 1
        opener = _opener_row(data, node, body)
        scopes.append(Scope(kind, start.start_byte, node.end_byte, start.start_point.row,
                            opener, end_row, _header_rows(q, tree, data, start, node, opener)))
    scopes.sort(key=lambda s: (s.start_byte, -s.end_byte))
    return scopes


@dataclass
class Rendered:
    text: str
    first_row: int
    tokens: int
    truncated: bool
    starts: tuple[int, ...]  # start rows of the scopes shown


class _Lines:
    """Rows ``first`` .. ``first + len(lines) - 1`` of the file (those above the window)."""

    def __init__(self, first: int, lines: list[str]) -> None:
        self.first = first
        self.lines = lines

    def get(self, row: int) -> str | None:
        i = row - self.first
        return self.lines[i] if 0 <= i < len(self.lines) else None

    def pick(self, rows: range | list[int]) -> dict[int, str]:
        return {r: line for r in rows if (line := self.get(r)) is not None}


class _Rows:
    """The rows P1 may show, chosen by priority, rendered in file order with markers."""

    def __init__(self, q: LanguageQueries, counter: TokenCounter, allowance: int,
                 lines: _Lines) -> None:
        self.q = q
        self.lines = lines
        self.counter = counter
        self.allowance = allowance
        self.shown: dict[int, str] = {}
        self.order: list[list[int]] = []  # groups of rows, in the order they were added
        self.used = 0
        self.truncated = False
        self.quiet: set[int] = set()  # rows whose gaps between each other need no marker

    def add(self, rows: dict[int, str], exact: bool = False, quiet: bool = False,
            cap: int | None = None) -> bool:
        """Add a group of rows whole, if it fits. The cost is estimated line by line (a
        little high: counted alone, each indented line pays for its own newline and
        indentation); with ``exact``, a group the estimate turns away is counted in the
        text, so that a header never loses its place to the estimate's error."""
        new = {r: t for r, t in rows.items() if r not in self.shown}
        if not new:
            return True
        cost = sum(self.counter.count(t + "\n") for t in new.values())
        if self.shown and min(new) - 1 not in self.shown and max(new) + 1 not in self.shown:
            cost += 0 if quiet else MARKER_TOKENS  # a gap: the marker that will stand for it
        if self.used + cost > min(self.allowance, cap if cap is not None else self.allowance):
            if not exact:
                self.truncated = True
                return False
            self.shown.update(new)
            used = self.counter.count(self.render())
            if used > self.allowance:
                for row in new:
                    del self.shown[row]
                self.truncated = True
                return False
            cost = used - self.used  # the total is now exact
        else:
            self.shown.update(new)
        if quiet:
            self.quiet.update(new)
        self.order.append(sorted(new))
        self.used += cost
        return True

    def drop_last(self) -> None:
        for row in self.order.pop():
            del self.shown[row]
            self.quiet.discard(row)
        self.truncated = True

    def render(self) -> str:
        """Shown rows in order. A gap of blank rows becomes one blank line; any other gap a
        marker comment, indented like the first row it stands for (or, for rows not at
        hand, like the row after it)."""
        out: list[str] = []
        last: int | None = None
        for row in sorted(self.shown):
            text = self.shown[row]
            if last is not None and row > last + 1 and not (
                    last in self.quiet and row in self.quiet):  # (members: a summary)
                gap = [self.lines.get(r) for r in range(last + 1, row)]
                content = next((g for g in gap if g is None or g.strip()), "")
                if content == "":
                    out.append("\n")
                else:
                    model = text if content is None else content
                    indent = model[: len(model) - len(model.lstrip())]
                    out.append(f"{indent}{self.q.comment} ...\n")
            out.append(text + "\n")
            last = row
        return "".join(out)


def _header(lines: _Lines, scope: Scope, limit: int) -> dict[int, str]:
    """The scope's header rows above row ``limit`` (the window shows the others), blank
    ones left out."""
    return {r: t for r, t in lines.pick([r for r in scope.header if r < limit]).items()
            if t.strip()}


def render_scopes(q: LanguageQueries, counter: TokenCounter, data: bytes,
                  scopes: list[Scope], symbols: SameFile | None, offset: int,
                  first_line: int, first_byte: int, allowance: int) -> Rendered | None:
    """P1's text within ``allowance`` tokens: headers (innermost first), then the lines
    nearest the window, then the members of the enclosing classes; None when no scope
    starts above the window."""
    chain = [s for s in scopes if s.start_row < first_line]
    if not chain or allowance <= 0:
        return None
    top = chain[0]
    seg_start = data.rfind(b"\n", 0, top.start_byte) + 1
    text = data[seg_start:first_byte].decode("utf-8", "replace").split("\n")
    lines = _Lines(top.start_row, text[:first_line - top.start_row])
    picked = _Rows(q, counter, allowance, lines)
    shown_scopes: list[Scope] = []
    for scope in reversed(chain):  # the innermost first: its name matters most
        if picked.add(_header(lines, scope, first_line), exact=True):
            shown_scopes.append(scope)
    if not shown_scopes:
        return None
    # The innermost function's lines nearest the window, one by one while they fit. (Not
    # a class's or a module's: above the window they are other definitions' bodies, and
    # the members' signatures below say more for fewer tokens.)
    inner = chain[-1]
    row = first_line - 1
    while (inner.kind == "function" and row > inner.header_end_row
           and lines.get(row) is not None):
        if not picked.add({row: lines.lines[row - lines.first]}):
            break
        row -= 1
    # The enclosing classes' members as their signatures, nearest the cursor first: the
    # methods the code at the cursor calls on ``self``/``this``.
    if symbols is not None:
        cursor_row = data.count(b"\n", first_byte, offset) + first_line
        cap = picked.used + int(allowance * MEMBERS_SHARE)
        for scope in reversed(chain):
            if scope.kind == "class":
                for member in _members(symbols, scope, offset, first_line, cursor_row):
                    if not picked.add(member, quiet=True, cap=cap):
                        break
    out = picked.render()
    tokens = counter.count(out)
    while tokens > allowance and picked.order:
        picked.drop_last()
        out = picked.render()
        tokens = counter.count(out)
    if not picked.shown:
        return None
    return Rendered(out, min(picked.shown), tokens, picked.truncated,
                    tuple(s.start_row for s in shown_scopes))


def _members(symbols: SameFile, scope: Scope, offset: int, first_line: int,
             cursor_row: int) -> list[dict[int, str]]:
    """Signature rows of the members of the class ``scope`` that neither hold the cursor
    nor lie in the window, nearest the cursor first."""
    owner = None
    for d in symbols.around(offset):  # outermost first: the last inside the scope wins
        if (d.kind in CONTAINER_KINDS and scope.start_byte <= d.start_byte
                and d.end_byte <= scope.end_byte):
            owner = d
    if owner is None:
        return []
    members = [d for d in symbols.inside(owner.start_byte, owner.end_byte)
               if d.container == owner.name and d.start_byte > owner.start_byte]
    # Members stand at one indentation; deeper ones are statements that a line broken by
    # typing made tree-sitter read as the class's own.
    depth = min((_width(d.signature) for d in members), default=0)
    found = []
    for d in members:
        if (_width(d.signature) != depth or d.start_byte <= offset < d.end_byte
                or first_line <= d.start_line <= cursor_row):
            continue
        sig = d.signature.rstrip("\n").split("\n")
        found.append({d.start_line + i: line for i, line in enumerate(sig[:1] if d.kind
                                                                       == "field" else sig)})
    found.sort(key=lambda m: (abs(min(m) - cursor_row), min(m)))
    return found[:MAX_MEMBERS]


def _width(line: str) -> int:
    return len(line) - len(line.lstrip())
