"""Context: what the model sees for a cursor, ranked layers within a token budget.

Layers, by priority: P0 cursor window, P1 enclosing function/class, P2 definitions of
what is referenced near the cursor (this file, then the workspace index), P3 symbols of
the files this one imports, P4 snippets similar to the code at the cursor from open and
recently edited buffers. Each layer gets a share of the budget; what a layer leaves
unused flows to the next, and what P4 leaves flows back to P0. The prompt puts the
stable layers first in a fixed order (P1, P3, P2, P4) and P0 last, so consecutive
prompts share their start and the engine's prefix cache hits. Extra layers are written
as code blocks headed by a comment with their path: a prefix-only model reads them as
other files of the repository. The layers live in ``layers/``; this module splits the
budget, keeps the prompt's base between keystrokes and assembles the prompt.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import NamedTuple

from lsp_copilot.context.context_cache import ContextCache
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.context.layers.blocks import Block, Filled, line_start, render
from lsp_copilot.context.layers.layer_dispatch import KEYS, Layers
from lsp_copilot.context.layers.layer_inputs import LayerInputs, display_path
from lsp_copilot.context.result import LAYER_NAMES, Context, Layer
from lsp_copilot.context.window import Window, cursor_window
from lsp_copilot.documents.store import Snapshot
from lsp_copilot.language.grammars import LanguageQueries, queries_for
from lsp_copilot.language.trigger import Mode, completion_mode
from lsp_copilot.privacy.redact import Redactor
from lsp_copilot.prompts.templates import Template
from lsp_copilot.settings.context import CONTEXT_SHARES
from lsp_copilot.tokens import TokenCounter

log = logging.getLogger(__name__)

MULTI_LINE_WINDOW = 1.5
"""In multi-line mode the cursor window's (P0's) share of the budget is this many times
larger (with the suffix's part of it larger too for fill-in-the-middle templates)."""
MAX_P0_SHARE = 0.8
SUFFIX_SHARE = 0.25
"""Share of the P0 budget given to the suffix in multi-line mode (only used by
fill-in-the-middle templates; a single line gets ``SINGLE_LINE_SUFFIX`` of it). The
request's ``suffix_share`` (the ``suffixShare`` setting, by device) replaces it."""
SINGLE_LINE_SUFFIX = 0.6

RENDER_ORDER = ("P1", "P3", "P2", "P4")
JOIN_MARGIN = 8
SPARE_MARGIN = 24
"""Tokens kept back for the joins between layers and the current file's header line."""

LINE_RESERVE = 64
"""Tokens a line being typed may take beyond its base before the base is decided anew."""
BASE_RESERVE = 256
"""Tokens kept for the lines typed after a base was decided (at most ``budget // 6``)."""
BASE_MAX_LINES = 16
"""A base serves at most this many lines typed after it; then it is decided again."""


def build_context(
    snapshot: Snapshot,
    offset: int,
    counter: TokenCounter,
    template: Template,
    budget: int,
    mode: Mode | None = None,
    *,
    workspace: Workspace | None = None,
    shares: Sequence[float] | None = None,
    exact_count: bool = False,
    redactor: Redactor | None = None,
    suffix_share: float = SUFFIX_SHARE,
) -> Context:
    """Assemble the prompt for the cursor at byte ``offset``.

    ``suffix_share``: the share of the cursor window's budget that fill-in-the-middle
    templates give to the code after the cursor in multi-line mode (0: no suffix, the
    prefix takes it all).

    With a ``redactor``, secret values in every text the prompt takes (the window, every
    layer's blocks, the text typed since the base) are replaced by placeholders first.

    ``shares`` are the budget shares of P0..P4 (the ``contextShares`` setting; default
    its default). What builds keep for the next ones (the base, symbols, the layers'
    reads) is the workspace's; without a workspace, nothing is kept.

    Everything before the lines being typed (the layers, the window's start) is decided
    once, at the start of a line (the *base*), and the text typed since is appended. The
    base is kept while the user types on (new lines included, up to ``BASE_MAX_LINES``
    lines and ``BASE_RESERVE`` tokens) and the text before it and after the cursor line
    stay the same, whatever the mode. So consecutive prompts extend each other and vLLM's
    prefix cache serves all but the last few tokens: on CPU, a prompt whose start changed
    costs a prefill of about a second, longer than most pauses. A fill-in-the-middle
    prompt keeps its base the same way; the code after the cursor that follows the typed
    text is the document's as it is now. Same document and edit history, same bytes out.
    """
    mode = mode or completion_mode(snapshot, offset)
    cache = workspace.cache if workspace is not None else ContextCache()

    def at_cursor() -> Context:
        return _build_context(snapshot, offset, counter, template, budget, mode,
                              workspace, shares, exact_count, cache, redactor, suffix_share)

    reserve = min(BASE_RESERVE, budget // 6)
    if reserve < LINE_RESERVE:
        return at_cursor()
    data = snapshot.data
    start = line_start(data, offset)
    line_end = data.find(b"\n", offset)
    tail = data[len(data) if line_end < 0 else line_end:]
    key = (snapshot.uri, budget, template.name, repr(shares), exact_count, id(redactor))
    after = data[offset:len(data) if line_end < 0 else line_end]  # (scanned, never sent)
    memo = cache.base(key)
    if memo is not None:
        base_start, head, memo_tail, base = memo
        if (base_start <= start and len(head) == base_start and data.startswith(head)
                and data.count(b"\n", base_start, start) < BASE_MAX_LINES):
            # The lines below may have changed (an editor's `}` pushed down by Enter): a
            # prompt whose suffix follows its prefix keeps its start all the same.
            below = None if tail == memo_tail else tail
            extended = _extend(base, data[base_start:offset], counter, template, budget,
                               reserve, exact_count, mode,
                               _Typed(redactor, snapshot.uri, after, below))
            if extended is not None:
                return extended
    base = _build_context(snapshot, start, counter, template, budget - reserve, mode,
                          workspace, shares, exact_count, cache, redactor, suffix_share)
    cache.keep_base(key, (start, data[:start], tail, base))
    extended = _extend(base, data[start:offset], counter, template, budget, LINE_RESERVE,
                       exact_count, mode, _Typed(redactor, snapshot.uri, after))
    return extended if extended is not None else at_cursor()


class _Typed(NamedTuple):
    """How the text typed after a base is redacted: the rest of the cursor's line is
    scanned with it (a secret is found whole), and sent only, redacted, as the first line
    of a fill-in-the-middle suffix. ``below``: the document after the cursor's line when
    it is no longer the base's (None: unchanged)."""

    redactor: Redactor | None
    path: str
    after: bytes
    below: bytes | None = None

    def lines_below(self, count: int, first_line: int) -> tuple[str, tuple[str, ...]]:
        """The first ``count`` lines of ``below`` (each after its newline: ``below``
        starts with the cursor line's), secrets replaced, and what was found."""
        below = self.below or b""
        cut = -1
        for _ in range(count + 1):  # (cut in bytes: never decode the rest of the file)
            cut = below.find(b"\n", cut + 1)
            if cut < 0:
                break
        text = (below if cut < 0 else below[:cut]).decode("utf-8", "surrogateescape")
        if self.redactor is None or not text:
            return text, ()
        redaction = self.redactor.text(text, self.path)
        return redaction.text, _where(display_name(self.path), first_line, redaction.found)

    def redact(self, typed: str, first_line: int) -> tuple[str, str, tuple[str, ...]]:
        """The typed text and the rest of its line, secrets replaced, and what was found."""
        after = self.after.decode("utf-8", "surrogateescape")
        if self.redactor is None or not (typed or after):
            return typed, after, ()
        text, rest, found = self.redactor.around(typed, after, self.path)
        return text, rest, _where(display_name(self.path), first_line, found)


def _extend(base: Context, typed_bytes: bytes, counter: TokenCounter, template: Template,
            budget: int, reserve: int, exact_count: bool, mode: Mode,
            redact: _Typed) -> Context | None:
    """``base`` with the text typed after it (and, for a fill-in-the-middle prompt, the
    code after the cursor as it is now); None when the typed text is over ``reserve``
    tokens, the whole over ``budget``, or the template cannot keep the prompt's start."""
    typed, rest, found = redact.redact(typed_bytes.decode("utf-8", "surrogateescape"),
                                       base.base_lines)
    typed_tokens = counter.count(typed) if typed else 0
    if typed_tokens > reserve:
        return None
    # The base's suffix began with its cursor line as it was then: that first line is
    # replaced, and the lines after it too where the document's have changed since (as
    # many lines as the base's suffix had).
    newline = base.suffix.find("\n")
    later = base.suffix[newline:] if newline >= 0 else ""
    old_later = later
    if redact.below is not None and base.suffix:
        later, below_found = redact.lines_below(later.count("\n"),
                                                base.base_lines + typed.count("\n"))
        found = found + below_found
    suffix = base.suffix if not base.suffix else rest + later
    pieces = template.extend(base.pieces, typed, suffix, base.suffix)
    if pieces is None:
        return None
    prompt = "".join(pieces)
    # Only the first line changed (and the later ones, if the document's did): count
    # them, not the whole suffix, at every keystroke.
    first = base.suffix if newline < 0 else base.suffix[:newline]
    delta = typed_tokens + (counter.count(rest) - counter.count(first)
                            if suffix != base.suffix else 0)
    if later != old_later:
        delta += counter.count(later) - counter.count(old_later)
    estimate = base.prompt_tokens + delta
    tokens = counter.count(prompt) if exact_count or estimate + JOIN_MARGIN > budget else (
        estimate)
    if tokens > budget:
        return None
    prefix = base.prefix + typed
    layers = tuple(
        Layer(layer.name, layer.source, layer.tokens + delta, layer.truncated,
              prefix + (suffix if template.fim else ""))
        if layer.name == LAYER_NAMES["P0"] else layer
        for layer in base.layers
    )
    return Context(mode=mode, prompt=prompt, prompt_tokens=tokens, budget_tokens=budget,
                   tokenizer=base.tokenizer, prefix=prefix, suffix=suffix,
                   layers=layers, pieces=pieces, cursor=template.cursor_index(pieces),
                   headers=base.headers,
                   redacted=tuple(dict.fromkeys(base.redacted + found)),  # (the base saw
                   # the cursor's line whole: what it found there may be found again)
                   base_lines=base.base_lines)


def _build_context(
    snapshot: Snapshot,
    offset: int,
    counter: TokenCounter,
    template: Template,
    budget: int,
    mode: Mode,
    workspace: Workspace | None,
    shares: Sequence[float] | None,
    exact_count: bool,
    cache: ContextCache,
    redactor: Redactor | None = None,
    suffix_share: float = SUFFIX_SHARE,
) -> Context:
    """Assemble the prompt for the cursor at byte ``offset``; same input, same bytes out.

    ``prompt_tokens`` is exact with ``exact_count`` (the audit command); otherwise it is
    the sum of the parts' counts when that sum is at least ``JOIN_MARGIN`` under the
    budget (a join can merge a token or two, never add ``JOIN_MARGIN``), and exact when
    the prompt comes near the budget.
    """
    share = _mode_shares(dict(zip(("P0", *KEYS), shares or CONTEXT_SHARES, strict=True)), mode)
    q = queries_for(snapshot.grammar) if snapshot.tree is not None else None
    if mode != "multi-line":
        suffix_share *= SINGLE_LINE_SUFFIX
    overhead = counter.count(template.render("", "")) if template.fim else 0
    p0_base = int(budget * share["P0"]) if q is not None else budget
    p0_base -= overhead
    window = _window(snapshot, offset, counter, template, p0_base, suffix_share)
    layers: dict[str, Filled] = {}
    base_window = window

    def add_layers(q: LanguageQueries) -> None:
        """P1-P4 and the budget they leave back to P0 (sets ``window`` and ``layers``)."""
        nonlocal window
        chosen = Layers(LayerInputs(snapshot, offset, counter, q, workspace, cache))
        carry = 0
        for key in KEYS:
            room = int(budget * share[key]) + carry
            layers[key] = chosen.fill(key, window.first_line, _first_byte(window, offset), room)
            carry = room - layers[key].tokens
        # What the layers left flows back to P0: a longer window, by whole anchors.
        if carry > 0:
            wider = _window(snapshot, offset, counter, template, p0_base + carry, suffix_share)
            if wider.first_line < window.first_line:
                window = wider
                chosen.release_own_file()
                layers["P1"] = chosen.fill("P1", window.first_line,
                                           _first_byte(window, offset), layers["P1"].tokens)
        # The window grows by whole anchors only, so some budget is usually left: offer it
        # again to the layers that were cut, in priority order.
        spare = budget - overhead - window.prefix_tokens - window.suffix_tokens - sum(
            f.tokens for f in layers.values()) - SPARE_MARGIN
        for key in KEYS[1:]:
            if spare < 16 or not layers[key].truncated:
                continue
            chosen.release(layers[key])
            room = layers[key].tokens + spare
            layers[key] = chosen.fill(key, window.first_line, _first_byte(window, offset), room)
            spare = room - layers[key].tokens

    try:
        if q is not None:
            add_layers(q)
    except Exception:  # a bug in a layer must cost the layers, never the completion
        log.exception("context layers failed at %s:%d; using the cursor window only",
                      snapshot.uri, offset)
        window, layers = base_window, {}
    # What the prompt shows: the window and the blocks with their secrets replaced (the
    # window itself stays the buffer's text: its byte length places the layers).
    found: list[str] = []  # "path:line kind" of each secret replaced
    if redactor is not None:
        for filled in layers.values():
            filled.blocks[:] = [_redact_block(redactor, block, found) for block in filled.blocks]

    def show(window: Window) -> tuple[Window, list[str]]:
        if redactor is None:
            return window, []
        return _redact_window(redactor, window, snapshot, offset, counter)

    shown, in_window = show(window)
    path = display_path(snapshot, workspace)
    here = f"{q.comment} {path}\n" if q is not None else ""
    header, rendered = _assemble(q, layers, here)
    # Repository formats (Qwen2.5-Coder, StarCoder2, Mellum) write the layers' blocks as
    # files of their own: they need each block's path, this file's path, the repo name.
    index = workspace.index_for(snapshot.uri) if workspace is not None else None
    repo = index.root.name if index is not None else ""  # the folder holding the file
    pieces = template.pieces(shown.prefix, shown.suffix, header, _files(layers), path, repo)
    prompt = "".join(pieces)
    # Token counts of parts need not add up exactly (merges across joins): unless the sum of
    # the parts is well under the budget, count the whole prompt, and drop the
    # lowest-priority blocks until it fits. (The layers' text is stable while the user
    # types, so its count is cached; the whole prompt's is not.)

    def total() -> int:
        estimate = (counter.count(header) + shown.prefix_tokens + shown.suffix_tokens
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
            shown, in_window = show(window)
        header, rendered = _assemble(q, layers, here)
        pieces = template.pieces(shown.prefix, shown.suffix, header, _files(layers), path,
                                 repo)
        prompt = "".join(pieces)
    out_layers = []
    for key in RENDER_ORDER:
        if key in layers and layers[key].blocks:
            text = rendered[key]
            sources = ", ".join(f"{b.path}:{b.line + 1}" for b in layers[key].blocks)
            out_layers.append(Layer(LAYER_NAMES[key], sources, counter.count(text),
                                    layers[key].truncated, text))
    p0_text = shown.prefix + (shown.suffix if template.fim else "")
    out_layers.append(Layer(
        name=LAYER_NAMES["P0"],
        source=f"{path}:{window.first_line + 1}",
        tokens=shown.prefix_tokens + shown.suffix_tokens,
        truncated=window.truncated,
        text=p0_text,
    ))
    return Context(
        mode=mode,
        prompt=prompt,
        prompt_tokens=prompt_tokens,
        budget_tokens=budget,
        tokenizer=counter.name,
        prefix=shown.prefix,
        suffix=shown.suffix,
        layers=tuple(out_layers),
        pieces=pieces,
        cursor=template.cursor_index(pieces),
        headers=frozenset(f"{q.comment} {p}" for p in {path, *(p for p, _ in _files(layers))}
                          ) if q is not None and q.comment else frozenset(),
        redacted=(*in_window, *found),
        base_lines=window.first_line + window.prefix.count("\n"),
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


def _redact_window(redactor: Redactor, window: Window, snapshot: Snapshot, offset: int,
                   counter: TokenCounter) -> tuple[Window, list[str]]:
    """The window with its secrets replaced, token counts kept true; the cursor's line is
    scanned whole (the rest of it is read from the buffer when the window has no suffix)."""
    data = snapshot.data
    after = window.suffix
    if not after:
        end = data.find(b"\n", offset)
        after = data[offset:len(data) if end < 0 else end].decode("utf-8", "surrogateescape")
    prefix, suffix, found = redactor.around(window.prefix, after, snapshot.uri)
    if not found:
        return window, []
    if not window.suffix:
        suffix = ""
    window = dataclasses.replace(
        window, prefix=prefix, suffix=suffix,
        prefix_tokens=counter.count(prefix) if prefix != window.prefix else window.prefix_tokens,
        suffix_tokens=counter.count(suffix) if suffix != window.suffix else window.suffix_tokens)
    return window, list(_where(display_name(snapshot.uri), window.first_line, found))


def _redact_block(redactor: Redactor, block: Block, found: list[str]) -> Block:
    """``block`` with its secrets replaced (what was found is added to ``found``)."""
    redaction = redactor.text(block.body, block.path)
    if not redaction.found:
        return block
    found += _where(block.path, block.line, redaction.found)
    return block._replace(body=redaction.text)


def _where(path: str, first_line: int, found: Sequence[tuple[int, str]]) -> tuple[str, ...]:
    """``path:line kind`` (1-based lines) of what redaction found."""
    return tuple(f"{path}:{first_line + line + 1} {kind}" for line, kind in found)


def display_name(uri: str) -> str:
    """A file's name for messages: the last part of its uri."""
    return uri.rsplit("/", 1)[-1]


def _files(layers: dict[str, Filled]) -> tuple[tuple[str, str], ...]:
    """(path, body) of every block, in the prompt's order."""
    return tuple((b.path, b.body) for key in RENDER_ORDER if key in layers
                 for b in layers[key].blocks)


def _first_byte(window: Window, offset: int) -> int:
    return offset - len(window.prefix.encode("utf-8", "surrogateescape"))


def _assemble(q: LanguageQueries | None, layers: dict[str, Filled],
              here: str) -> tuple[str, dict[str, str]]:
    rendered = {key: render(q, layers[key].blocks) for key in RENDER_ORDER
                if key in layers and layers[key].blocks}
    parts = [rendered[key] for key in RENDER_ORDER if key in rendered]
    if not parts:
        return "", rendered
    # A blank line, then the current file's own header before the window: the model reads
    # the layers as other files and the window as the file being edited.
    return "\n".join(parts) + "\n" + here, rendered
