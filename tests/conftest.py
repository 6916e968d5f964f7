"""Every test run keeps its shared engines in a folder of its own (never the user's), and
stops them when it ends: nothing of a test run stays loaded.

The folder is chosen before the test modules are imported: some copy the environment at
import time for the servers they start, and those servers must find it too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

RUNTIME_DIR = "LSP_COPILOT_RUNTIME_DIR"
OWN_FOLDER = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    # No background compile of the typing engine (two minutes of both cores) under tests
    # that time what they do; the one test of it sets this to 1.
    os.environ.setdefault("LSP_COPILOT_COMPILE_LATER", "0")
    if os.environ.get(RUNTIME_DIR):  # the caller chose (and stops) them
        return
    folder = tempfile.mkdtemp(prefix="lc-rt-")
    os.chmod(folder, 0o700)
    os.environ[RUNTIME_DIR] = folder
    config.stash[OWN_FOLDER] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(OWN_FOLDER, None)
    if folder is None:
        return
    subprocess.run([sys.executable, "-m", "lsp_copilot", "engine", "stop"],
                   capture_output=True, timeout=300, check=False)
    shutil.rmtree(folder, ignore_errors=True)
    os.environ.pop(RUNTIME_DIR, None)
