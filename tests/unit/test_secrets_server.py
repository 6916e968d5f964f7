"""The planted secrets through the real server and pipeline: a recording engine (it keeps
every prompt it gets) proves that none reaches a prompt, the completion cache or the
acceptance store, while the files that hold them still get completions; a repository's
`.lspcopilotignore` and a private-key file keep theirs out entirely."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from lsp_copilot.pipeline.completion_cache import CompletionCache
from lsp_copilot.server.handlers import completion, documents, feedback, workspace
from lsp_copilot.server.state import CopilotServer
from tests.support.fakes import FakeEngine
from tests.support.pipeline import server_for

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "secrets"
PLANTED: dict[str, dict[str, str]] = json.loads((CORPUS / "planted.json").read_text())
VALUES = [v for values in PLANTED.values() for v in values.values()]
IGNORED_MARKER = "kept-out-by-lspcopilotignore-7f3a"
KEY_MARKER = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"

# Where each file is completed: text added to it (a function being written; "\0" is the
# cursor), as (language id, text to insert, where: "end" or the line it replaces).
TYPED = {
    "settings.py": ("python", "\n\ndef total(a, b):\n    return \0", "end"),
    "client.js": ("javascript", "\nfunction total(a, b) {\n  return \0\n}\n", "end"),
    "main.go": ("go", "\nfunc total(a, b int) int {\n\treturn \0\n}\n", "end"),
    "Config.java": ("java", "        return \0", "        return 30;"),
    "deploy.sh": ("shellscript", "\ntotal() {\n    echo \0\n}\n", "end"),
}


class RecordingEngine(FakeEngine):
    """Answers every request with ``reply`` and keeps the prompts (``prompts``)."""


def _file_being_written(name: str) -> tuple[str, str, int, int]:
    """(language id, the file's text with the function being written, cursor line, col)."""
    language, insert, where = TYPED[name]
    text = (CORPUS / name).read_text()
    if where == "end":
        text = text.rstrip("\n") + insert
    else:
        head, tail = text.split(where, 1)
        text = head + insert + tail
    cursor = text.index("\0")
    text = text.replace("\0", "")
    line = text.count("\n", 0, cursor)
    return language, text, line, cursor - (text.rfind("\n", 0, cursor) + 1)


def _open(ls: CopilotServer, uri: str, language: str, text: str) -> None:
    documents.did_open(ls, types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)))


async def _inline(ls: CopilotServer, uri: str, line: int, col: int,
                  ) -> types.InlineCompletionList:
    return await completion.inline_completion(ls, types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line, col),
        context=types.InlineCompletionContext(types.InlineCompletionTriggerKind.Invoked)))


def _stored_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


async def _server(tmp_path: Path, engine: FakeEngine, template: str) -> CopilotServer:
    """A server over ``engine`` with the corpus as its workspace folder (indexed, with a
    `.lspcopilotignore`), a disk cache and an acceptance file of its own."""
    repo = tmp_path / "repo"
    shutil.copytree(CORPUS, repo)
    (repo / "vendor").mkdir()
    (repo / "vendor" / "internal.py").write_text(
        f'NOTE = "{IGNORED_MARKER}"\n\n\ndef internal_total(a, b):\n    return a + b\n')
    (repo / ".lspcopilotignore").write_text("# kept out of completion\nvendor/\n")
    (repo / "deploy_key.py").write_text(
        f'KEY = """-----BEGIN RSA PRIVATE KEY-----\n{KEY_MARKER}\n'
        '-----END RSA PRIVATE KEY-----"""\n\n\ndef load_key():\n    return ')
    ls = await server_for(engine, CompletionCache(tmp_path / "cache"), template=template,
                          acceptance_file=str(tmp_path / "acceptance.sqlite3"))
    ls.apply_settings_now()
    ls.apply_experiment()
    workspace.did_change_workspace_folders(ls, types.DidChangeWorkspaceFoldersParams(
        types.WorkspaceFoldersChangeEvent(
            added=[types.WorkspaceFolder(repo.as_uri(), "repo")], removed=[])))
    index = ls.context_workspace.index
    assert index is not None
    assert await asyncio.to_thread(index.ready.wait, 60)
    return ls


@pytest.mark.parametrize("template", ["auto", "qwen2.5-coder"])
async def test_no_planted_secret_reaches_a_prompt_the_cache_or_the_store(
        tmp_path: Path, template: str) -> None:
    engine = RecordingEngine(" a + b;\n", step_s=0)
    ls = await _server(tmp_path, engine, template)
    repo = tmp_path / "repo"
    for name in TYPED:  # every file open: each is context for the others
        language, text, _, _ = _file_being_written(name)
        _open(ls, (repo / name).as_uri(), language, text)
    _open(ls, (repo / "vendor" / "internal.py").as_uri(), "python",
          (repo / "vendor" / "internal.py").read_text())
    _open(ls, (repo / "deploy_key.py").as_uri(), "python", (repo / "deploy_key.py").read_text())
    answered = []
    for name in TYPED:
        _, _, line, col = _file_being_written(name)
        uri = (repo / name).as_uri()
        result = await _inline(ls, uri, line, col)
        if result.items:
            answered.append(name)
            item = result.items[0]
            assert item.command is not None and item.command.arguments
            feedback.accept_command(ls, item.command.arguments)
    # The files that hold secrets still get completions.
    assert answered == list(TYPED), answered
    # Withheld: the ignored file and the private-key file get nothing, not even a request.
    for path, line in ((repo / "vendor" / "internal.py", 4), (repo / "deploy_key.py", 5)):
        before = len(engine.prompts)
        assert (await _inline(ls, path.as_uri(), line, len("    return "))).items == []
        assert len(engine.prompts) == before
    prompts = "\n".join(engine.prompts)
    assert len(engine.prompts) >= len(TYPED)
    assert "<redacted:" in prompts  # the redacted lines are there, as placeholders
    leaked = [v for v in VALUES if v in prompts]
    assert leaked == []
    assert IGNORED_MARKER not in prompts and KEY_MARKER not in prompts
    assert "internal_total" not in prompts  # nor the ignored file's definitions
    assert ls.telemetry.counters["secrets_redacted"] > 0
    # The disk cache holds the answers, keyed by the redacted prompts; no secret in it.
    assert ls.cache is not None and len(ls.cache) > 0
    ls.cache.close()
    cached = _stored_bytes(tmp_path / "cache")
    assert [v for v in VALUES if v.encode() in cached] == []
    # The acceptance store has the outcomes, and no secret.
    ls.acceptance.flush()
    ls.acceptance.store.close()
    store = tmp_path / "acceptance.sqlite3"
    assert store.exists() and ls.acceptance.summary()["written"] >= len(TYPED)
    assert [v for v in VALUES if v.encode() in store.read_bytes()] == []
    assert IGNORED_MARKER.encode() not in cached and KEY_MARKER.encode() not in cached


@pytest.mark.parametrize("reply", [' "<redacted:password>"\n',
                                   ' "ghp_R8x2Lq9Zt4Vn7Bm3Kc6Yw1Pd5Hs0Jf2Ga8Ue"\n'])
async def test_a_suggestion_holding_a_secret_is_dropped_and_not_cached(
        tmp_path: Path, reply: str) -> None:
    engine = RecordingEngine(reply, step_s=0)
    ls = await _server(tmp_path, engine, "auto")
    text = "import os\n\n\ndef token():\n    return"
    uri = (tmp_path / "repo" / "tokens.py").as_uri()
    _open(ls, uri, "python", text)
    assert (await _inline(ls, uri, 4, len("    return"))).items == []
    assert engine.prompts  # (an explicit request also asks for alternatives)
    assert ls.telemetry.counters["secret_dropped"] == 1
    assert ls.telemetry.counters["secret_not_cached"] >= 1
    assert ls.cache is not None and len(ls.cache) == 0
