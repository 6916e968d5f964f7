"""The language server: its protocol fixes, and the one place features are registered."""

from __future__ import annotations

import logging
import os
import re
import traceback
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import cattrs
from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, lsp_method

from lsp_copilot.documents.buffer import Encoding
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.logs import Logs, request_scope
from lsp_copilot.server import protocol
from lsp_copilot.server.handlers import (
    completion,
    documents,
    feedback,
    lifecycle,
    stats,
    workspace,
)
from lsp_copilot.server.state import CopilotServer

log = logging.getLogger(__name__)

ABLATABLE = ("supersede", "continuation")
"""Mechanisms without a setting that ``LSP_COPILOT_ABLATE`` (comma-separated) turns off:
for `bench typing --ablate`, which measures what each mechanism pays for."""


def ablated() -> frozenset[str]:
    """The mechanisms ``LSP_COPILOT_ABLATE`` names (unknown names are said and ignored)."""
    names = frozenset(n.strip() for n in os.environ.get("LSP_COPILOT_ABLATE", "").split(",")
                      if n.strip())
    if names - set(ABLATABLE):
        log.warning("LSP_COPILOT_ABLATE: ignoring %s (known: %s)",
                    ", ".join(sorted(names - set(ABLATABLE))), ", ".join(ABLATABLE))
    if names & set(ABLATABLE):
        log.warning("LSP_COPILOT_ABLATE: %s off (a measurement, not a setting)",
                    ", ".join(sorted(names & set(ABLATABLE))))
    return names & frozenset(ABLATABLE)


def choose_encoding(capabilities: types.ClientCapabilities) -> Encoding:
    """UTF-8 when the client offers it (no conversion at all), else LSP's mandatory UTF-16."""
    general = capabilities.general
    offered = (general.position_encodings if general else None) or []
    return "utf-8" if types.PositionEncodingKind.Utf8 in offered else "utf-16"


class CopilotProtocol(LanguageServerProtocol):
    """pygls' protocol with three changes the editors need.

    - Requests whose params fail to deserialize get InvalidParams naming the field; pygls
      would send nothing, and the client would wait forever.
    - The position encoding is ours (UTF-8 when offered), not the client's first choice.
    - Documents live in our own store (bytes + tree); pygls' copy is skipped.
    """

    _server: CopilotServer

    def _handle_request(self, msg_id: Any, method_name: str, params: Any) -> None:
        # The handler's task copies the context here: its log lines, and those of the
        # tasks it starts, carry the request's id. Reset after, so that the notifications
        # handled next are not tagged with it.
        with request_scope(msg_id):
            super()._handle_request(msg_id, method_name, params)

    def structure_message(self, data: dict[str, Any]) -> Any:
        if "jsonrpc" in data and "method" in data and "params" not in data:
            data["params"] = None  # JSON-RPC lets a request omit params; pygls requires them
        try:
            return super().structure_message(data)
        except Exception as exc:
            cause = exc.__cause__ or exc
            detail = "; ".join(cattrs.transform_error(cause)) if isinstance(
                cause, cattrs.ClassValidationError) else str(cause)
            # Name fields as the client spelled them: $.params.text_document -> textDocument.
            detail = re.sub(r"(?<=[a-z])_([a-z])", lambda m: m.group(1).upper(), detail)
            method = data.get("method", "?")
            message = f"invalid params for {method}: {detail}"
            log.warning("%s\n%s", message, traceback.format_exc(limit=3))
            if "id" in data and "method" in data:
                self._send_response(
                    data["id"],
                    error=types.ResponseError(
                        code=types.ErrorCodes.InvalidParams, message=message
                    ),
                )
            return SimpleNamespace(jsonrpc="skipped")  # handle_message ignores it

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        self._server.encoding = choose_encoding(params.capabilities)
        result = yield from super().lsp_initialize(params)
        result.capabilities.position_encoding = self._server.encoding
        return result

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> Any:
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None


def create_server(
    main_engine: EngineManager | None = None, logs: Logs | None = None
) -> CopilotServer:
    """Build the server and register every feature: the only place that does."""
    server = CopilotServer(CopilotProtocol, main_engine, logs, off=ablated())
    features: list[tuple[str, Callable[..., Any], Any]] = [
        (types.INITIALIZE, lifecycle.initialize, None),
        (types.INITIALIZED, lifecycle.initialized, None),
        (types.SHUTDOWN, lifecycle.shutdown, None),
        (types.EXIT, lifecycle.exit_, None),
        (types.WORKSPACE_DID_CHANGE_CONFIGURATION, lifecycle.did_change_configuration, None),
        (types.TEXT_DOCUMENT_DID_OPEN, documents.did_open, None),
        (types.TEXT_DOCUMENT_DID_CHANGE, documents.did_change, None),
        (types.TEXT_DOCUMENT_DID_CLOSE, documents.did_close, None),
        (types.TEXT_DOCUMENT_DID_SAVE, workspace.did_save, None),
        (types.WORKSPACE_DID_CHANGE_WATCHED_FILES, workspace.did_change_watched_files, None),
        (types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, workspace.did_change_workspace_folders,
         None),
        (types.TEXT_DOCUMENT_INLINE_COMPLETION, completion.inline_completion,
         types.InlineCompletionOptions()),
        (types.TEXT_DOCUMENT_COMPLETION, completion.completion,
         types.CompletionOptions(trigger_characters=[".", "("])),
        (protocol.STATS, stats.stats, None),
        (protocol.DID_SHOW, feedback.did_show, None),
        (protocol.DID_ACCEPT, feedback.did_accept, None),
        (protocol.DID_REJECT, feedback.did_reject, None),
    ]
    for method, handler, options in features:
        server.feature(method, options)(handler)
    server.command(protocol.ACCEPT_COMMAND)(feedback.accept_command)
    server.command(protocol.RESTART_COMMAND)(lifecycle.restart_engine)
    return server
