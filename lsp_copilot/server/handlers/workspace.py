"""Workspace index upkeep: one index per workspace folder, built after `initialized`,
following folder changes, saves and file events.

Indexes are built in background threads (never on the event loop); these handlers only
queue work for them.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lsprotocol import types

from lsp_copilot.context.index.workspace import uri_to_path
from lsp_copilot.context.index.workspace_index import WorkspaceIndex, watched_globs
from lsp_copilot.server.state import CopilotServer

log = logging.getLogger(__name__)
WATCHERS_ID = "lsp-copilot-watched-files"


def _roots(ls: CopilotServer) -> list[Path]:
    """Every workspace folder, else the root path of a client without folders."""
    paths = [uri_to_path(folder.uri) for folder in ls.workspace.folders.values()]
    if not paths and ls.workspace.root_path:
        paths = [Path(ls.workspace.root_path)]
    return [p for p in paths if p is not None]


def _add_root(ls: CopilotServer, root: Path) -> None:
    if root.resolve() in (Path.home().resolve(), Path("/")):
        log.info("not indexing %s: an editor started outside any project", root)
        return
    index = WorkspaceIndex(root)
    if ls.privacy.ignores is not None:  # its `.lspcopilotignore` counts from now on
        ls.privacy.ignores.add(root)
    index.private = ls.privacy.reason
    if ls.context_workspace.add_index(index):
        index.start()


def start_index(ls: CopilotServer) -> None:
    """Index each workspace folder in a background thread, and ask the client to report
    changes to the files the index reads."""
    if ls.context_workspace.indexes():
        return
    for root in _roots(ls):
        _add_root(ls, root)
    register_watchers(ls)


def did_change_workspace_folders(
    ls: CopilotServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    for folder in params.event.removed:
        path = uri_to_path(folder.uri)
        if path is not None and ls.context_workspace.remove_index(path) is not None:
            log.info("stopped indexing %s", path)
        if path is not None and ls.privacy.ignores is not None:
            ls.privacy.ignores.remove(path)
    for folder in params.event.added:
        path = uri_to_path(folder.uri)
        if path is not None:
            _add_root(ls, path)


def register_watchers(ls: CopilotServer) -> None:
    """Register ``workspace/didChangeWatchedFiles`` for the indexed languages, when the
    client can take a dynamic registration. A refusal is logged, never fatal: didSave
    still keeps edited files current."""
    caps = ls.client_capabilities.workspace
    watched = caps.did_change_watched_files if caps is not None else None
    if watched is None or not watched.dynamic_registration or not watched_globs():
        return
    registration = types.Registration(
        id=WATCHERS_ID,
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern=glob) for glob in watched_globs()]),
    )

    async def register() -> None:
        try:
            await ls.client_register_capability_async(
                types.RegistrationParams(registrations=[registration]))
            ls.telemetry.count("watchers_registered")
        except Exception as exc:
            log.warning("the client refused the file watchers (%s); saves still reindex", exc)

    ls.spawn(register())


def did_save(ls: CopilotServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.context_workspace.reindex(params.text_document.uri)


def did_change_watched_files(
    ls: CopilotServer, params: types.DidChangeWatchedFilesParams
) -> None:
    for change in params.changes:
        if change.type == types.FileChangeType.Deleted:
            ls.context_workspace.removed(change.uri)
        else:
            ls.context_workspace.reindex(change.uri)
