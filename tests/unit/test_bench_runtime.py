"""A benchmark's servers get a runtime folder of their own, gone when the benchmark ends."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from lsp_copilot_bench.runtime import private_runtime


def test_the_private_runtime_folder_is_private_and_removed() -> None:
    with private_runtime() as env:
        folder = Path(env["LSP_COPILOT_RUNTIME_DIR"])
        assert folder.is_dir() and folder != Path(os.environ.get(
            "LSP_COPILOT_RUNTIME_DIR", "/nonexistent"))
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        (folder / "left-by-a-server").write_text("")
    assert not folder.exists()
