"""A command whose reader closes the pipe early (`lsp-copilot model list --json | head -1`)
ends quietly: exit code 1, nothing on stderr, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.models import smollm2_like_folder

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A local model folder with a small tokenizer (no prepared model needed)."""
    return str(smollm2_like_folder(tmp_path_factory.mktemp("model")))


@pytest.mark.parametrize("command", [
    "model list --json",
    "model list",
    # A quiet command: its result goes to a private copy of stdout.
    "context WORKSPACE/main.py:2:5 --json --model MODEL",
])
def test_a_reader_that_closes_early_gets_no_traceback(command: str, model: str,
                                                      tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # the workspace `context` indexes: this one file
    (tmp_path / "main.py").write_text("def area(r):\n    return \n")
    command = command.replace("WORKSPACE", str(tmp_path)).replace("MODEL", model)
    # The reader closes its end before the command writes a byte (`head` at its first
    # line, as early as it can be): every write then fails with EPIPE, deterministically.
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        run = subprocess.run(
            [sys.executable, "-m", "lsp_copilot", *command.split()],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT,
            env={**os.environ, "LSP_COPILOT_LOG_FILE": str(tmp_path / "log.txt")})
    finally:
        os.close(write_end)
    assert run.stderr == ""
    assert run.returncode == 1
