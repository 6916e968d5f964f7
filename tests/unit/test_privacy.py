"""Withholding rules: defaults, the user's extra patterns and folders, and every consumer.
(Secrets inside ordinary files are redacted instead: test_redaction.py.)"""

from __future__ import annotations

from pathlib import Path

from lsp_copilot.context.index.workspace_index import WorkspaceIndex
from lsp_copilot.privacy import Privacy, secret_reason
from lsp_copilot.settings.core import parse_settings


def test_default_rules_by_name_and_content() -> None:
    assert secret_reason("file:///a/.env.local", b"") is not None
    assert secret_reason("file:///a/id_rsa.pub", b"") is not None
    assert secret_reason("file:///a/x.py", b"K = '-----BEGIN PRIVATE KEY-----") is not None
    # A token in an ordinary file is redacted from prompts; the file keeps its completions.
    assert secret_reason("file:///a/x.py", b"k = 'AKIAABCDEFGHIJKLMNOP'") is None
    assert secret_reason("file:///a/environment.py", b"def env(): pass") is None


def test_extra_patterns_and_folders() -> None:
    p = Privacy(file_patterns=["*.vault.py", "deploy/*.yaml"],
                content_patterns=[r"INTERNAL-[0-9]{6}"],
                excluded_folders=["private", "/srv/keys/"])
    assert p.reason("file:///w/app.vault.py", b"") is not None
    assert p.reason("file:///w/deploy/prod.yaml", b"") is not None  # a glob with / : path
    assert p.reason("file:///w/prod.yaml", b"") is None
    assert p.reason("file:///w/a.py", b"ticket = 'INTERNAL-123456'") is None  # redacted
    assert p.content_patterns == (r"INTERNAL-[0-9]{6}",)
    assert p.reason("file:///w/private/notes.py", b"x = 1") == "in excluded folder 'private'"
    assert p.reason("file:///w/privateer/notes.py", b"x = 1") is None
    assert p.reason("file:///srv/keys/a.py", b"x = 1") is not None
    assert p.reason("file:///w/a.py", b"x = 1") is None
    assert p.reason("file:///w/.env", b"") is not None  # the defaults still apply


def test_settings_validate_patterns() -> None:
    settings, problems = parse_settings({"secretContentPatterns": ["ok[0-9]", "(unclosed"],
                                         "excludedFolders": ["vault"]})
    assert settings.secret_content_patterns == ()  # the bad list is replaced by the default
    assert settings.excluded_folders == ("vault",)
    assert any("(unclosed" in p and "not a regular expression" in p for p in problems)


def test_index_skips_secret_files(tmp_path: Path) -> None:
    (tmp_path / "keys.py").write_text("KEY = '-----BEGIN RSA PRIVATE KEY-----'\n"
                                      "def leak(): pass\n")
    (tmp_path / "vault").mkdir()
    (tmp_path / "vault" / "conf.py").write_text("def hidden_helper(): pass\n")
    (tmp_path / "app.py").write_text("def visible(): pass\n")
    index = WorkspaceIndex(tmp_path)
    index.private = Privacy(excluded_folders=["vault"]).reason
    for rel in ("keys.py", "vault/conf.py", "app.py"):
        index.update(tmp_path / rel)
    assert index.update(tmp_path / "app.py")
    assert not index.update(tmp_path / "keys.py")
    assert not index.update(tmp_path / "vault" / "conf.py")


def test_secret_open_buffers_never_reach_other_prompts() -> None:
    from lsp_copilot.server.app import create_server
    from lsp_copilot.server.handlers.lifecycle import _apply_settings

    ls = create_server()
    ls.store.open("file:///w/app.py", "python", 1, "def main():\n    pass\n")
    ls.store.open("file:///w/keys.py", "python", 1, "-----BEGIN PRIVATE KEY-----\n")
    ls.store.open("file:///w/team/notes.py", "python", 1, "x = 1\n")
    assert [u for u, _ in ls.context_workspace.documents()] == ["file:///w/app.py",
                                                       "file:///w/team/notes.py"]
    _apply_settings(ls, {"excludedFolders": ["team"]})
    assert [u for u, _ in ls.context_workspace.documents()] == ["file:///w/app.py"]


def test_markers_cover_every_content_rule() -> None:
    """The fast pre-check must never hide a match of the regex."""
    from lsp_copilot.privacy import SECRET_CONTENT, SECRET_MARKERS

    for sample in (b"-----BEGIN OPENSSH PRIVATE KEY-----", b"-----BEGIN RSA PRIVATE KEY-----",
                   b"-----BEGIN PGP PRIVATE KEY BLOCK-----", b"-----BEGIN PRIVATE KEY-----"):
        assert SECRET_CONTENT.search(sample), sample
        assert any(m in sample for m in SECRET_MARKERS), sample
