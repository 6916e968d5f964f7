"""`lsp-copilot cache clear` removes the completion caches it made and nothing else, also
when --dir names a folder that holds other things (the cache folder with logs and models)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from lsp_copilot.cli.cache_command import cmd_cache_clear
from lsp_copilot.pipeline.completion_cache import CompletionCache, workspace_folder


def _cache(root: Path, workspace: str) -> Path:
    folder = workspace_folder(root, workspace)
    cache = CompletionCache(folder)
    cache.put("k", "v")
    cache.close()
    return folder


def test_only_the_workspace_caches_are_removed(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "completions"
    one, two = _cache(root, "file:///a"), _cache(root, "file:///b")
    (root / "notes").mkdir()  # not ours
    (root / "notes" / "keep.txt").write_text("mine")
    (root / "0123456789abcdef").mkdir()  # a cache's name, but diskcache never made it
    (root / "readme.txt").write_text("mine")
    assert cmd_cache_clear(argparse.Namespace(dir=root)) == 0
    assert not one.exists() and not two.exists()
    assert (root / "notes" / "keep.txt").read_text() == "mine"
    assert (root / "0123456789abcdef").is_dir() and (root / "readme.txt").exists()
    out = capsys.readouterr().out
    assert "2 workspace(s)" in out and "left alone" in out and "notes" in out


def test_a_folder_without_a_completion_cache_is_refused(tmp_path: Path) -> None:
    """``--dir ~/.cache/lsp-copilot`` (its logs and models) loses nothing."""
    for name in ("logs", "models", "completions"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f").write_text("x")
    with pytest.raises(SystemExit, match="holds no completion cache"):
        cmd_cache_clear(argparse.Namespace(dir=tmp_path))
    assert all((tmp_path / name / "f").exists() for name in ("logs", "models", "completions"))


def test_a_link_named_like_a_cache_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "completions"
    real = _cache(root, "file:///a")
    elsewhere = _cache(tmp_path / "other", "file:///b")
    (root / "fedcba9876543210").symlink_to(elsewhere)
    cmd_cache_clear(argparse.Namespace(dir=root))
    assert not real.exists() and (elsewhere / "cache.db").exists()


def test_an_empty_or_missing_folder_is_fine(tmp_path: Path) -> None:
    assert cmd_cache_clear(argparse.Namespace(dir=tmp_path / "missing")) == 0
    assert cmd_cache_clear(argparse.Namespace(dir=tmp_path)) == 0
