"""Context: what the model sees for a cursor, ranked layers within a token budget.

Layers, by priority: P0 cursor window, P1 enclosing function/class, P2 definitions of
what is referenced near the cursor (this file, then the workspace index), P3 symbols of
the files this one imports, P4 snippets similar to the code at the cursor from open and
recently edited buffers. Each layer gets a share of the budget; what a layer leaves
unused flows to the next, and what P4 leaves flows back to P0. The prompt puts the
stable layers first in a fixed order (P1, P3, P2, P4) and P0 last, so consecutive
prompts share their start and the engine's prefix cache hits. Extra layers are written
as code blocks headed by a comment with their path: a prefix-only model reads them as
other files of the repository.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import NamedTuple

from lsp_copilot.context.index import FAMILIES, MAX_FILE_BYTES, FileEntry, WorkspaceIndex
from lsp_copilot.context.scopes import enclosing_scopes, render_scopes
from lsp_copilot.context.snippets import (
    QUERY_LINES,
    Windows,
    buffer_windows,
    similar_snippets,
    windows,
)
from lsp_copilot.context.symbols import Definition, file_symbols, references_near
from lsp_copilot.context.window import Window, cursor_window
from lsp_copilot.context.workspace import Workspace, uri_to_path
from lsp_copilot.documents.store import Snapshot
from lsp_copilot.language.grammars import LanguageQueries, queries_for
from lsp_copilot.language.trigger import Mode, completion_mode
from lsp_copilot.prompts.templates import Template
from lsp_copilot.tokens import TokenCounter

log = logging.getLogger(__name__)

MULTI_LINE_WINDOW = 1.5
"""In multi-line mode the cursor window's (P0's) share of the budget is this many times
larger (with the suffix's part of it larger too for fill-in-the-middle templates)."""
MAX_P0_SHARE = 0.8
SUFFIX_SHARE = 0.25
"""Share of the P0 budget given to the suffix (only used by fill-in-the-middle templates)."""

SHARES: dict[str, float] = {"P0": 0.40, "P1": 0.20, "P2": 0.15, "P3": 0.15, "P4": 0.10}
"""Default budget shares; configurable per call."""

RENDER_ORDER = ("P1", "P3", "P2", "P4")
LAYER_NAMES = {
    "P0": "P0 cursor window",
    "P1": "P1 enclosing scope",
    "P2": "P2 referenced definitions",
    "P3": "P3 imported symbols",
    "P4": "P4 similar snippets",
}
REFERENCE_LINES = 24
"""References are collected from this many lines above the cursor (and the cursor line)."""
MAX_NAMES = 40
RECENT_EDITS = 2
EDIT_CONTEXT_LINES = 4
"""P4 shows this many lines each side of another buffer's last edit."""
JOIN_MARGIN = 8
SPARE_MARGIN = 24
"""Tokens kept back for the joins between layers and the current file's header line."""
MAX_MODULE_SYMBOLS = 30


@dataclass(frozen=True)
class Layer:
    name: str
    source: str
    tokens: int
    truncated: bool
    text: str


@dataclass(frozen=True)
class Context:
    mode: Mode
    prompt: str
    prompt_tokens: int
    budget_tokens: int
    tokenizer: str
    prefix: str
    suffix: str
    layers: tuple[Layer, ...] = field(default_factory=tuple)
    # The prompt as the template's pieces (text and control tokens): what the engine's
    # token ids are built from; "".join(pieces) == prompt.
    pieces: tuple[str, ...] = ()
    cursor: int = -1  # where the cursor stands in ``prompt`` (-1: at its end)

    def at_cursor(self) -> tuple[str, str]:
        """The prompt before and after the cursor (a keystroke changes the first only)."""
        cut = len(self.prompt) if self.cursor < 0 else self.cursor
        return self.prompt[:cut], self.prompt[cut:]


class _Block(NamedTuple):  # a tuple: hundreds are made per build
    path: str
    line: int  # 0-based
    body: str  # whole lines, ending with a newline


@dataclass
class _Filled:
    blocks: list[_Block] = field(default_factory=list)
    tokens: int = 0
    truncated: bool = False


def _render(q: LanguageQueries | None, blocks: list[_Block]) -> str:
    out: list[str] = []
    last_path = None
    comment = q.comment if q is not None else "#"
    for block in blocks:
        if block.path != last_path:
            out.append(f"{comment} {block.path}\n")
            last_path = block.path
        out.append(block.body)
    return "".join(out)


def _fill(q: LanguageQueries | None, counter: TokenCounter, candidates: list[_Block],
          allowance: int) -> _Filled:
    """Greedy in priority order: keep each block that still fits; never split one."""
    filled = _Filled()
    seen: set[tuple[str, str]] = set()
    comment = q.comment if q is not None else "#"
    paths = set()
    for block in candidates:
        key = (block.path, block.body)
        if key in seen:
            continue
        seen.add(key)
        # Counted block by block (each ends with a newline, so counts nearly add up; the
        # whole prompt is checked at the end): re-counting the layer per block is quadratic.
        cost = counter.count(block.body)
        if block.path not in paths:
            cost += counter.count(f"{comment} {block.path}\n")
        if filled.tokens + cost <= allowance:
            filled.blocks.append(block)
            filled.tokens += cost
            paths.add(block.path)
        else:
            filled.truncated = True
            if allowance - filled.tokens < 8:
                break
    return filled


def _display_path(snapshot: Snapshot, workspace: Workspace | None) -> str:
    if workspace is not None:
        rel = workspace.relative(snapshot.uri)
        if rel is not None:
            return rel
    path = uri_to_path(snapshot.uri)
    return path.name if path is not None else snapshot.uri


def _line_start(data: bytes, row_offset: int) -> int:
    return data.rfind(b"\n", 0, row_offset) + 1


class _Builder:
    """One context build; holds what the layers share (symbols, visible rows)."""

    def __init__(self, snapshot: Snapshot, offset: int, counter: TokenCounter,
                 q: LanguageQueries, workspace: Workspace | None) -> None:
        assert snapshot.tree is not None
        self.snapshot = snapshot
        self.offset = offset
        self.counter = counter
        self.q = q
        self.workspace = workspace
        # A multi-root workspace: the index of the folder holding this file.
        self.index = workspace.index_for(snapshot.uri) if workspace is not None else None
        self.data = snapshot.data
        self.tree = snapshot.tree
        self.path = _display_path(snapshot, workspace)
        self.cursor_row = self.data.count(b"\n", 0, offset)
        self.symbols = file_symbols(q, self.tree, self.data, snapshot.uri, offset)
        self.chain = enclosing_scopes(q, self.tree, self.data, offset)
        start = _line_start(self.data, offset)
        for _ in range(REFERENCE_LINES):
            if start == 0:
                break
            start = _line_start(self.data, start - 1)
        # The word being typed is left out: it changes with every keystroke, and the
        # layers built from references should stay put while the user types a word.
        end = offset
        while end > start and (chr(self.data[end - 1]).isalnum() or self.data[end - 1] == 95):
            end -= 1
        found = references_near(q, self.tree, self.data, start, end)[:MAX_NAMES]
        self.references = [name for name, _ in found]
        self.captured = {name for name, captured in found if captured}
        self.rel = self.workspace.relative(snapshot.uri) if self.workspace else None
        self.imports = self.symbols.imports
        self.resolved: list[tuple[str, str, tuple[str, ...]]] = []
        if self.index is not None and self.rel is not None:
            self.resolved = self.index.resolve_imports(
                self.rel, q.grammar, ((i.module, i.names) for i in self.imports))
        self.used: set[tuple[str, int]] = set()
        self._documents: list[tuple[str, str]] | None = None
        self._candidates: dict[object, list[_Block]] = {}  # per layer: the spare round reuses

    # -- helpers ------------------------------------------------------------------------
    def visible(self, d: Definition, first_line: int) -> bool:
        """Already in the prompt's window (the cursor's own lines)."""
        return d.start_line >= first_line and d.start_line <= self.cursor_row

    def block_for(self, path: str, d: Definition, prefer_summary: bool = False) -> _Block:
        body = d.summary if prefer_summary or not d.full else d.full
        return _Block(path, d.start_line, body)

    # -- P1 -----------------------------------------------------------------------------
    def p1(self, first_line: int, first_byte: int, allowance: int) -> _Filled:
        """The chain of enclosing scopes (lsp_copilot/context/scopes.py), as one block."""
        header = self.counter.count(f"{self.q.comment} {self.path}\n")
        rendered = render_scopes(self.q, self.counter, self.data, self.chain, self.symbols,
                                 self.offset, first_line, first_byte, allowance - header)
        if rendered is None:
            return _Filled()
        filled = _fill(self.q, self.counter, [_Block(self.path, rendered.first_row,
                                                     rendered.text)], allowance)
        filled.truncated = filled.truncated or rendered.truncated
        if filled.blocks:
            self.used.update((self.path, row) for row in rendered.starts)
        return filled

    # -- P2 -----------------------------------------------------------------------------
    def p2(self, first_line: int, allowance: int) -> _Filled:
        key = ("P2", first_line)
        if key not in self._candidates:
            self._candidates[key] = self._p2_candidates(first_line)
        return self._fill_new(self._candidates[key], allowance)

    def _p2_candidates(self, first_line: int) -> list[_Block]:
        candidates: list[_Block] = []
        imported_files = {target for _, target, _ in self.resolved}
        open_files, recent = self._open_and_recent()
        # A plain identifier (not a call, type or qualifier) is often a local variable that
        # merely shares its name with a field somewhere: such matches come after the rest.
        weak: list[_Block] = []
        for name in self.references:
            captured = name in self.captured
            defined = False
            local: list[Definition] = []
            for d in self.symbols.iter_named(name):
                defined = True
                if not self.visible(d, first_line) and not self._encloses(d):
                    local.append(d)
                    if len(local) == 2:
                        break
            if local:
                strong = captured or local[0].container is None
                (candidates if strong else weak).extend(
                    self.block_for(self.path, d) for d in local[:2])
                continue
            if defined:
                continue  # defined in the window itself
            if self.index is not None:
                ranked = self.index.ranked(name, self.rel, imported_files, open_files, recent,
                                           self.q.grammar, limit=1)
                for rel, d in ranked[:1]:
                    strong = (captured and d.kind != "field") or rel in imported_files
                    (candidates if strong else weak).append(self.block_for(rel, d))
        # Then this file's outline: top-level definitions nearest the cursor first.
        row, offset = self.cursor_row, self.offset
        outline = [(abs(line - row), line, d)
                   for line, start, end, d in self.symbols.top_level_rows()
                   if d.kind not in ("constant", "field")
                   and not first_line <= line <= row  # visible
                   and not start <= offset < end]  # encloses the cursor
        outline.sort(key=lambda o: (o[0], o[1]))
        outline_blocks = [_Block(self.path, line,
                                 d.summary if d.kind in ("class", "interface") else d.signature)
                          for _, line, d in outline]
        # Measured on the standard library (bench context): weak matches before this file's
        # outline gave a definition recall of 0.47, after it 0.41.
        candidates.extend(weak + outline_blocks)
        return candidates

    def documents(self) -> list[tuple[str, str]]:
        """Open buffers, read once per build."""
        if self._documents is None:
            self._documents = self.workspace.documents() if self.workspace is not None else []
        return self._documents

    def _encloses(self, d: Definition) -> bool:
        return d.start_byte <= self.offset < d.end_byte

    def _open_and_recent(self) -> tuple[set[str], dict[str, int]]:
        if self.workspace is None:
            return set(), {}
        ws = self.workspace
        open_files = {r for uri, _ in self.documents()
                      if (r := ws.relative(uri)) is not None and ws.index_for(uri) is self.index}
        recent = {r: tick for uri, tick in ws.recent().items()
                  if (r := ws.relative(uri)) is not None and ws.index_for(uri) is self.index}
        return open_files, recent

    def _fill_new(self, candidates: list[_Block], allowance: int) -> _Filled:
        fresh = [b for b in candidates if (b.path, b.line) not in self.used]
        filled = _fill(self.q, self.counter, fresh, allowance)
        for b in filled.blocks:
            self.used.add((b.path, b.line))
        return filled

    # -- P3 -----------------------------------------------------------------------------
    def p3(self, allowance: int) -> _Filled:
        if "P3" not in self._candidates:
            self._candidates["P3"] = self._p3_candidates()
        return self._fill_new(self._candidates["P3"], allowance)

    def _p3_candidates(self) -> list[_Block]:
        if self.index is None:
            return []
        refs = {name: i for i, name in enumerate(self.references)}
        candidates: list[tuple[int, int, _Block]] = []
        for order, (module, target, names) in enumerate(self.resolved):
            entry = self.index.file(target)
            if entry is None or target == self.rel:
                continue
            alias = module.rsplit(".", 1)[-1].rsplit("/", 1)[-1].lstrip(".")
            blocks = _imported_blocks(target, entry, names)
            if names:
                for name, block in blocks:
                    candidates.append((refs.get(name, MAX_NAMES), order, block))
            else:
                near = refs.get(alias, MAX_NAMES)
                for name, block in blocks:
                    rank = min(refs.get(name, MAX_NAMES + 1), near + 1)
                    candidates.append((rank, order, block))
        candidates.sort(key=lambda c: (c[0], c[1], c[2].path, c[2].line))
        return [c[2] for c in candidates]

    # -- P4 -----------------------------------------------------------------------------
    def p4(self, first_line: int, allowance: int) -> _Filled:
        if "P4" not in self._candidates:
            self._candidates["P4"] = self._p4_candidates(first_line)
        return self._fill_new(self._candidates["P4"], allowance)

    def _p4_candidates(self, first_line: int) -> list[_Block]:
        if self.workspace is None:
            return []
        docs: list[tuple[str, str, Windows, range | None]] = []
        texts: dict[str, tuple[str, str]] = {}
        open_rels = set()
        for uri, text in self.documents():
            if uri == self.snapshot.uri:
                continue
            rel = self.workspace.relative(uri)
            if rel is None:
                path = uri_to_path(uri)
                rel = path.name if path is not None else uri
            else:
                open_rels.add(rel)
            docs.append((rel, text, buffer_windows(text), None))
            texts[uri] = (rel, text)
        docs.sort(key=lambda d: d[0])
        # Recent edits first: the lines around the last edit of other open buffers (what
        # the user just wrote elsewhere is likely what they use here), most recent first.
        blocks = []
        # This document's own edits are not counted: the first keystroke in it would push
        # another buffer out and change the prompt from P4 on (the warm-up missed that).
        others = [(u, n) for u, n in self.workspace.recent_edits() if u != self.snapshot.uri]
        for uri, line in others[:RECENT_EDITS]:
            if uri in texts:
                rel, text = texts[uri]
                rows = text.split("\n")
                first = max(0, line - EDIT_CONTEXT_LINES)
                body = "\n".join(rows[first:line + EDIT_CONTEXT_LINES + 1]).rstrip("\n") + "\n"
                if body.strip():
                    blocks.append(_Block(rel, first, body))
        # This file's own code out of the window's sight (below the cursor, for a model
        # that reads no suffix, or far above), then the files next to it in the repository.
        own = self.data.decode("utf-8", "replace")
        docs.append((self.path, own, windows(own), range(first_line, self.cursor_row + 1)))
        if self.index is not None and self.rel is not None:
            room = MAX_NEIGHBOUR_WINDOWS
            for rel in _neighbours(self.index, self.rel, self.q.grammar):
                if rel in open_rels:
                    continue
                text, wins = _disk_windows(self.index, rel)
                if wins:
                    docs.append((rel, text, wins, None))
                    room -= len(wins)
                    if room <= 0:
                        break
        # The query is the lines above the cursor's line: the prompt's base is decided at
        # a line start and kept for many lines (build_context), so the snippets do not
        # change with each keystroke.
        end = _line_start(self.data, self.offset)
        start = end
        for _ in range(QUERY_LINES):
            start = _line_start(self.data, start - 1) if start > 0 else 0
        query = self.data[start:end].decode("utf-8", "replace")
        snippets = similar_snippets(query, docs)
        return blocks + [_Block(s.name, s.start_line, s.text) for s in snippets]


MAX_NEIGHBOURS = 32
"""Files of the same folder searched for P4 snippets (those named most like this one)..."""
MAX_NEIGHBOUR_WINDOWS = 1500
"""... as long as their windows come to no more than this (a base build scores each
window: about a microsecond each)."""

_NEIGHBOURS: OrderedDict[tuple[int, int, str], list[str]] = OrderedDict()


def _neighbours(index: WorkspaceIndex, rel: str, grammar: str) -> list[str]:
    """Files of ``rel``'s folder in its language family, named most like it first (cp1252.py
    next to cp1251.py, test_x.py next to test_y.py). Kept per index generation."""
    key = (id(index), index.generation, rel)
    cached = _NEIGHBOURS.get(key)
    if cached is not None:
        return cached
    folder, _, name = rel.rpartition("/")
    family = FAMILIES.get(grammar, grammar)
    found = []
    for other in index.folder(folder):
        entry = index.file(other)
        if other == rel or entry is None:
            continue
        if FAMILIES.get(entry.grammar, entry.grammar) != family:
            continue
        other_name = other.rpartition("/")[2]
        common = next((i for i, (a, b) in enumerate(zip(name, other_name, strict=False))
                       if a != b), min(len(name), len(other_name)))
        found.append((-common, other_name, other))
    found.sort()
    _NEIGHBOURS[key] = out = [f[2] for f in found[:MAX_NEIGHBOURS]]
    while len(_NEIGHBOURS) > 64:
        _NEIGHBOURS.popitem(last=False)
    return out


_DISK: OrderedDict[str, tuple[FileEntry, str, Windows]] = OrderedDict()


def _disk_windows(index: WorkspaceIndex, rel: str) -> tuple[str, Windows]:
    """An indexed file's windows, read from disk once per index entry (a re-indexed file is
    a new entry); nothing for a file that now looks private."""
    entry = index.file(rel)
    if entry is None:
        return "", ()
    key = f"{index.root}\0{rel}"
    cached = _DISK.get(key)
    if cached is not None and cached[0] is entry:
        _DISK.move_to_end(key)
        return cached[1], cached[2]
    try:
        data = (index.root / rel).read_bytes()
    except OSError:
        data = b""
    text = ""
    if data and len(data) <= MAX_FILE_BYTES and index.private(str(index.root / rel),
                                                              data) is None:
        text = data.decode("utf-8", "replace")
    wins = windows(text) if text else ()
    _DISK[key] = (entry, text, wins)
    while len(_DISK) > 256:  # (about 15 MB for files of the standard library's size)
        _DISK.popitem(last=False)
    return text, wins


_IMPORTED: OrderedDict[tuple[str, tuple[str, ...]], tuple[FileEntry, list[tuple[str, _Block]]]] = (
    OrderedDict())


def _imported_blocks(target: str, entry: FileEntry,
                     names: tuple[str, ...]) -> list[tuple[str, _Block]]:
    """P3's candidates from one imported file, before ranking: (name, block) for the names
    imported from it, else for its first top-level definitions. Kept per index entry (a
    re-indexed file is a new entry), since P3 is rebuilt at every line start."""
    key = (target, names)
    cached = _IMPORTED.get(key)
    if cached is not None and cached[0] is entry:
        _IMPORTED.move_to_end(key)
        return cached[1]
    top = [d for d in entry.symbols.definitions if d.container is None]
    if names:
        blocks = [(d.name, _Block(target, d.start_line, d.summary)) for d in top
                  if d.name in names]
    else:
        blocks = [(d.name, _Block(target, d.start_line, d.signature))
                  for d in top[:MAX_MODULE_SYMBOLS]]
    _IMPORTED[key] = (entry, blocks)
    while len(_IMPORTED) > 512:
        _IMPORTED.popitem(last=False)
    return blocks


LINE_RESERVE = 64
"""Tokens a line being typed may take beyond its base before the base is decided anew."""
BASE_RESERVE = 256
"""Tokens kept for the lines typed after a base was decided (at most ``budget // 6``)."""
BASE_MAX_LINES = 16
"""A base serves at most this many lines typed after it; then it is decided again."""

_BASES: dict[tuple[object, ...], tuple[int, bytes, bytes, Context]] = {}
"""The last base per document and parameters: (start, text before it, text after the
cursor line when it was decided, context)."""


def forget_bases() -> None:
    """Drop the kept bases: the next prompt is decided from scratch (tests, benchmarks)."""
    _BASES.clear()


def build_context(
    snapshot: Snapshot,
    offset: int,
    counter: TokenCounter,
    template: Template,
    budget: int,
    mode: Mode | None = None,
    *,
    workspace: Workspace | None = None,
    shares: dict[str, float] | None = None,
    exact_count: bool = False,
) -> Context:
    """Assemble the prompt for the cursor at byte ``offset``.

    Everything before the lines being typed (the layers, the window's start) is decided
    once, at the start of a line (the *base*), and the text typed since is appended. The
    base is kept while the user types on (new lines included, up to ``BASE_MAX_LINES``
    lines and ``BASE_RESERVE`` tokens) and the text before it and after the cursor line
    stay the same, whatever the mode. So consecutive prompts extend each other and vLLM's
    prefix cache serves all but the last few tokens: on CPU, a prompt whose start changed
    costs a prefill of about a second, longer than most pauses. Same document and edit
    history, same bytes out.
    """
    mode = mode or completion_mode(snapshot, offset)

    def at_cursor() -> Context:
        return _build_context(snapshot, offset, counter, template, budget, mode,
                              workspace=workspace, shares=shares, exact_count=exact_count)

    reserve = min(BASE_RESERVE, budget // 6)
    if template.fim or reserve < LINE_RESERVE:
        return at_cursor()
    data = snapshot.data
    start = _line_start(data, offset)
    line_end = data.find(b"\n", offset)
    tail = data[len(data) if line_end < 0 else line_end:]
    key = (snapshot.uri, budget, template.name, id(workspace), repr(shares), exact_count)
    memo = _BASES.get(key)
    if memo is not None:
        base_start, head, memo_tail, base = memo
        if (base_start <= start and tail == memo_tail and len(head) == base_start
                and data.startswith(head)
                and data.count(b"\n", base_start, start) < BASE_MAX_LINES):
            extended = _extend(base, data[base_start:offset], counter, budget, reserve,
                               exact_count, mode)
            if extended is not None:
                return extended
    base = _build_context(snapshot, start, counter, template, budget - reserve, mode,
                          workspace=workspace, shares=shares, exact_count=exact_count)
    _BASES[key] = (start, data[:start], tail, base)
    while len(_BASES) > 8:
        _BASES.pop(next(iter(_BASES)))
    extended = _extend(base, data[start:offset], counter, budget, LINE_RESERVE, exact_count,
                       mode)
    return extended if extended is not None else at_cursor()


def _extend(base: Context, typed_bytes: bytes, counter: TokenCounter, budget: int,
            reserve: int, exact_count: bool, mode: Mode) -> Context | None:
    """``base`` with the text typed after it; None when that is over ``reserve`` tokens
    or the whole over ``budget``."""
    typed = typed_bytes.decode("utf-8", "surrogateescape")
    typed_tokens = counter.count(typed) if typed else 0
    if typed_tokens > reserve:
        return None
    prompt = base.prompt + typed
    estimate = base.prompt_tokens + typed_tokens
    tokens = counter.count(prompt) if exact_count or estimate + JOIN_MARGIN > budget else (
        estimate)
    if tokens > budget:
        return None
    layers = tuple(
        Layer(layer.name, layer.source, layer.tokens + typed_tokens, layer.truncated,
              layer.text + typed) if layer.name == LAYER_NAMES["P0"] else layer
        for layer in base.layers
    )
    return Context(mode=mode, prompt=prompt, prompt_tokens=tokens, budget_tokens=budget,
                   tokenizer=base.tokenizer, prefix=base.prefix + typed, suffix=base.suffix,
                   layers=layers, pieces=(*base.pieces, typed) if typed else base.pieces)


def _build_context(
    snapshot: Snapshot,
    offset: int,
    counter: TokenCounter,
    template: Template,
    budget: int,
    mode: Mode | None = None,
    *,
    workspace: Workspace | None = None,
    shares: dict[str, float] | None = None,
    exact_count: bool = False,
) -> Context:
    """Assemble the prompt for the cursor at byte ``offset``; same input, same bytes out.

    ``prompt_tokens`` is exact with ``exact_count`` (the audit command); otherwise it is
    the sum of the parts' counts when that sum is at least ``JOIN_MARGIN`` under the
    budget (a join can merge a token or two, never add ``JOIN_MARGIN``), and exact when
    the prompt comes near the budget.
    """
    mode = mode or completion_mode(snapshot, offset)
    shares = _mode_shares({**SHARES, **(shares or {})}, mode)
    q = queries_for(snapshot.grammar) if snapshot.tree is not None else None
    suffix_share = SUFFIX_SHARE if mode == "multi-line" else SUFFIX_SHARE * 0.6
    overhead = counter.count(template.render("", "")) if template.fim else 0
    p0_base = int(budget * shares["P0"]) if q is not None else budget
    p0_base -= overhead
    window = _window(snapshot, offset, counter, template, p0_base, suffix_share)
    layers: dict[str, _Filled] = {}
    carry = 0
    base_window = window

    def add_layers() -> None:
        """P1-P4 and the budget they leave back to P0 (sets ``window`` and ``layers``)."""
        nonlocal window, carry
        builder = _Builder(snapshot, offset, counter, q, workspace) if q is not None else None
        if builder is not None:
            allowance = {k: int(budget * shares[k]) for k in ("P1", "P2", "P3", "P4")}
            for key in ("P1", "P2", "P3", "P4"):
                room = allowance[key] + carry
                if key == "P1":
                    filled = builder.p1(window.first_line, _first_byte(window, offset), room)
                elif key == "P2":
                    filled = builder.p2(window.first_line, room)
                elif key == "P3":
                    filled = builder.p3(room)
                else:
                    filled = builder.p4(window.first_line, room)
                layers[key] = filled
                carry = room - filled.tokens
            # What the layers left flows back to P0: a longer window, by whole anchors.
            if carry > 0:
                wider = _window(snapshot, offset, counter, template, p0_base + carry, suffix_share)
                if wider.first_line < window.first_line:
                    window = wider
                    builder.used = {u for u in builder.used if u[0] != builder.path}
                    layers["P1"] = builder.p1(window.first_line, _first_byte(window, offset),
                                              layers["P1"].tokens)
            # The window grows by whole anchors only, so some budget is usually left: offer it
            # again to the layers that were cut, in priority order.
            spare = budget - overhead - window.prefix_tokens - window.suffix_tokens - sum(
                f.tokens for f in layers.values()) - SPARE_MARGIN
            for key in ("P2", "P3", "P4"):
                if spare < 16 or not layers[key].truncated:
                    continue
                for b in layers[key].blocks:
                    builder.used.discard((b.path, b.line))
                room = layers[key].tokens + spare
                if key == "P2":
                    layers[key] = builder.p2(window.first_line, room)
                elif key == "P3":
                    layers[key] = builder.p3(room)
                else:
                    layers[key] = builder.p4(window.first_line, room)
                spare = room - layers[key].tokens

    try:
        add_layers()
    except Exception:  # a bug in a layer must cost the layers, never the completion
        log.exception("context layers failed at %s:%d; using the cursor window only",
                      snapshot.uri, offset)
        window, layers = base_window, {}
    here = f"{q.comment} {_display_path(snapshot, workspace)}\n" if q is not None else ""
    header, rendered = _assemble(q, layers, here)
    # Repository formats (Qwen2.5-Coder, StarCoder2, Mellum) write the layers' blocks as
    # files of their own: they need each block's path, this file's path, the repo name.
    path = _display_path(snapshot, workspace)
    index = workspace.index_for(snapshot.uri) if workspace is not None else None
    repo = index.root.name if index is not None else ""  # the folder holding the file
    pieces = template.pieces(window.prefix, window.suffix, header, _files(layers), path, repo)
    prompt = "".join(pieces)
    # Token counts of parts need not add up exactly (merges across joins): unless the sum of
    # the parts is well under the budget, count the whole prompt, and drop the
    # lowest-priority blocks until it fits. (The layers' text is stable while the user
    # types, so its count is cached; the whole prompt's is not.)

    def total() -> int:
        estimate = (counter.count(header) + window.prefix_tokens + window.suffix_tokens
                    + overhead)
        if estimate <= budget - JOIN_MARGIN and not exact_count:
            return estimate
        return counter.count(prompt)

    while (prompt_tokens := total()) > budget:
        for key in ("P4", "P3", "P2", "P1"):
            if key in layers and layers[key].blocks:
                layers[key].blocks.pop()
                layers[key].truncated = True
                break
        else:
            window = _window(snapshot, offset, counter, template,
                             max(0, counter.count(window.prefix) - 16), suffix_share)
        header, rendered = _assemble(q, layers, here)
        pieces = template.pieces(window.prefix, window.suffix, header, _files(layers), path,
                                 repo)
        prompt = "".join(pieces)
    out_layers = []
    for key in RENDER_ORDER:
        if key in layers and layers[key].blocks:
            text = rendered[key]
            sources = ", ".join(f"{b.path}:{b.line + 1}" for b in layers[key].blocks)
            out_layers.append(Layer(LAYER_NAMES[key], sources, counter.count(text),
                                    layers[key].truncated, text))
    p0_text = window.prefix + (window.suffix if template.fim else "")
    out_layers.append(Layer(
        name=LAYER_NAMES["P0"],
        source=f"{_display_path(snapshot, workspace)}:{window.first_line + 1}",
        tokens=window.prefix_tokens + window.suffix_tokens,
        truncated=window.truncated,
        text=p0_text,
    ))
    return Context(
        mode=mode,
        prompt=prompt,
        prompt_tokens=prompt_tokens,
        budget_tokens=budget,
        tokenizer=counter.name,
        prefix=window.prefix,
        suffix=window.suffix,
        layers=tuple(out_layers),
        pieces=pieces,
        cursor=template.cursor_index(pieces),
    )


def _mode_shares(shares: dict[str, float], mode: Mode) -> dict[str, float]:
    """Multi-line mode widens the cursor window: a block is written from the code around
    it more than from single definitions. P0's share grows by ``MULTI_LINE_WINDOW`` (at
    most to ``MAX_P0_SHARE``) and the other layers give it up in proportion, so the shares
    still add up to what they did and the budget holds."""
    if mode != "multi-line":
        return shares
    p0 = shares["P0"]
    grown = min(MAX_P0_SHARE, p0 * MULTI_LINE_WINDOW)
    if grown <= p0 or p0 >= 1:
        return shares
    scale = (1 - grown) / (1 - p0)
    return {k: grown if k == "P0" else v * scale for k, v in shares.items()}


def _window(snapshot: Snapshot, offset: int, counter: TokenCounter, template: Template,
            p0_budget: int, suffix_share: float) -> Window:
    suffix_budget = int(p0_budget * suffix_share) if template.fim else 0
    return cursor_window(snapshot.data, offset, counter, max(0, p0_budget - suffix_budget),
                         suffix_budget)


def _files(layers: dict[str, _Filled]) -> tuple[tuple[str, str], ...]:
    """(path, body) of every block, in the prompt's order."""
    return tuple((b.path, b.body) for key in RENDER_ORDER if key in layers
                 for b in layers[key].blocks)


def _first_byte(window: Window, offset: int) -> int:
    return offset - len(window.prefix.encode("utf-8", "surrogateescape"))


def _assemble(q: LanguageQueries | None, layers: dict[str, _Filled],
              here: str) -> tuple[str, dict[str, str]]:
    rendered = {key: _render(q, layers[key].blocks) for key in RENDER_ORDER
                if key in layers and layers[key].blocks}
    parts = [rendered[key] for key in RENDER_ORDER if key in rendered]
    if not parts:
        return "", rendered
    # A blank line, then the current file's own header before the window: the model reads
    # the layers as other files and the window as the file being edited.
    return "\n".join(parts) + "\n" + here, rendered


__all__ = ["LAYER_NAMES", "SHARES", "Context", "Layer", "build_context", "forget_bases"]
