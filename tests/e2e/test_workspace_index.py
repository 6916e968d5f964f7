"""Workspace index through the real protocol (no engine): every folder of a multi-root
workspace is indexed, folder changes add and drop indexes, file watchers are registered
only with clients that can take a dynamic registration, and watched-file events reach the
index. The index is observed through `lspCopilot/stats` (`index_roots`, `index_files`)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import captured_exception_key

from tests.support.lsp import SERVER, plain, stats


def _folder(root: Path, name: str, files: dict[str, str]) -> Path:
    folder = root / name
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


async def _start(client: LanguageClient, folders: list[Path], dynamic: bool,
                 answer: bool = True) -> list[Any]:
    """Initialize with ``folders``; returns the list that collects registrations (with
    ``answer=False`` the client has no handler and answers MethodNotFound)."""
    registrations: list[Any] = []

    if answer:
        @client.feature(types.CLIENT_REGISTER_CAPABILITY)
        def on_register(params: types.RegistrationParams) -> None:
            registrations.extend(params.registrations)

    caps = client_capabilities("visual-studio-code")
    assert caps.workspace is not None and caps.workspace.did_change_watched_files is not None
    caps.workspace.did_change_watched_files.dynamic_registration = dynamic
    await client.initialize_session(types.InitializeParams(
        capabilities=caps,
        workspace_folders=[types.WorkspaceFolder(uri=f.as_uri(), name=f.name) for f in folders],
        initialization_options={"enable": False},
    ))
    return registrations


async def _until(client: LanguageClient, check: Any, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        s = await stats(client)
        if check(s) or time.monotonic() > deadline:
            return s
        await asyncio.sleep(0.2)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    yield
    await lsp_client.shutdown_session()


async def test_every_folder_indexed_and_folder_changes_followed(
    client: LanguageClient, tmp_path: Path
) -> None:
    a = _folder(tmp_path, "a", {"app.py": "def run():\n    pass\n", "lib/util.py": "X = 1\n"})
    b = _folder(tmp_path, "b", {"tool.py": "def tool():\n    pass\n"})
    c = _folder(tmp_path, "c", {"one.go": "package c\n", "two.go": "package c\n",
                                "three.ts": "export const x = 1;\n"})
    registrations = await _start(client, [a, b], dynamic=True)

    s = await _until(client, lambda s: s["index_files"] == 3)
    assert sorted(s["index_roots"]) == sorted([str(a.resolve()), str(b.resolve())])
    assert s["index_files"] == 3

    # Watchers: registered once, for the indexed languages.
    s = await _until(client, lambda s: s.get("watchers_registered"))
    assert s.get("watchers_registered") == 1
    assert [r.method for r in registrations] == [types.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    globs = [w["globPattern"] for w in plain(registrations[0].register_options)["watchers"]]
    assert any(".py" in g or "py," in g for g in globs) and any("go" in g for g in globs)

    client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(
            added=[types.WorkspaceFolder(uri=c.as_uri(), name="c")],
            removed=[types.WorkspaceFolder(uri=b.as_uri(), name="b")],
        )))
    s = await _until(client, lambda s: s["index_files"] == 5)
    assert sorted(s["index_roots"]) == sorted([str(a.resolve()), str(c.resolve())])
    assert s["index_files"] == 5  # a: 2, c: 3; b dropped

    # A file created on disk, reported by the client's watcher, joins its folder's index;
    # a deleted one leaves it.
    (c / "four.go").write_text("package c\n\nfunc Four() int { return 4 }\n")
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=(c / "four.go").as_uri(), type=types.FileChangeType.Created)]))
    assert (await _until(client, lambda s: s["index_files"] == 6))["index_files"] == 6
    (a / "app.py").unlink()
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=(a / "app.py").as_uri(), type=types.FileChangeType.Deleted)]))
    assert (await _until(client, lambda s: s["index_files"] == 5))["index_files"] == 5


async def test_no_watcher_registration_without_dynamic_registration(
    client: LanguageClient, tmp_path: Path
) -> None:
    a = _folder(tmp_path, "a", {"app.py": "def run():\n    pass\n"})
    registrations = await _start(client, [a], dynamic=False)
    s = await _until(client, lambda s: s["index_files"] == 1)
    assert s["index_files"] == 1
    # A registration is sent by `initialized`, which the server handled before this stats
    # request; the client reads messages in order, so it would have arrived by now.
    assert registrations == []
    assert not (await stats(client)).get("watchers_registered")


async def test_a_refused_registration_is_not_fatal(client: LanguageClient, tmp_path: Path) -> None:
    """A client that advertises dynamic registration but fails the request: logged, and
    the index and the server carry on."""
    a = _folder(tmp_path, "a", {"app.py": "def run():\n    pass\n"})
    await _start(client, [a], dynamic=True, answer=False)
    s = await _until(client, lambda s: s["index_files"] == 1)
    assert s["index_files"] == 1
    # The registration came (in order) before that stats answer and was refused before
    # the next stats request went out: the server has had the refusal by then.
    assert not (await stats(client)).get("watchers_registered")
    (a / "more.py").write_text("Y = 2\n")
    client.text_document_did_save(types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=(a / "more.py").as_uri())))
    assert (await _until(client, lambda s: s["index_files"] == 2))["index_files"] == 2
    # pytest-lsp fails any test whose client could not answer a request; here not
    # answering is the point, so its record of that is dropped.
    item = client._pytest_item  # type: ignore[attr-defined]
    item.stash[captured_exception_key] = None
