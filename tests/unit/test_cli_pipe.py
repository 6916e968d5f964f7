"""A command whose reader closes the pipe early (`lsp-copilot model list --json | head -1`)
ends quietly: exit code 1, nothing on stderr, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("command", [
    ["model", "list", "--json"],
    ["model", "list"],
    ["doctor", "--json"],  # a quiet command: its result goes to a private copy of stdout
], ids=" ".join)
def test_a_reader_that_closes_early_gets_no_traceback(command: list[str],
                                                      tmp_path: Path) -> None:
    # The reader closes its end before the command writes a byte (`head` at its first
    # line, as early as it can be): every write then fails with EPIPE, deterministically.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        run = subprocess.run(
            [sys.executable, "-m", "lsp_copilot", *command], stdout=write_end,
            stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT,
            env={**os.environ, "LSP_COPILOT_LOG_FILE": str(tmp_path / "log")})
    finally:
        os.close(write_end)
    assert run.stderr == ""
    assert run.returncode == 1
