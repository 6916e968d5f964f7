"""What another open buffer may give a prompt (P4): nothing from a buffer larger than the
workspace index reads from disk, measured in bytes as the file would be on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_copilot.context.builder import build_context
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.context.index.workspace_index import MAX_FILE_BYTES, WorkspaceIndex
from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.prompts.templates import template_for
from lsp_copilot.tokens import TiktokenCounter

SIMILAR = ("def report(rect):\n    width_total = rect.width * 3\n"
           "    height_total = rect.height\n")
CURRENT = "def area(rect):\n    width_total = rect.width\n    "


def _p4_prompt(tmp_path: Path, other_text: str, counter: TiktokenCounter) -> str:
    (tmp_path / "app.py").write_text(CURRENT)
    index = WorkspaceIndex(tmp_path)
    index.build()
    store = DocumentStore()
    uri = (tmp_path / "app.py").as_uri()
    store.open(uri, "python", 1, CURRENT)
    snap = store.snapshot(uri)
    other = (tmp_path / "dump.py").as_uri()
    ws = Workspace(index, lambda: [(other, other_text), (snap.uri, snap.text)])
    ws.edited(other, None, other_text.count("\n"))
    return build_context(snap, len(snap.data), counter, template_for(None), 512,
                         workspace=ws).prompt


@pytest.mark.parametrize("filler", ["x = 1\n", "名前 = '東京都'\n"])
def test_an_open_buffer_over_the_index_limit_gives_no_snippets(
        tmp_path: Path, cl100k: TiktokenCounter, filler: str) -> None:
    """In characters the CJK buffer is under the limit (about 400,000); in bytes it is
    over (about 1.3 MB): it counts as the file it would be on disk."""
    count = MAX_FILE_BYTES // len(filler.encode()) + 1_000
    big = filler * count + SIMILAR
    assert len(big.encode()) > MAX_FILE_BYTES
    prompt = _p4_prompt(tmp_path, big, cl100k)
    assert "height_total" not in prompt and "dump.py" not in prompt


def test_an_open_buffer_under_the_limit_still_gives_snippets(
        tmp_path: Path, cl100k: TiktokenCounter) -> None:
    """(The check above fails for the right reason: the same buffer, small, is used.)"""
    prompt = _p4_prompt(tmp_path, "名前 = '東京都'\n" * 40 + SIMILAR, cl100k)
    assert "height_total = rect.height" in prompt and "dump.py" in prompt
