"""Secret redaction: the planted corpus, placeholders, the cursor's line, the line cache,
ordinary code left alone, `.lspcopilotignore`, and the context builder's use of it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_copilot.context.builder import build_context
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.context.index.workspace_index import WorkspaceIndex
from lsp_copilot.privacy import Privacy
from lsp_copilot.privacy.ignore import RepoIgnores
from lsp_copilot.privacy.redact import Redactor
from lsp_copilot.prompts.templates import template_for
from tests.support.fakes import CharCounter
from tests.support.pipeline import snap

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "secrets"
PLANTED: dict[str, dict[str, str]] = json.loads((CORPUS / "planted.json").read_text())
TOKEN = "ghp_R8x2Lq9Zt4Vn7Bm3Kc6Yw1Pd5Hs0Jf2Ga8Ue"


def test_every_planted_secret_is_redacted_and_the_code_kept() -> None:
    formats = {fmt for values in PLANTED.values() for fmt in values}
    assert len(formats) >= 20 and len({Path(n).suffix for n in PLANTED}) >= 4
    redactor = Redactor()
    for name, values in PLANTED.items():
        text = (CORPUS / name).read_text()
        redaction = redactor.text(text, name)
        for fmt, value in values.items():
            assert value in text, (name, fmt)  # (the corpus holds what it names)
            assert value not in redaction.text, (name, fmt)
        # Only values change: every line is still there, the code around them too.
        assert redaction.text.count("\n") == text.count("\n")
        assert len(redaction.found) >= len(values) - 1  # (one line holds two in a file)
    settings = redactor.text((CORPUS / "settings.py").read_text(), "settings.py").text
    assert 'ADMIN_PASSWORD = "<redacted:password>"' in settings
    assert "postgres://shop:<redacted:password>@db.internal:5432/shop" in settings
    assert "def database_url():" in settings


def test_placeholders_are_stable_and_keep_the_shape() -> None:
    redactor = Redactor()
    a = redactor.text('db_password = "hunter2-very-secret"', "a.py").text
    b = redactor.text('db_password = "another-Secret-99"', "a.py").text
    assert a == b == 'db_password = "<redacted:password>"'
    assert redactor.text(f"t = '{TOKEN}'", "a.py").text == "t = '<redacted:github-token>'"
    # A placeholder is not redacted again (a prompt that already holds one).
    assert redactor.text(a, "a.py").text == a


def test_the_cursor_line_is_scanned_whole() -> None:
    """The secret the cursor stands in is found from both halves of its line; its rest is
    dropped from the suffix, the code after it kept."""
    redactor = Redactor()
    before, after, found = redactor.around(
        f'x = 1\ntoken = "{TOKEN[:20]}', f'{TOKEN[20:]}"\ny = 2\napi_key = "{TOKEN}"\n', "a.py")
    assert before == 'x = 1\ntoken = "<redacted:github-token>'
    assert after == '"\ny = 2\napi_key = "<redacted:github-token>"\n'
    assert [line for line, _ in found] == [1, 3]
    # A value being typed, its closing quote not there yet, is found all the same.
    before, after, _ = redactor.around('x = 1\npassword = "hunter2-ver', "\ny = 2\n", "a.py")
    assert before == 'x = 1\npassword = "<redacted:password>' and after == "\ny = 2\n"
    before, _, _ = redactor.around(f'headers = {{"X-Token": "{TOKEN[:30]}', "", "a.py")
    assert TOKEN[:30] not in before
    # A secret after the cursor on its line stays in the suffix, replaced.
    before, after, _ = redactor.around("call(", f'"{TOKEN}")\n', "a.py")
    assert (before, after) == ("call(", '"<redacted:github-token>")\n')


def test_the_keyword_prefilter_covers_every_keyword() -> None:
    """Lines without a stem skip the keyword plugin: every name it knows must hold one (a
    newer detect-secrets with a new name fails here, not silently)."""
    from detect_secrets.plugins.keyword import DENYLIST

    from lsp_copilot.privacy.redact import KEYWORD_STEMS

    for word in DENYLIST:
        assert any(stem in word.replace("_?", "_").lower() for stem in KEYWORD_STEMS), word


def test_each_line_is_scanned_once() -> None:
    redactor = Redactor()
    text = "\n".join(f"value_{i} = compute({i})" for i in range(50))
    redactor.text(text, "a.py")
    first = redactor.scanned
    redactor.text(text + " + 1", "a.py")  # a keystroke on the last line
    assert first == 50 and redactor.scanned == 51


def test_ordinary_code_is_left_alone() -> None:
    code = """import os
password = os.environ["DB_PASSWORD"]
api_key = get_api_key(user)
token = None
secret = request.headers["X-Secret"]
digest = "d41d8cd98f00b2"
uid = "123e4567-e89b-12d3-a456-426614174000"
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
url = "https://docs.python.org/3/library/os.html"
password = "${DB_PASSWORD}"
server = "8.8.8.8"
"""
    redaction = Redactor().text(code, "a.py")
    assert redaction.text == code and redaction.found == ()


def test_suggestions_holding_secrets_are_recognised() -> None:
    redactor = Redactor()
    assert redactor.holds_secret('"<redacted:password>"') == "password"
    assert redactor.holds_secret(f'"{TOKEN}")') == "github-token"
    assert redactor.holds_secret("return a + b") is None
    # A value that completes the literal its line opened is seen whole; a secret that is
    # only in the line before the suggestion is not the suggestion's.
    hex_key = '4f9a2c7e1b8d3f6a0c5e9b2d7a4f1c8e"'
    assert redactor.holds_secret(hex_key, "a.py") is None
    assert redactor.holds_secret(hex_key, "a.py", before='API_KEY = "') is not None
    assert redactor.holds_secret(")", "a.py", before=f'call("{TOKEN}"') is None


def test_user_content_patterns_are_redacted() -> None:
    redactor = Redactor([r"INTERNAL-[0-9]{6}"])
    assert redactor.text("ticket = 'INTERNAL-123456'", "a.py").text == (
        "ticket = '<redacted:custom>'")


def test_lspcopilotignore_withholds_and_follows_edits(tmp_path: Path) -> None:
    ignores = RepoIgnores()
    ignores.add(tmp_path)
    privacy = Privacy(ignores=ignores)
    path = str(tmp_path.resolve() / "vendor" / "keys.py")
    assert privacy.reason(path, b"x = 1") is None  # no file yet
    (tmp_path / ".lspcopilotignore").write_text("vendor/\n")
    reason = privacy.reason(path, b"x = 1")
    assert reason is not None and ".lspcopilotignore" in reason
    assert privacy.reason(str(tmp_path.resolve() / "app.py"), b"x = 1") is None
    (tmp_path / ".lspcopilotignore").write_text("*.py\n!vendor/keys.py\n# the app only\n")
    assert privacy.reason(path, b"x = 1") is None  # read again: it changed
    assert privacy.reason(str(tmp_path.resolve() / "app.py"), b"") is not None
    assert privacy.reason("/elsewhere/app.py", b"") is None  # outside every root


def test_context_redacts_the_window_and_other_files(tmp_path: Path) -> None:
    """Both templates: the window (the cursor's line too), and blocks from another file."""
    (tmp_path / "config.py").write_text(
        f'GITHUB_TOKEN = "{TOKEN}"\n\n\ndef github_headers():\n'
        '    return {"Authorization": "token " + GITHUB_TOKEN}\n')
    app = ('from config import github_headers, GITHUB_TOKEN\n'
           'db_password = "hunter2-very-secret"\n\n\ndef fetch(session):\n'
           '    headers = github_headers()\n    return session.get(url, headers=')
    (tmp_path / "app.py").write_text(app)
    index = WorkspaceIndex(tmp_path)
    index.build()
    redactor = Redactor()
    for template in ("qwen2.5-coder", None):
        snapshot = snap(app, (tmp_path / "app.py").as_uri())
        ctx = build_context(snapshot, len(app.encode()), CharCounter(), template_for(template),
                            1024, workspace=Workspace(index), redactor=redactor)
        assert "config.py" in ctx.prompt  # the other file is in the prompt
        assert TOKEN not in ctx.prompt and "hunter2" not in ctx.prompt
        assert "<redacted:github-token>" in ctx.prompt
        assert 'db_password = "<redacted:password>"' in ctx.prompt
        assert "app.py:2 password" in ctx.redacted
        assert ctx.prompt == "".join(ctx.pieces)
    # Without a redactor (the bench's baseline), the text is the buffer's.
    plain = build_context(snap(app), len(app.encode()), CharCounter(), template_for(None), 1024)
    assert "hunter2" in plain.prompt and plain.redacted == ()


def test_text_typed_after_the_base_is_redacted() -> None:
    """Prefix-only prompts keep a base and append the typed line: that line is redacted,
    also while the secret is still being typed (the rest of the line closes it)."""
    redactor = Redactor()
    head = "import os\n\n\ndef connect():\n"
    template = template_for(None)
    assert not template.fim
    for typed in ('    password = "hunter2-very-secret"\n    return ', '    password = "hunt'):
        text = head + typed + ('er2-very-secret"' if typed.endswith("hunt") else "")
        offset = len((head + typed).encode())
        ctx = build_context(snap(text), offset, CharCounter(), template, 1024,
                            redactor=redactor)
        assert "hunt" not in ctx.prompt, ctx.prompt
        assert '    password = "<redacted:password>' in ctx.prompt


def test_lines_below_that_changed_after_the_base_are_redacted() -> None:
    """A fill-in-the-middle prompt keeps its base when the lines below the cursor change
    (Enter pushed an editor's closer down); the suffix then takes those lines from the
    document as it is now, redacted as the base's were."""
    redactor = Redactor()
    workspace = Workspace()
    template = template_for("qwen2.5-coder")
    head = "import os\n\n\ndef connect():\n    x = (1,"
    starts = []
    rest = "\n    return x\n\n\nx = 1\n"
    for typed, below in (("", ")" + rest), ("\n        2", f"\n    )\n    t = \"{TOKEN}\"" + rest)):
        ctx = build_context(snap(head + typed + below), len((head + typed).encode()),
                            CharCounter(), template, 1024, workspace=workspace,
                            redactor=redactor, suffix_share=0.5)
        starts.append(ctx.at_cursor()[0])
    assert starts[1].startswith(starts[0])  # the base was kept
    assert TOKEN not in ctx.prompt and "<redacted:github-token>" in ctx.prompt, ctx.prompt


def test_redaction_never_calls_a_verification_service(monkeypatch: pytest.MonkeyPatch) -> None:
    """detect-secrets can verify live secrets with their vendors over HTTP: never here."""
    import requests

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a secret was sent for verification")

    monkeypatch.setattr(requests.Session, "request", refuse)
    monkeypatch.setattr(requests, "get", refuse)
    monkeypatch.setattr(requests, "post", refuse)
    redactor = Redactor()
    for name in PLANTED:
        assert redactor.text((CORPUS / name).read_text(), name).found
