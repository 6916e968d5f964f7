"""Document sync: edits update the store synchronously; nothing here awaits."""

from __future__ import annotations

import logging

from lsprotocol import types

from lsp_copilot.documents.buffer import PositionError
from lsp_copilot.documents.store import DocumentError
from lsp_copilot.server.state import CopilotServer

log = logging.getLogger(__name__)


def _tell_once(ls: CopilotServer, uri: str) -> None:
    if uri in ls.told_unparsed:
        return
    reason = ls.store.unparsed_reason(uri)  # cheap: didChange runs on every keystroke
    if reason is not None:
        ls.told_unparsed.add(uri)
        why = "is binary" if reason == "binary" else (
            f"is larger than maxDocumentBytes ({ls.hub.settings.max_document_bytes} bytes)")
        ls.show(types.MessageType.Info, f"lsp-copilot: {uri} {why}; no completions for it.")


def did_open(ls: CopilotServer, params: types.DidOpenTextDocumentParams) -> None:
    doc = params.text_document
    ls.store.open(doc.uri, doc.language_id, doc.version, doc.text)
    ls.told_out_of_sync.discard(doc.uri)
    _tell_once(ls, doc.uri)
    ls.warmer.opened(ls.store.snapshot(doc.uri))  # background, lowest priority


def did_change(ls: CopilotServer, params: types.DidChangeTextDocumentParams) -> None:
    changes: list[tuple[tuple[int, int, int, int] | None, str]] = []
    for change in params.content_changes:
        if isinstance(change, types.TextDocumentContentChangePartial):
            r = change.range
            changes.append(((r.start.line, r.start.character, r.end.line, r.end.character),
                            change.text))
        else:
            changes.append((None, change.text))
    uri = params.text_document.uri
    try:
        ls.store.change(uri, params.text_document.version, changes, ls.encoding)
    except (DocumentError, PositionError) as exc:
        log.warning("didChange for %s not applied: %s", uri, exc)
        if uri in ls.store and uri not in ls.told_out_of_sync:
            ls.told_out_of_sync.add(uri)
            ls.show(types.MessageType.Warning,
                    f"lsp-copilot: {uri} is out of sync with the editor ({exc}); "
                    "completions for it resume when the file is reopened.")
        return
    line = changes[-1][0][0] if changes and changes[-1][0] is not None else None
    data = ls.store.buffer(uri).data
    ls.context_workspace.edited(uri, data, line)  # recency, index (off the loop)
    # A suggestion typed through, or left; one change inserting a part of the suggestion
    # on screen is a partial accept (Ctrl+Right in VS Code, which reports none itself).
    inserted = len(changes) == 1 and changes[0][0] is not None and (
        changes[0][0][:2] == changes[0][0][2:]) and bool(changes[0][1])
    for accept in ls.acceptance.changed(uri, data, inserted):
        if accept.revealed:
            ls.telemetry.count("shown")
        ls.telemetry.count("partial_accepts")
        ls.telemetry.count("accepted_chars", accept.chars)
        ls.completer.prefer(uri, accept.suggestion.text.decode("utf-8", "surrogatepass"))
    _tell_once(ls, uri)


def did_close(ls: CopilotServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.store.close(uri)
    ls.completer.forget(uri)
    ls.acceptance.closed(uri)
    ls.told_unparsed.discard(uri)
    ls.told_out_of_sync.discard(uri)
