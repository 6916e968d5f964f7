"""Every test run keeps its shared engines in a folder of its own (never the user's), and
stops them when it ends: nothing of a test run stays loaded."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def private_engines() -> Iterator[None]:
    if os.environ.get("LSP_COPILOT_RUNTIME_DIR"):  # the caller chose (and stops) them
        yield
        return
    with tempfile.TemporaryDirectory(prefix="lc-rt-") as folder:
        os.chmod(folder, 0o700)
        os.environ["LSP_COPILOT_RUNTIME_DIR"] = folder
        try:
            yield
        finally:
            subprocess.run([sys.executable, "-m", "lsp_copilot", "engine", "stop"],
                           capture_output=True, timeout=120, check=False)
            del os.environ["LSP_COPILOT_RUNTIME_DIR"]
