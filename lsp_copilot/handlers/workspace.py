"""Workspace index upkeep: build it after `initialized`, follow saves and file events.

The index is built in a background thread (never on the event loop); these handlers only
queue work for it.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lsprotocol import types

from lsp_copilot.context.index import WorkspaceIndex
from lsp_copilot.context.workspace import uri_to_path
from lsp_copilot.server import CopilotServer

log = logging.getLogger(__name__)


def _root(ls: CopilotServer) -> str | None:
    folders = list(ls.workspace.folders.values())
    if folders:
        path = uri_to_path(folders[0].uri)
        return str(path) if path is not None else None
    root: str | None = ls.workspace.root_path
    return root


def start_index(ls: CopilotServer) -> None:
    """Index the (first) workspace folder in a background thread.

    File events come from clients that watch files themselves (vscode-languageclient's
    ``synchronize.fileEvents``); the server registers no watchers: a dynamic registration
    request is one more thing a minimal client can choke on, and didSave covers edits made
    in the editor.
    """
    root = _root(ls)
    if root is None or ls.sources.index is not None:
        return
    if Path(root).resolve() in (Path.home().resolve(), Path("/")):
        log.info("not indexing %s: an editor started outside any project", root)
        return
    index = WorkspaceIndex(Path(root))
    index.private = ls.privacy.reason
    ls.sources.index = index
    index.start()


def did_save(ls: CopilotServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.sources.reindex(params.text_document.uri)


def did_change_watched_files(
    ls: CopilotServer, params: types.DidChangeWatchedFilesParams
) -> None:
    for change in params.changes:
        if change.type == types.FileChangeType.Deleted:
            ls.sources.removed(change.uri)
        else:
            ls.sources.reindex(change.uri)
