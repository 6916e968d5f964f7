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
                                  "terraform.tfstate.1700000000.backup",
                                  "vars/prod.tfvars", "x.auto.tfvars", "a.tfvars.json",
                                  ".kube/config", "home/u/.docker/config.json",
                                  ".vault-token", ".my.cnf", ".s3cfg", ".terraformrc",
                                  ".dockercfg", "kubeconfig", "staging.kubeconfig",
                                  ".config/gh/hosts.yml", ".config/containers/auth.json",
                                  "Users/u/.Kube/Config", ".mylogin.cnf"])
def test_credential_files_are_withheld_by_name(name: str) -> None:
    assert Privacy().reason(f"file:///work/repo/{name}", b"") is not None


@pytest.mark.parametrize("path", [".kube/config", "home/u/.kube/config",
                                  "/home/u/.kube/config"])
def test_path_shaped_names_match_at_any_depth_also_as_plain_paths(path: str) -> None:
    assert Privacy().reason(path, b"") is not None


@pytest.mark.parametrize("name", ["src/config", "app/config.json", "docker/compose.yaml",
                                  "terraform/main.tf", "gh/hosts.yml", "web/auth.json",
                                  "pkg/kubeconfig/loader.go", "kubeconfig.go",
                                  "containers/auth.js", "kube/config"])
def test_files_that_only_look_alike_are_not(name: str) -> None:
    assert Privacy().reason(f"file:///work/repo/{name}", b"") is None


def test_an_openvpn_static_key_is_withheld_by_content() -> None:
    """Its body is hex lines no scanner tells from data: only the whole file is safe."""
    data = (b"client\nremote vpn.example.com 1194\n<tls-auth>\n"
            b"-----BEGIN OpenVPN Static key V1-----\n" + b"0f" * 16 + b"\n"
            b"-----END OpenVPN Static key V1-----\n</tls-auth>\n")
    assert Privacy().reason("file:///work/repo/office.conf", data) is not None


def test_an_ignored_link_in_a_workspace_opened_through_a_link_is_ignored(repo: Path) -> None:
    """The rule names the link (its target is an ordinary file): the link's own path, in
    the resolved root's terms, is checked too, not only what it points at."""
    (repo / "real" / "notes.py").write_text("NOTE = 1\n")
    (repo / "real" / "keys_link.py").symlink_to(repo / "real" / "notes.py")
    (repo / "real" / ".lspcopilotignore").write_text("private/\nkeys_link.py\n")
    ignores = RepoIgnores()
    ignores.add(repo / "link")
    privacy = Privacy(ignores=ignores)
    assert privacy.reason((repo / "link" / "keys_link.py").as_uri(), b"") is not None
    assert privacy.reason((repo / "link" / "notes.py").as_uri(), b"") is None


def test_an_unsaved_buffer_in_a_workspace_opened_through_a_link_is_ignored(repo: Path
                                                                           ) -> None:
    """A path not on disk yet resolves as far as its folders do."""
    ignores = RepoIgnores()
    ignores.add(repo / "link")
    privacy = Privacy(ignores=ignores)
    assert privacy.reason((repo / "link" / "private" / "new.py").as_uri(), b"") is not None
    assert privacy.reason((repo / "link" / "new.py").as_uri(), b"") is None


def test_the_index_does_not_follow_a_link_out_of_the_workspace(repo: Path) -> None:
    outside = repo / "outside.py"
    outside.write_text("def vendor_secret():\n    return 2\n")
    (repo / "real" / "vendor.py").symlink_to(outside)
    (repo / "real" / "alias.py").symlink_to(repo / "real" / "app.py")  # inside: kept
    index = WorkspaceIndex(repo / "real")
    walked = set(index.walk())
    assert "vendor.py" not in walked
    assert {"app.py", "alias.py"} <= walked


def test_the_index_does_not_follow_a_link_into_a_folder_it_skips(repo: Path) -> None:
    """A link to a file under a hidden or vendored folder would index it under the link's
    name, although the walk never enters that folder."""
    (repo / "real" / ".private").mkdir()
    (repo / "real" / ".private" / "creds.py").write_text("def token():\n    return 3\n")
    (repo / "real" / "creds_alias.py").symlink_to(repo / "real" / ".private" / "creds.py")
    index = WorkspaceIndex(repo / "real")
    assert "creds_alias.py" not in set(index.walk())


def test_reindexing_a_link_out_of_the_workspace_leaves_it_out(repo: Path) -> None:
    """Re-indexing by the workspace-relative name (a save, a watched-file event) reads
    from disk through the link: it is refused there too, not only by the walk."""
    outside = repo / "outside.py"
    outside.write_text("def vendor_secret():\n    return 2\n")
    (repo / "real" / "vendor.py").symlink_to(outside)
    index = WorkspaceIndex(repo / "real")
    index.build()
    assert index.update("vendor.py") is False
    assert index.file("vendor.py") is None and index.lookup("vendor_secret") == []
