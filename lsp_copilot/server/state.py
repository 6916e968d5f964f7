"""The server's state: one object that every handler receives and none of them keeps.

It owns what lives as long as the server does (settings, documents, the engines, the
completer and its helpers, the caches, the tasks it started); ``app.create_server`` builds
it and registers the handlers on it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import FeatureRequestError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from lsp_copilot import __version__
from lsp_copilot.acceptance import experiment
from lsp_copilot.acceptance.store import OutcomeStore
from lsp_copilot.acceptance.tracker import Tracker
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.documents.buffer import Encoding
from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.engine.factory import EngineFactory
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.engine.routes import Routes
from lsp_copilot.logs import EditorLog, Logs, source_text_logging
from lsp_copilot.pipeline.completer import Completer
from lsp_copilot.pipeline.completion_cache import CompletionCache, cache_root, workspace_folder
from lsp_copilot.pipeline.scheduling import Scheduler
from lsp_copilot.pipeline.warmup import Warmer
from lsp_copilot.privacy import Privacy
from lsp_copilot.privacy.ignore import RepoIgnores
from lsp_copilot.server.protocol import RESTART_COMMAND
from lsp_copilot.settings.arms import experiment_arms
from lsp_copilot.settings.completion import CompletionSettings
from lsp_copilot.settings.general import GeneralSettings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.settings.logs_and_records import RecordsSettings
from lsp_copilot.settings.privacy import PrivacySettings
from lsp_copilot.settings.supervision import SupervisionSettings
from lsp_copilot.telemetry import Telemetry
from lsp_copilot.tokens import TokenCounters

log = logging.getLogger(__name__)


class CopilotServer(LanguageServer):
    """Holds the state every handler reads; handlers hold none."""

    def __init__(self, protocol_cls: type[LanguageServerProtocol],
                 main_engine: EngineManager | None = None, logs: Logs | None = None,
                 off: frozenset[str] = frozenset()) -> None:
        """``off``: mechanisms a measurement turned off (``app.ablated``)."""
        super().__init__(
            "lsp-copilot",
            __version__,
            protocol_cls=protocol_cls,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        # The settings, delivered by group to whoever subscribed to one (settings/hub.py).
        self.hub = SettingsHub()
        self.encoding: Encoding = "utf-16"
        self.telemetry = Telemetry()
        self.store = DocumentStore(
            self.hub.on_change(GeneralSettings, self._use_general).max_document_bytes)
        # The token counters every engine of this server counts with (loaded once each).
        self.token_counters = TokenCounters()
        # The engine of the "main" route; the engines other routes name are in `routes`.
        self.main_engine = main_engine or self._engine_manager()
        self.main_engine.telemetry = self.telemetry
        self.main_engine.notify = self._engine_notice
        self.main_engine.retry_hint = f"Run the command `{RESTART_COMMAND}` (or restart the server)"
        self.hub.on_change(SupervisionSettings, self.main_engine.use_supervision)
        self.cache: CompletionCache | None = None
        self.routes = Routes(self.main_engine, self._engine_manager)
        self.engine_load: asyncio.Task[None] | None = None  # the engines' load under way
        self.completer = Completer(
            self.main_engine, self.telemetry, self.hub, lambda: self.cache,
            routes=self.routes, continuation="continuation" not in off,
        )
        self.scheduler = Scheduler(self.telemetry, supersede="supersede" not in off)
        # What the user was told once, so that it is not told on every keystroke:
        self.told_unparsed: set[str] = set()  # documents too large or binary to complete
        self.told_out_of_sync: set[str] = set()  # documents whose edits could not apply
        self.told_skipped_message = False  # a message from the editor that was skipped
        # What the context engine reads beyond the buffer (pygls' `workspace` is the LSP
        # one): the workspace index (built after `initialized`), the open buffers, recent
        # edits. Open buffers that look like secrets never reach another file's prompt.
        self.privacy = Privacy(ignores=RepoIgnores())  # `.lspcopilotignore` of each root
        self.completer.set_privacy(self.privacy)
        self.hub.on_change(PrivacySettings, self.apply_privacy)
        self.context_workspace = Workspace(documents=lambda: [
            (uri, buf.text) for uri in self.store.uris()
            if not self.completer.is_private(
                uri, self.store.version(uri), (buf := self.store.buffer(uri)).data)])
        self.completer.workspace = self.context_workspace
        # What became of each suggestion shown, kept across restarts (`lsp-copilot stats`).
        self.acceptance = Tracker(OutcomeStore(
            max_rows=self.hub.get(RecordsSettings).acceptance_max_rows))
        self.warmer = Warmer(self.completer, self.telemetry, self.hub)
        # Where this process logs (None in tests that build a server in-process), and the
        # handler that also sends warnings to the editor once it is connected.
        self.logs = logs
        self.hub.on_change(RecordsSettings, self.apply_log_settings)
        self.editor_log = EditorLog(self._log_to_editor)
        self._background: set[asyncio.Task[Any]] = set()

    def _engine_manager(self) -> EngineManager:
        """A manager for the engine of a route, loading with this server's counters."""
        return EngineManager(EngineFactory(self.token_counters))

    def spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``work`` in the background; the server keeps the task until it ends (the
        event loop holds only a weak reference)."""
        task = asyncio.ensure_future(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def _log_to_editor(self, level: int, message: str) -> None:
        kind = types.MessageType.Error if level >= logging.ERROR else types.MessageType.Warning
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def _use_general(self, general: GeneralSettings) -> None:
        self.store.max_parse_bytes = general.max_document_bytes

    def apply_settings_now(self) -> None:
        """Apply the settings that act on the process as they are now (pygls' message
        logging, the log file), whether or not they changed: the first ones a server gets."""
        self.apply_privacy(self.hub.get(PrivacySettings))
        self.apply_log_settings(self.hub.get(RecordsSettings))

    def apply_log_settings(self, s: RecordsSettings) -> None:
        """``logFile`` and ``logLevel``: a file that cannot be opened keeps the old one."""
        if self.logs is None:
            return
        if s.log_level:
            self.logs.set_level(s.log_level)
        path = Path(s.log_file).expanduser() if s.log_file else None
        if self.logs.use_file(path) is None:
            log.warning("logFile %r cannot be written; logging to %s", s.log_file,
                        self.logs.path)

    def apply_privacy(self, s: PrivacySettings) -> None:
        """Compile the secret rules of the current settings for every consumer; let debug
        logs show source text only if asked."""
        source_text_logging(s.log_source_text)
        self.privacy = Privacy(s.secret_file_patterns, s.secret_content_patterns,
                               s.excluded_folders, self.privacy.ignores)
        self.completer.set_privacy(self.privacy)
        for index in self.context_workspace.indexes():  # one per workspace folder
            index.private = self.privacy.reason

    def apply_experiment(self) -> list[str]:
        """Build the `experiment` arms from the current settings; one message per problem."""
        s = self.hub.settings
        self.acceptance.store.use(
            Path(s.acceptance_file).expanduser() if s.acceptance_file else None,
            s.acceptance_max_rows)
        arms, problems = experiment_arms(s)
        self.completer.experiment = experiment.build(arms, s.engine)
        # Arms that name a model or routes: their engines load beside the main one.
        self.routes.arms = self.completer.experiment.engines() if self.completer.experiment \
            else {}
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
        if not self.told_skipped_message:
            self.told_skipped_message = True
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
        s = self.hub.get(CompletionSettings)
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
        indexes = self.context_workspace.indexes()  # one per workspace folder
        out["index_roots"] = [str(index.root) for index in indexes]
        out["index_files"] = sum(len(index) for index in indexes)
        out["engine_state"] = self.main_engine.state
        out["engine_error"] = self.main_engine.error
        out["engine_load_seconds"] = self.main_engine.load_seconds
        info = self.main_engine.info
        out["engine"] = info.as_dict() if info else None
        out["routes"] = self.routes.stats()
        out["cpu"] = self.routes.cpu
        out["experiment_routes"] = self.routes.arm_stats()
        return out
