"""`textDocument/inlineCompletion` (ghost text) and `textDocument/completion` (an item per
suggestion)."""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import NamedTuple

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from lsp_copilot import gc_timing
from lsp_copilot.acceptance.tracker import keys_for
from lsp_copilot.documents.buffer import Encoding, PositionError, units
from lsp_copilot.documents.store import DocumentError, Snapshot
from lsp_copilot.pipeline.ask import Outcome
from lsp_copilot.pipeline.scheduling import Superseded
from lsp_copilot.server.protocol import ACCEPT_COMMAND
from lsp_copilot.server.state import CopilotServer

log = logging.getLogger(__name__)


class _Answer(NamedTuple):
    """The pipeline's outcome and the document it answered: an item's edit is made
    against that buffer (the prompt's prefix may differ from it, see ``cursor_at``).
    ``ends``: per item, where its edit ends (the cursor, or past the closers right of it
    that the item writes again), converted once from the outcome's byte counts."""

    outcome: Outcome
    snapshot: Snapshot
    offset: int
    ends: tuple[types.Position, ...]

    def items(self) -> zip[tuple[str, types.Position]]:
        """(text, end of its edit) per item, the first answer first."""
        outcome = self.outcome
        return zip((outcome.text, *outcome.alternatives), self.ends, strict=True)


def _ends(outcome: Outcome, snapshot: Snapshot, offset: int, position: types.Position,
          encoding: Encoding) -> tuple[types.Position, ...]:
    count = 1 + len(outcome.alternatives)
    replaces = (*outcome.replaces, *[0] * count)[:count]
    return tuple(types.Position(position.line, position.character + units(
        snapshot.data[offset:offset + n], encoding)) for n in replaces)


async def _complete(ls: CopilotServer, uri: str, position: types.Position,
                    explicit: bool = False, track: bool = False) -> _Answer | None:
    """Convert the position once, snapshot, run the pipeline; None when superseded.
    ``explicit``: the user asked for a suggestion (triggerKind Invoked in both methods:
    never debounced or cut short, several lines on an empty one, alternatives, the
    explicit budget of contextBudgets). ``track``: give the answer an id that feedback
    names, for acceptance records."""
    started = time.perf_counter()
    if explicit:
        ls.telemetry.count("explicit_requests")
    try:
        snapshot = ls.store.snapshot(uri)
        offset = ls.store.get_offset(uri, position.line, position.character, ls.encoding)
    except (DocumentError, PositionError) as exc:
        ls.telemetry.count("rejected_input")
        raise JsonRpcInvalidParams(str(exc)) from None
    ls.warmer.cancel()  # a warm-up must never delay a real request
    try:
        outcome = await ls.scheduler.run(
            uri, lambda: ls.completer.complete(snapshot, offset, explicit=explicit))
    except Superseded:
        log.debug("superseded by a newer request for %s", uri)
        return None
    for message in outcome.warnings:  # `safety: warn`: the user sees what the text adds
        ls.window_show_message(types.ShowMessageParams(types.MessageType.Warning, message))
    # One line per answer (never its text): the request id ties it to the engine's lines.
    log.debug("%s:%d:%d %s, %d chars from %s%s", uri, position.line, position.character,
              outcome.mode, len(outcome.text), outcome.source,
              f" ({outcome.reason})" if outcome.reason else "")
    if track and outcome.text:
        # The first answer last: the tracker follows typing-through from the latest one.
        outcome.alternative_ids = [
            _track(ls, snapshot, offset, position, dataclasses.replace(outcome, text=text),
                   explicit, started, rank) for rank, text in enumerate(outcome.alternatives, 1)]
        outcome.id = _track(ls, snapshot, offset, position, outcome, explicit, started)
    else:
        outcome.alternative_ids = [""] * len(outcome.alternatives)
    return _Answer(outcome, snapshot, offset,
                   _ends(outcome, snapshot, offset, position, ls.encoding))


def _track(ls: CopilotServer, snapshot: Snapshot, offset: int, position: types.Position,
           outcome: Outcome, explicit: bool, started: float, rank: int = 0) -> str:
    info = ls.main_engine.info
    experiment = ls.completer.experiment
    route = outcome.route or "main"  # "main" or the model another route names
    model = route if route != "main" else info.model if info else ""
    arm = experiment if experiment and outcome.arm else None
    keys = keys_for(model, outcome.template, route, "explicit" if explicit else outcome.mode,
                    snapshot.language_id, (time.perf_counter() - started) * 1000,
                    arm.label if arm else "", outcome.arm,
                    arm.cluster(snapshot.uri, position.line) if arm else "",
                    items=1 + len(outcome.alternatives))
    return ls.acceptance.suggested(uri=snapshot.uri, line=position.line,
                                   character=position.character, text=outcome.text,
                                   data=snapshot.data, offset=offset, keys=keys,
                                   continued=outcome.source == "typed_through", rank=rank)


async def inline_completion(
    ls: CopilotServer, params: types.InlineCompletionParams
) -> types.InlineCompletionList:
    started = time.perf_counter()
    ls.telemetry.count("requests")
    explicit = params.context.trigger_kind == types.InlineCompletionTriggerKind.Invoked
    answer = await _complete(ls, params.text_document.uri, params.position, explicit,
                             track=True)
    ls.telemetry.answered(started)
    gc_timing.collect_young_soon()  # after the answer is out, not in the next request
    if answer is None or not answer.outcome.text:
        return types.InlineCompletionList(items=[])
    outcome = answer.outcome
    # Explicit requests may carry alternatives (maxSuggestions): one item each, in order,
    # each with the id its feedback names.
    return types.InlineCompletionList(items=[
        types.InlineCompletionItem(
            insert_text=text,
            range=types.Range(params.position, end),
            command=types.Command(
                title="lsp-copilot: accepted",
                command=ACCEPT_COMMAND,
                arguments=[{
                    "uri": params.text_document.uri,
                    "position": {"line": params.position.line,
                                 "character": params.position.character},
                    "text": text,
                    "id": item_id,
                }],
            ),
        )
        for (text, end), item_id in zip(answer.items(),
                                        (outcome.id, *outcome.alternative_ids), strict=True)
    ])


def _word_before(data: bytes, offset: int) -> str:
    """The ASCII identifier that ends at ``offset`` in the buffer: its length is the same
    in every position encoding."""
    start = offset
    while start > 0 and (data[start - 1:start].isalnum() or data[start - 1:start] == b"_"):
        start -= 1  # (bytes.isalnum is ASCII only)
    return data[start:offset].decode("ascii")


def _explicit(params: types.CompletionParams) -> bool:
    """triggerKind Invoked (Emacs' completion-at-point, a completion key): the user asked,
    as an inline request's Invoked says. A trigger character, a request again as the user
    types (isIncomplete) or no context at all: automatic."""
    return (params.context is not None
            and params.context.trigger_kind == types.CompletionTriggerKind.Invoked)


async def completion(ls: CopilotServer, params: types.CompletionParams) -> types.CompletionList:
    """An item per suggestion, for clients without inline completion (eglot).

    Each item's ``textEdit`` replaces the word before the cursor, as the buffer has it,
    with that word and the suggestion (and the closers right of the cursor that the
    suggestion writes again): clients filter items by that word. The word comes
    from the request's snapshot, never from the prompt (which ends before a typed space)
    nor from an earlier request's answer (the cache, typing-through, a shared generation).
    """
    started = time.perf_counter()
    ls.telemetry.count("requests")
    answer = await _complete(ls, params.text_document.uri, params.position, _explicit(params))
    ls.telemetry.answered(started)
    if answer is None or not answer.outcome.text:
        return types.CompletionList(is_incomplete=True, items=[])
    outcome = answer.outcome
    pos = params.position
    word = _word_before(answer.snapshot.data, answer.offset)
    start = types.Position(pos.line, pos.character - len(word))
    # (Alternatives are offered only when the safety check has nothing to say.)
    warned = "lsp-copilot" + "".join(f" (warning: {f.rule})" for f in outcome.safety)
    return types.CompletionList(is_incomplete=True, items=[
        _item(word + text, types.Range(start, end), "lsp-copilot" if rank else warned, rank)
        for rank, (text, end) in enumerate(answer.items())])


def _item(new_text: str, where: types.Range, detail: str, rank: int) -> types.CompletionItem:
    """One suggestion as a completion item, in the order the answer gives them."""
    first_line = new_text.split("\n", 1)[0].strip() or new_text.strip().split("\n", 1)[0]
    return types.CompletionItem(
        label=first_line[:80] + ("…" if len(first_line) > 80 or "\n" in new_text.strip() else ""),
        kind=types.CompletionItemKind.Text,
        detail=detail,
        documentation=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value=f"```\n{new_text}\n```"),
        filter_text=new_text,
        sort_text=f"{rank:02d}",
        preselect=rank == 0,
        text_edit=types.TextEdit(range=where, new_text=new_text),
        insert_text_format=types.InsertTextFormat.PlainText,
    )
