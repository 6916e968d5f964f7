"""initialize / initialized / shutdown / exit and settings changes."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from typing import Any

from lsprotocol import types

from lsp_copilot import gc_timing
from lsp_copilot.engine.device import detect
from lsp_copilot.engine.manager import LoadResult
from lsp_copilot.engine.validate import settings_problems
from lsp_copilot.paths import anchored
from lsp_copilot.process import exit_now
from lsp_copilot.server.handlers import workspace
from lsp_copilot.server.state import CopilotServer
from lsp_copilot.settings.core import parse_settings

log = logging.getLogger(__name__)


PATH_SETTINGS = ("cache_dir", "log_file", "acceptance_file", "remote_ca_bundle",
                 "remote_tokenizer")
MODEL_SETTINGS = ("model", "speculative_model")
"""A folder, or a preset or hub name: only a relative path that exists is anchored."""


def _anchored_paths(settings: object) -> dict[str, Any]:
    """Relative paths keep the meaning they had in the folder the server started in (it
    works in a neutral folder: paths.leave_launch_folder)."""
    changes = {name: anchored(getattr(settings, name)) for name in PATH_SETTINGS}
    return changes | {name: anchored(getattr(settings, name), only_existing=True)
                      for name in MODEL_SETTINGS}


def _apply_settings(ls: CopilotServer, raw: Any) -> bool:
    """Merge settings; report bad values; return whether the engine must restart."""
    info = ls.main_engine.info
    device = info.device if info is not None else None
    before = ls.hub.settings.engine_key(device)
    settings, problems = parse_settings(raw, ls.hub.settings)
    settings = dataclasses.replace(settings, **_anchored_paths(settings))
    if settings.engine_backend != "remote":  # a deployment has its own engine settings
        problems += settings_problems(settings)  # combinations the engine load refuses
    ls.hub.update(settings)  # each group's subscribers hear of its change
    problems += ls.apply_experiment()
    for problem in problems:
        ls.show(types.MessageType.Warning, f"lsp-copilot: {problem}")
    return settings.engine_key(device) != before


def initialize(ls: CopilotServer, params: types.InitializeParams) -> None:
    if ls.logs is not None:  # from now on warnings reach the editor's log pane too
        ls.editor_log.bind(asyncio.get_running_loop())
        logging.getLogger().addHandler(ls.editor_log)
    _apply_settings(ls, params.initialization_options)
    ls.apply_settings_now()
    folders = params.workspace_folders or []
    workspace = params.root_uri or (folders[0].uri if folders else None) or "no-workspace"
    ls.open_cache(workspace)


async def _load_engine(
    ls: CopilotServer, pending: asyncio.Task[LoadResult] | None = None
) -> None:
    """Load the engine with work-done progress; a failure is shown, never raised."""
    token: str | None = None
    caps = ls.client_capabilities.window
    if caps is not None and caps.work_done_progress:
        token = f"lsp-copilot-load-{uuid.uuid4().hex[:8]}"
        try:
            await ls.work_done_progress.create_async(token)
            ls.work_done_progress.begin(
                token, types.WorkDoneProgressBegin(title="lsp-copilot", message="starting engine")
            )
        except Exception:
            log.warning("client refused a progress token; loading without progress")
            token = None

    loop = asyncio.get_running_loop()

    def report(message: str) -> None:  # called from the loading thread
        log.info("engine: %s", message)
        if token is not None:
            loop.call_soon_threadsafe(
                ls.work_done_progress.report, token, types.WorkDoneProgressReport(message=message)
            )

    if pending is None:
        device = detect(ls.hub.settings.device).device
        setup = ls.hub.settings.engine_setup
        ls.routes.expect(setup, device)
        typing_first = (ls.hub.settings.engine_load_order == "typing-first"
                        and ls.routes.typing_first() and ls.hub.settings.engine_backend != "remote")
        if typing_first:
            # The engine that answers typing loads first (one load at a time: two would
            # share the cores), so a cold start suggests as soon as the small one is up.
            await ls.routes.start(setup, device, report)
            await ls.routes.loaded()
        result = await ls.main_engine.start(setup, report)
        if not typing_first and (result.ok or ls.hub.settings.engine_backend == "remote"):
            # Other routes' engines load after the main one; until one is ready its
            # requests go to the main one. (A remote main engine's fallbacks are
            # embedded engines: they load here too.) The progress shown has ended: the log.
            await ls.routes.start(setup, device,
                                  lambda message: log.info("engine: %s", message))
    else:  # a load already under way (the retry command): report its progress
        ls.main_engine.report = report
        result = await pending
    if token is not None:
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=result.message))
    if result.ok:
        gc_timing.settle()  # before the first completion: the start-up's objects are long-lived
        ls.window_log_message(
            types.LogMessageParams(
                type=types.MessageType.Info, message=f"lsp-copilot: engine {result.message}"
            )
        )
    elif ls.main_engine.state == "failed":
        ls.show(
            types.MessageType.Error,
            f"lsp-copilot: the engine could not start: {result.message} "
            "Completions stay off until it is fixed.",
        )


def _spawn(ls: CopilotServer, pending: asyncio.Task[LoadResult] | None = None) -> None:
    if pending is None and ls.engine_load is not None and not ls.engine_load.done():
        return  # a load is under way (a settings change right after `initialized`)
    ls.engine_load = ls.spawn(_load_engine(ls, pending))


def initialized(ls: CopilotServer, params: types.InitializedParams) -> None:
    workspace.start_index(ls)  # background thread: the context engine's workspace index
    if ls.hub.settings.enable:  # disabled: keep the GPU/RAM free until the user enables it
        _spawn(ls)


async def did_change_configuration(
    ls: CopilotServer, params: types.DidChangeConfigurationParams
) -> None:
    engine_changed = _apply_settings(ls, params.settings)
    if not ls.hub.settings.enable:
        return
    if ls.main_engine.state in ("idle", "stopped"):
        _spawn(ls)
    elif engine_changed:
        ls.show(types.MessageType.Info, "lsp-copilot: engine settings changed, restarting it")
        await ls.main_engine.shutdown()
        await ls.routes.shutdown()
        _spawn(ls)
    elif ls.main_engine.state == "ready" or (
            ls.hub.settings.engine_backend == "remote" and ls.main_engine.state != "loading"):
        # routes may have changed: load or stop theirs (a load under way starts them itself;
        # a remote main engine's fallbacks load even while it is out of reach)
        settings = ls.hub.settings
        await ls.routes.start(settings.engine_setup, detect(settings.device).device, log.info)


def restart_engine(ls: CopilotServer, *args: Any) -> dict[str, Any]:
    """``lspCopilot.restartEngine``: the user's retry after the engine stayed down (or a
    restart of a working one). Answers at once; the load reports progress as at start."""
    if not ls.hub.settings.enable:
        return {"state": ls.main_engine.state, "message": "completions are disabled (`enable`)"}
    if ls.main_engine.state == "loading":
        return {"state": "loading", "message": "the engine is already loading"}
    _spawn(ls, ls.main_engine.retry())  # the state is "loading" from here on
    return {"state": "loading", "message": "restarting the engine"}


async def shutdown(ls: CopilotServer, params: None) -> None:
    logging.getLogger().removeHandler(ls.editor_log)  # the client stops listening
    ls.scheduler.cancel_all()
    ls.acceptance.flush()  # what is still on screen gets its outcome (before a slow stop)
    ls.acceptance.store.close()
    await ls.main_engine.shutdown()
    await ls.routes.shutdown()
    if ls.cache is not None:
        ls.cache.close()


def exit_(ls: CopilotServer, params: None) -> None:
    """Leave now: without waiting for a loading engine, and with no child left behind."""
    log.info("exit received")
    exit_now(0 if ls.protocol._shutdown else 1)
