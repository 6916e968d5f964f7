"""Ignore rules hold through symlinks in the real server and pipeline (a recording fake
engine keeps every prompt): a workspace opened through a link, an ignored file reached by
a link, and a link in the repository to a file outside it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types

from lsp_copilot.server.handlers import completion, documents, workspace
from lsp_copilot.server.state import CopilotServer
from tests.support.fakes import FakeEngine
from tests.support.pipeline import server_for

OUTSIDE = "OUTSIDE_7b2e"
IGNORED = "IGNORED_91d0"
APP = "from helpers import load\n\n\ndef main():\n    value = load()\n    return "


def _open(ls: CopilotServer, path: Path, text: str) -> None:
    documents.did_open(ls, types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri=path.as_uri(), language_id="python", version=1, text=text)))


async def _inline(ls: CopilotServer, path: Path, text: str) -> types.InlineCompletionList:
    line = text.count("\n")
    col = len(text) - (text.rfind("\n") + 1)
    return await completion.inline_completion(ls, types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
        position=types.Position(line, col),
        context=types.InlineCompletionContext(types.InlineCompletionTriggerKind.Invoked)))


async def test_files_behind_links_never_reach_the_engine(tmp_path: Path) -> None:
    real, outside, link = tmp_path / "real", tmp_path / "outside", tmp_path / "link"
    (real / "private").mkdir(parents=True)
    outside.mkdir()
    (outside / "helpers.py").write_text(f'def load(token="{OUTSIDE}"):\n    return token\n')
    (real / "helpers.py").symlink_to(outside / "helpers.py")  # a link out of the repository
    keys = f'API = "{IGNORED}"\n\n\ndef keys():\n    return '
    (real / "private" / "keys.py").write_text(keys)
    (real / "alias.py").symlink_to(real / "private" / "keys.py")  # an ignored file, linked
    (real / ".lspcopilotignore").write_text("private/\n")
    (real / "app.py").write_text(APP)
    link.symlink_to(real, target_is_directory=True)  # the editor opens the link

    engine = FakeEngine(" value\n", step_s=0)
    ls = await server_for(engine)
    ls.apply_settings_now()
    workspace.did_change_workspace_folders(ls, types.DidChangeWorkspaceFoldersParams(
        types.WorkspaceFoldersChangeEvent(
            added=[types.WorkspaceFolder(link.as_uri(), "link")], removed=[])))
    index = ls.context_workspace.index
    assert index is not None
    assert await asyncio.to_thread(index.ready.wait, 60)
    assert "app.py" in index.files()
    assert not {"helpers.py", "alias.py", "private/keys.py"} & set(index.files())

    for path in (link / "private" / "keys.py", link / "alias.py", link / "app.py"):
        _open(ls, path, path.read_text())
    assert (await _inline(ls, link / "app.py", APP)).items  # the repository's own file
    asked = len(engine.prompts)
    for path in (link / "private" / "keys.py", link / "alias.py"):
        assert (await _inline(ls, path, keys)).items == []
    assert len(engine.prompts) == asked  # withheld: not even a request
    assert ls.telemetry.counters["secret_skipped"] == 2
    prompts = "\n".join(engine.prompts)
    assert OUTSIDE not in prompts and IGNORED not in prompts
