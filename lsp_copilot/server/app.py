"""The language server: its state, its protocol fixes, and the one place features are registered."""

from __future__ import annotations

import asyncio
import logging
import re
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import cattrs
from lsprotocol import types
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from lsp_copilot import __version__
from lsp_copilot.acceptance import experiment
from lsp_copilot.acceptance.store import OutcomeStore
from lsp_copilot.acceptance.tracker import Tracker
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.documents.buffer import Encoding
from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.engine.routes import Routes
from lsp_copilot.logs import EditorLog, Logs, request_scope
from lsp_copilot.pipeline.cache import CompletionCache, cache_root, workspace_folder
from lsp_copilot.pipeline.completer import Completer
from lsp_copilot.pipeline.scheduling import Scheduler
from lsp_copilot.pipeline.warmup import Warmer
from lsp_copilot.privacy import Privacy
from lsp_copilot.server import protocol
from lsp_copilot.settings.core import Settings
from lsp_copilot.telemetry import Telemetry

log = logging.getLogger(__name__)

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


class CopilotServer(LanguageServer):
    """Holds the state every handler reads; handlers hold none."""

    def __init__(self, engines: EngineManager | None = None, logs: Logs | None = None) -> None:
        super().__init__(
            "lsp-copilot",
            __version__,
            protocol_cls=CopilotProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.settings = Settings()
        self.encoding: Encoding = "utf-16"
        self.telemetry = Telemetry()
        self.store = DocumentStore(self.settings.max_document_bytes)
        self.engines = engines or EngineManager()
        self.engines.telemetry = self.telemetry
        self.engines.notify = self._engine_notice
        self.cache: CompletionCache | None = None
        self.routes = Routes(self.engines)
        self.engine_load: asyncio.Task[None] | None = None  # the engines' load under way
        self.completer = Completer(
            self.engines, self.telemetry, lambda: self.settings, lambda: self.cache,
            routes=self.routes,
        )
        self.scheduler = Scheduler(self.telemetry)
        self.told_once: set[str | tuple[str, str]] = set()  # uris (or (uri, topic)) told
        # What the context engine reads beyond the buffer: the workspace index (built after
        # `initialized`), the open buffers, recent edits.
        self.privacy = Privacy()
        # Open buffers that look like secrets never reach another file's prompt.
        self.sources = Workspace(documents=lambda: [
            (uri, buf.text) for uri in self.store.uris()
            if not self.completer.is_private(
                uri, self.store.version(uri), (buf := self.store.buffer(uri)).data)])
        self.completer.workspace = self.sources
        # What became of each suggestion shown, kept across restarts (`lsp-copilot stats`).
        self.acceptance = Tracker(OutcomeStore(max_rows=self.settings.acceptance_max_rows))
        self.warmer = Warmer(self.completer, self.telemetry, lambda: self.settings)
        # Where this process logs (None in tests that build a server in-process), and the
        # handler that also sends warnings to the editor once it is connected.
        self.logs = logs
        self.editor_log = EditorLog(self._log_to_editor)

    def _log_to_editor(self, level: int, message: str) -> None:
        kind = types.MessageType.Error if level >= logging.ERROR else types.MessageType.Warning
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def apply_log_settings(self) -> None:
        """``logFile`` and ``logLevel``: a file that cannot be opened keeps the old one."""
        if self.logs is None:
            return
        s = self.settings
        if s.log_level:
            self.logs.set_level(s.log_level)
        path = Path(s.log_file).expanduser() if s.log_file else None
        if self.logs.use_file(path) is None:
            log.warning("logFile %r cannot be written; logging to %s", s.log_file,
                        self.logs.path)

    def apply_privacy(self) -> None:
        """Compile the secret rules of the current settings for every consumer."""
        s = self.settings
        self.privacy = Privacy(s.secret_file_patterns, s.secret_content_patterns,
                               s.excluded_folders)
        self.completer.set_privacy(self.privacy)
        for index in self.sources.indexes():  # one per workspace folder
            index.private = self.privacy.reason

    def apply_experiment(self) -> list[str]:
        """Build the `experiment` arms from the current settings; one message per problem."""
        s = self.settings
        self.acceptance.store.use(
            Path(s.acceptance_file).expanduser() if s.acceptance_file else None,
            s.acceptance_max_rows)
        self.completer.experiment, problems = experiment.build(self.settings)
        return problems

    def show(self, kind: types.MessageType, message: str) -> None:
        log.log(logging.ERROR if kind == types.MessageType.Error else logging.INFO, message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A message we could not handle (invalid JSON, bad notification params) is logged
        and skipped; pygls would pop up a message for each one, so tell the user once."""
        if source is FeatureRequestError:  # a request: its error response already went out
            return
        log.warning("skipped a message the server could not handle: %s", error)
        if "server-error" not in self.told_once:
            self.told_once.add("server-error")
            self.show(types.MessageType.Warning, "lsp-copilot: the editor sent a message "
                      "the server could not handle; it was skipped (details in the log).")

    def _engine_notice(self, level: str, message: str) -> None:
        """The supervisor's news: trouble pops up (showMessage), recovery goes to the log,
        except the end of a fallback the user was shown ("back": an info popup)."""
        if level == "back":
            self.show(types.MessageType.Info, message)
        elif level == "info":
            log.info(message)
            self.window_log_message(
                types.LogMessageParams(type=types.MessageType.Info, message=message))
        else:
            kind = types.MessageType.Error if level == "error" else types.MessageType.Warning
            self.show(kind, message)

    def open_cache(self, workspace: str) -> None:
        """One persistent cache per workspace: no entry crosses workspaces."""
        if self.cache is not None:
            self.cache.close()
        s = self.settings
        root = Path(s.cache_dir).expanduser() if s.cache_dir else cache_root()
        self.cache = CompletionCache(
            workspace_folder(root, workspace),
            memory_entries=s.cache_memory_entries,
            disk_bytes=s.cache_max_mb * 1024 * 1024,
            ttl_seconds=s.cache_ttl_seconds,
        )

    def stats(self) -> dict[str, Any]:
        out = self.telemetry.snapshot()
        out.update({"spec_draft_tokens": 0, "spec_accepted_tokens": 0})
        for manager in self.routes.managers():  # every engine's counters, summed
            for name, value in manager.stats().items():
                out[name] = out.get(name, 0) + value
        out["queue_depth"] = self.completer.queue_depth
        out["outcomes"] = self.acceptance.summary()
        out["documents"] = len(self.store)
        indexes = self.sources.indexes()  # one per workspace folder
        out["index_roots"] = [str(index.root) for index in indexes]
        out["index_files"] = sum(len(index) for index in indexes)
        out["engine_state"] = self.engines.state
        out["engine_error"] = self.engines.error
        out["engine_load_seconds"] = self.engines.load_seconds
        info = self.engines.info
        out["engine"] = info.as_dict() if info else None
        out["routes"] = self.routes.stats()
        return out


def create_server(
    engines: EngineManager | None = None, logs: Logs | None = None
) -> CopilotServer:
    """Build the server and register every feature: the only place that does."""
    from lsp_copilot.server.handlers import (
        completion,
        documents,
        feedback,
        lifecycle,
        stats,
        workspace,
    )

    server = CopilotServer(engines, logs)
    server.feature(types.INITIALIZE)(lifecycle.initialize)
    server.feature(types.INITIALIZED)(lifecycle.initialized)
    server.feature(types.SHUTDOWN)(lifecycle.shutdown)
    server.feature(types.EXIT)(lifecycle.exit_)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(lifecycle.did_change_configuration)
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(documents.did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(documents.did_change)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(documents.did_close)
    server.feature(types.TEXT_DOCUMENT_DID_SAVE)(workspace.did_save)
    server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(workspace.did_change_watched_files)
    server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(
        workspace.did_change_workspace_folders)
    server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())(
        completion.inline_completion
    )
    server.feature(
        types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions(trigger_characters=[".", "("])
    )(completion.completion)
    server.feature(protocol.STATS)(stats.stats)
    server.feature(protocol.DID_SHOW)(feedback.did_show)
    server.feature(protocol.DID_ACCEPT)(feedback.did_accept)
    server.feature(protocol.DID_REJECT)(feedback.did_reject)
    server.command(protocol.ACCEPT_COMMAND)(feedback.accept_command)
    server.command(protocol.RESTART_COMMAND)(lifecycle.restart_engine)
    return server
