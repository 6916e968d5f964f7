"""What a completion sends the engine: one recipe, shared by completions and the warm-up.

The warm-up prefills the prompt that the first completion will send: it helps only while
both build it the same way, so both call ``prompt_for`` (template, context) and
``prompt_ids`` (its token ids).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

from lsp_copilot.context.budgets import budgets_for
from lsp_copilot.context.builder import build_context
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.context.result import Context
from lsp_copilot.documents.store import Snapshot
from lsp_copilot.engine.base import Engine
from lsp_copilot.engine.routes import MAIN
from lsp_copilot.language.folders import LanguageConfig, language_config
from lsp_copilot.language.trigger import Mode
from lsp_copilot.postprocess.brackets import ABOVE_BYTES, open_above
from lsp_copilot.postprocess.cursor_text import Cursor
from lsp_copilot.privacy.redact import Redactor
from lsp_copilot.prompts.templates import Template, template_for
from lsp_copilot.settings.completion import CompletionSettings
from lsp_copilot.settings.layers import RequestSettings

SUFFIX_LINES = 4
"""Lines after the cursor line that post-processing compares the answer with."""
LINE_WIDTH_MIN, LINE_WIDTH_MAX = 79, 100


WIDTH_WINDOW = 16_000
"""Bytes on each side of the cursor whose lines set the width: every keystroke builds a
cursor, and a large file's lines near the cursor tell its style as well as all of them."""


def line_width(data: bytes, offset: int = 0) -> int:
    """How wide this file lets a line be: its longest line near ``offset``, from 79 (a file
    of short lines still takes a statement of ordinary length) to 100 (a long URL sets no
    style)."""
    near = data[max(0, offset - WIDTH_WINDOW):offset + WIDTH_WINDOW]
    longest = max((len(line) for line in near.split(b"\n")), default=0)
    return max(LINE_WIDTH_MIN, min(LINE_WIDTH_MAX, longest))


def cursor_at(snapshot: Snapshot, offset: int) -> Cursor:
    """``cursor_with`` the snapshot's language rules."""
    return cursor_with(snapshot, offset, language_config(snapshot.grammar))


def cursor_with(snapshot: Snapshot, offset: int, rules: LanguageConfig) -> Cursor:
    """The text around ``offset`` that post-processing needs, read with ``rules`` (the
    request looked them up once).

    When the cursor follows whitespace, the prompt ends one character earlier (recorded
    as ``prompt_dropped_indent``): BPE models carry a word's leading space in its token
    (``:\\n    x`` is ``:``, ``\\n   ``, `` x``), so a prompt ending in that space is one
    they rarely saw, and SmolLM2 answers it with a blank or dedented line. The model
    writes the space back and post-processing takes it off.
    """
    data = snapshot.data
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    end = len(data) if end < 0 else end
    above = data[:start].rstrip()  # up to the nearest non-blank line above
    following = end
    for _ in range(SUFFIX_LINES):
        nxt = data.find(b"\n", following + 1)
        following = len(data) if nxt < 0 else nxt
    before = data[start:offset].decode("utf-8", "replace")
    width = line_width(data, offset)
    # (At most ABOVE_BYTES: a minified file's one line must not be read on every key.)
    above_text = data[max(0, start - ABOVE_BYTES):start].decode("utf-8", "replace")
    return Cursor(
        line_before=before,
        line_after=data[offset:end].decode("utf-8", "replace").rstrip("\r"),
        line_above=above[above.rfind(b"\n") + 1:].decode("utf-8", "replace"),
        suffix_lines=data[end + 1:following].decode("utf-8", "replace"),
        prompt_dropped_indent=before[-1:] if before[-1:] in (" ", "\t") else "",
        rules=rules,
        line_width=width,
        open_above=open_above(above_text, rules),
    )


def prompt_for(
    engine: Engine, route: str, settings: RequestSettings, snapshot: Snapshot, offset: int,
    cursor: Cursor, mode: Mode, *, explicit: bool = False, workspace: Workspace | None = None,
    build: Callable[..., Context] = build_context, redactor: Redactor | None = None,
) -> tuple[Template, Context]:
    """The template and the context of a completion at ``offset`` (where ``cursor`` is)
    on ``route``'s ``engine``: the prompt ends before a dropped indent (``cursor_at``),
    its secrets replaced by ``redactor``'s placeholders."""
    # `template` names the main model's family; another route's model keeps its own.
    template = template_for(settings.context.template if settings.context.template != "auto"
                            and route == MAIN else engine.info.template)
    budgets = budgets_for(settings, engine.info.device)
    context = build(
        snapshot, offset - len(cursor.prompt_dropped_indent.encode()), engine.counter,
        template, budgets.for_request(mode, explicit), mode, workspace=workspace,
        shares=settings.context.context_shares, redactor=redactor,
        suffix_share=budgets.suffix_share,
    )
    return template, context


@dataclass(frozen=True)
class PromptIds:
    """The prompt as token ids with the engine's tokenizer, and the stop tokens' ids."""

    ids: tuple[int, ...]
    stop_ids: tuple[int, ...]
    escaped: int  # control-token strings in the code, encoded as plain text


def prompt_ids(engine: Engine, template: Template, context: Context) -> PromptIds | None:
    """``context``'s prompt as ``engine`` takes it; None for an engine without a
    tokenizer of its own (it then gets the text)."""
    encoder = engine.encoder
    if encoder is None:
        return None
    encoded = encoder.encode(context.pieces or (context.prompt,))
    return PromptIds(encoded.ids, encoder.stop_ids(template.stop), encoded.escaped)


class RequestIds:
    """The ids of the requests sent to one set of engines: one counter for completions and
    warm-ups alike (an engine refuses a second request under an id still in use). The
    server's Completer owns it; Completers that share engines share it."""

    def __init__(self) -> None:
        self._next = itertools.count(1)

    def new(self, kind: str = "") -> str:
        """``lsp-copilot-7``; ``lsp-copilot-warm-8`` for ``kind="warm"``."""
        number = next(self._next)
        return f"lsp-copilot-{kind}-{number}" if kind else f"lsp-copilot-{number}"


def common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    low, high = 0, n  # a[:low] == b[:low] and a[:high] != b[:high]
    while high - low > 1:
        mid = (low + high) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid
    return low


def max_tokens_for(settings: CompletionSettings, mode: Mode, cursor: Cursor) -> int:
    """A single line stops at its end; the larger limit lets a block header that would
    stand alone get its body (see postprocess.stop_rule)."""
    if mode != "single-line":
        return settings.max_tokens_multi_line
    if cursor.line_after.strip():
        return settings.max_tokens_single_line
    return max(settings.max_tokens_single_line, settings.max_tokens_multi_line)
