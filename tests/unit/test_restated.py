"""An answer that writes the line's typed part again is shown from after the copy."""

from __future__ import annotations

import pytest

from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.language.trigger import completion_mode
from lsp_copilot.pipeline.prompt import cursor_at
from lsp_copilot.postprocess.checks import finalize


def _final(doc: str, raw: str, language_id: str) -> str:
    cut = doc.index("|")
    text = doc.replace("|", "")
    store = DocumentStore()
    store.open("file:///w", language_id, 1, text)
    snap = store.snapshot("file:///w")
    off = len(text[:cut].encode())
    return finalize(raw, completion_mode(snap, off), cursor_at(snap, off), snap, off)


@pytest.mark.parametrize(("language", "doc", "raw", "shown"), [
    ("rust", "fn f(p: &Path) -> io::Result<()> {\n    let x = 1;\n    let |\n    Ok(())\n}\n",
     " let file = File::open(p)?;", "file = File::open(p)?;"),
    ("typescript", "export function f(): number {\n  const a = 1;\n  const |\n  return b;\n}\n",
     " const b = a + 1;", "b = a + 1;"),
    ("python", "def f(a):\n    b = a\n    return |\n", " return b + 1", "b + 1"),
])
def test_a_copy_of_the_typed_part_is_dropped(language: str, doc: str, raw: str,
                                             shown: str) -> None:
    assert _final(doc, raw, language) == shown


def test_an_answer_that_only_starts_like_the_typed_word_is_kept() -> None:
    doc = "def f(a):\n    b = a\n    return |\n"
    assert _final(doc, " returned(b)", "python") == "returned(b)"
    assert _final(doc, " return", "python") == ""  # nothing after the copy: no answer
