"""Ignore rules and credential-file names hold through symlinks: a workspace opened
through a link, a link to an ignored file, a link that leads out of the workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_copilot.context.index.workspace_index import WorkspaceIndex
from lsp_copilot.privacy import Privacy
from lsp_copilot.privacy.ignore import RepoIgnores


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    real = tmp_path / "real"
    (real / "private").mkdir(parents=True)
    (real / "private" / "keys.py").write_text("KEY = 1\n")
    (real / "app.py").write_text("def main():\n    return 1\n")
    (real / ".lspcopilotignore").write_text("private/\n")
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    return tmp_path


def test_a_workspace_opened_through_a_link_keeps_its_ignored_files_out(repo: Path) -> None:
    ignores = RepoIgnores()
    ignores.add(repo / "link")  # the editor's root is the link
    privacy = Privacy(ignores=ignores)
    assert privacy.reason((repo / "link" / "private" / "keys.py").as_uri(), b"") is not None
    assert privacy.reason((repo / "real" / "private" / "keys.py").as_uri(), b"") is not None
    assert privacy.reason((repo / "link" / "app.py").as_uri(), b"") is None


def test_a_link_inside_the_workspace_to_an_ignored_file_is_ignored(repo: Path) -> None:
    (repo / "real" / "handy.py").symlink_to(repo / "real" / "private" / "keys.py")
    ignores = RepoIgnores()
    ignores.add(repo / "real")
    privacy = Privacy(ignores=ignores)
    assert privacy.reason((repo / "real" / "handy.py").as_uri(), b"") is not None


def test_an_absolute_excluded_folder_holds_through_links_both_ways(repo: Path) -> None:
    by_real = Privacy(excluded_folders=[str(repo / "real" / "private")])
    by_link = Privacy(excluded_folders=[str(repo / "link" / "private")])
    for privacy in (by_real, by_link):
        for root in ("real", "link"):
            uri = (repo / root / "private" / "keys.py").as_uri()
            assert privacy.reason(uri, b"") is not None, (root, privacy.excluded_folders)


@pytest.mark.parametrize("name", [".envrc", "infra/prod.tfstate", "prod.tfstate.backup",
                                  "vars/prod.tfvars", "x.auto.tfvars", "a.tfvars.json",
                                  ".kube/config", "home/u/.docker/config.json",
                                  ".vault-token", ".my.cnf", ".s3cfg"])
def test_credential_files_are_withheld_by_name(name: str) -> None:
    assert Privacy().reason(f"file:///work/repo/{name}", b"") is not None


@pytest.mark.parametrize("name", ["src/config", "app/config.json", "docker/compose.yaml",
                                  "terraform/main.tf"])
def test_files_that_only_look_alike_are_not(name: str) -> None:
    assert Privacy().reason(f"file:///work/repo/{name}", b"") is None


def test_the_index_does_not_follow_a_link_out_of_the_workspace(repo: Path) -> None:
    outside = repo / "outside.py"
    outside.write_text("def vendor_secret():\n    return 2\n")
    (repo / "real" / "vendor.py").symlink_to(outside)
    (repo / "real" / "alias.py").symlink_to(repo / "real" / "app.py")  # inside: kept
    index = WorkspaceIndex(repo / "real")
    walked = set(index.walk())
    assert "vendor.py" not in walked
    assert {"app.py", "alias.py"} <= walked
