"""The server and its helper processes work in a folder of their own, never the user's
project (whose calendar.py would replace the standard library's), and what named a path
relative to the first folder keeps its meaning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from lsp_copilot.paths import helper_cwd
from lsp_copilot.process import python_command

LEAVE = """
import json, os, sys
from lsp_copilot.paths import anchored, leave_launch_folder
first = os.getcwd()
leave_launch_folder()
print(json.dumps({"cwd": os.getcwd(), "first_on_path": first in sys.path or "" in sys.path,
                  "cache": os.environ["LSP_COPILOT_CACHE_DIR"],
                  "model": anchored("models/mine", only_existing=True),
                  "preset": anchored("smollm2-135m", only_existing=True),
                  "log": anchored("logs/x.log"), "absolute": anchored("/etc/x")}))
"""


def test_the_server_leaves_the_project_and_keeps_its_relative_paths(tmp_path: Path) -> None:
    project, runtime = tmp_path / "project", tmp_path / "rt"
    (project / "models" / "mine").mkdir(parents=True)
    (project / "calendar.py").write_text("raise SystemExit('imported from the workspace')\n")
    env = dict(os.environ, LSP_COPILOT_RUNTIME_DIR=str(runtime), LSP_COPILOT_CACHE_DIR="c")
    out = subprocess.run([sys.executable, "-c", LEAVE], cwd=project, env=env, check=True,
                         capture_output=True, text=True, timeout=60)
    seen = json.loads(out.stdout)
    assert seen["cwd"] == str(runtime) and not seen["first_on_path"]
    assert (runtime.stat().st_mode & 0o777) == 0o700
    assert seen["cache"] == str(project / "c")
    assert seen["model"] == str(project / "models" / "mine")
    assert seen["preset"] == "smollm2-135m"  # a name, not a path here
    assert seen["log"] == str(project / "logs" / "x.log") and seen["absolute"] == "/etc/x"


def test_helpers_start_without_their_folder_on_sys_path(tmp_path: Path) -> None:
    """``python -P`` (3.11+): a helper started in a folder with a calendar.py imports the
    standard library's."""
    (tmp_path / "calendar.py").write_text("raise SystemExit('imported from the workspace')\n")
    code = "import calendar; print(calendar.__file__)"
    out = subprocess.run(python_command("-c", code), cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, check=False)
    if sys.version_info >= (3, 11):
        assert out.returncode == 0 and str(tmp_path) not in out.stdout, out
    out = subprocess.run(python_command("-c", code), cwd=helper_cwd(), capture_output=True,
                         text=True, timeout=60, check=True)
    assert "workspace" not in out.stdout + out.stderr


def test_a_runtime_folder_that_is_not_private_leaves_helpers_in_root(
        tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "open"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    monkeypatch.setenv("LSP_COPILOT_RUNTIME_DIR", str(folder))
    assert helper_cwd() == Path("/")
