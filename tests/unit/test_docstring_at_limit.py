"""An answer the token limit cut inside the docstring it opened: its summary line is
offered, closed, rather than nothing (and rather than an unterminated string)."""

from __future__ import annotations

from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.language.folders import language_config
from lsp_copilot.language.trigger import completion_mode
from lsp_copilot.pipeline.prompt import cursor_at
from lsp_copilot.postprocess.brackets import close_docstring_summary
from lsp_copilot.postprocess.checks import finalize

BEFORE = "from pathlib import Path\n\n\ndef _out_dir(root: Path | None) -> Path | None:"
AFTER = "\n\n\ndef main() -> None:\n    pass\n"
RAW = ('\n    """Return the directory the reports are written to.\n\n'
       '    When ``root`` is None the current working directory is used, and the\n'
       '    folder is created on first use; the caller owns')


def _finalize(raw: str, truncated: bool) -> str:
    text = BEFORE + AFTER
    store = DocumentStore()
    store.open("file:///w/out.py", "python", 1, text)
    snapshot = store.snapshot("file:///w/out.py")
    offset = len(BEFORE.encode())
    mode = completion_mode(snapshot, offset)  # (single-line at the header's end)
    return finalize(raw, mode, cursor_at(snapshot, offset), snapshot, offset, truncated)


def test_a_docstring_cut_by_the_token_limit_comes_as_its_summary_line() -> None:
    got = _finalize(RAW, truncated=True)
    assert got == '\n    """Return the directory the reports are written to."""'


def test_a_docstring_that_ended_is_left_as_the_model_wrote_it() -> None:
    whole = RAW + ' it."""\n    return root'
    assert '"""Return the directory' in _finalize(whole, truncated=False)
    assert _finalize(whole, truncated=False).count('"""') == 2


def test_only_a_docstring_that_starts_its_line_and_says_something_is_closed() -> None:
    rules = language_config("python")
    assert close_docstring_summary('    x = f("""abc def\n more', rules) == ""  # mid-line
    assert close_docstring_summary('    """\n    Return the thing.\n    More', rules) == (
        '    """Return the thing."""')  # quotes alone on their line: the summary below
    assert close_docstring_summary('    """\n\n    Return the thing.', rules) == ""
    assert close_docstring_summary('    call(a,\n    """Doc here\n more', rules) == ""
    assert close_docstring_summary("    x = 1\n    '''Doc here\n more", rules) == (
        "    x = 1\n    '''Doc here'''")
