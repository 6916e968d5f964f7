"""Post-processing as one pass: the checks in order over one candidate, each text
inserted and parsed once, the same pass for the first answer and the alternatives."""

from __future__ import annotations

from dataclasses import replace

import pytest
import tree_sitter

from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.language.trigger import completion_mode
from lsp_copilot.pipeline.prompt import cursor_at
from lsp_copilot.postprocess import insertion, safety
from lsp_copilot.postprocess.checks import CHECKS, PostProcessor, Target, finalize
from lsp_copilot.postprocess.safety import SafetyChecker

FUNC = "import os\n\n\ndef clean(cmd):\n    |\n"


def _processor(text: str, level: str = "block", secret: str | None = None,
               language: str = "python") -> PostProcessor:
    cut = text.index("|")
    text = text.replace("|", "")
    store = DocumentStore()
    store.open("file:///w/f", language, 1, text)
    snapshot = store.snapshot("file:///w/f")
    offset = len(text[:cut].encode())
    return PostProcessor(Target(
        completion_mode(snapshot, offset),
        replace(cursor_at(snapshot, offset), prompt_dropped_indent=""), snapshot, offset,
        SafetyChecker(), level,
        secret=lambda answer: "an API key" if secret and secret in answer else None))


def test_the_checks_run_in_order() -> None:
    assert [name for name, _ in CHECKS] == ["text", "whole", "secret", "safety"]


def test_a_candidate_is_parsed_once_for_the_whole_check_and_the_safety_scan(
        monkeypatch: pytest.MonkeyPatch) -> None:
    parses: list[bytes] = []

    class Counting:
        def __init__(self, parser: tree_sitter.Parser) -> None:
            self.parser = parser

        def parse(self, data: bytes, old: tree_sitter.Tree | None = None) -> tree_sitter.Tree:
            parses.append(data)
            return self.parser.parse(data, old)

    for module in (insertion, safety):
        real = module.parser_for
        monkeypatch.setattr(module, "parser_for", lambda g, real=real: Counting(real(g)))
    post = _processor(FUNC)
    got = post.run("path = cmd.strip()")
    assert got.text == "path = cmd.strip()" and got.clean
    assert len(parses) == 1  # the whole check's tree is the one the safety scan reads
    assert post.whole is not None and post.whole.insertion.parses == 1
    post.run("path = cmd.strip()")  # an alternative alike to the first: no new parse
    assert len(parses) == 1


def test_each_check_says_when_it_dropped_the_answer() -> None:
    assert _processor(FUNC).run("   \n").dropped_by == "text"
    not_whole = _processor(FUNC).run("return cmd.strip(")
    assert not_whole.text == "" and not_whole.dropped_by == "whole"
    secret = _processor(FUNC, secret="sk-").run('key = "sk-1234567890"')
    assert secret.dropped_by == "secret" and secret.reason is not None
    assert "an API key" in secret.reason
    blocked = _processor(FUNC).run("os.system(cmd)")
    assert blocked.dropped_by == "safety"
    assert blocked.reason == "blocked by `safety`: shell_command"


def test_a_warned_answer_is_shown_but_is_not_clean() -> None:
    """An alternative is offered only when clean: the first answer may carry a warning."""
    got = _processor(FUNC, level="warn").run("os.system(cmd)")
    assert got.text == "os.system(cmd)" and [f.rule for f in got.warned] == ["shell_command"]
    assert not got.clean


def test_until_stops_after_the_named_check() -> None:
    post = _processor(FUNC, secret="sk-")
    assert post.run('key = "sk-1234567890"', until="whole").text == 'key = "sk-1234567890"'
    assert post.run("os.system(cmd)", until="whole").text == "os.system(cmd)"


def test_finalize_is_the_text_and_whole_checks() -> None:
    post = _processor(FUNC)
    assert finalize("os.system(cmd)\n\n\n", post.target.mode, post.target.cursor,
                    post.target.snapshot, post.target.offset) == "os.system(cmd)"
    assert finalize("return cmd.strip(", post.target.mode, post.target.cursor,
                    post.target.snapshot, post.target.offset) == ""


RUST_BODY_BELOW = """impl Node {
    pub |
        let mut s = String::new();
        s
    }
}
"""


def test_where_a_body_waits_only_a_whole_header_is_one_the_alternatives_look_for() -> None:
    header = _processor(RUST_BODY_BELOW, language="rust").header_wanted()
    assert header is not None
    assert header("fn value(&self) -> String {")
    assert not header("materialise(&self) -> String {")  # `pub name(..)`: no header
    assert not header("fn value(&self) -> String")  # no block opened yet
    assert _processor("def f():\n    return |\n").header_wanted() is None  # no body below
