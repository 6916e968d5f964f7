"""scripts/gpu-check.sh --dry-run: the GPU release check checks its own steps on a CPU
(the extra, each command, doctor's CUDA preview, the e2e collection, the table), so that
it still works the day someone runs it on a GPU. An end-to-end check of the script (it
runs the command line six times and collects these e2e tests), so it is not a unit test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_dry_run_passes(tmp_path: Path) -> None:
    out = subprocess.run(
        [str(ROOT / "scripts" / "gpu-check.sh"), "--dry-run", "--work", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "PY": sys.executable})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "doctor: device cuda" in out.stdout
    assert "| device | cuda |" in out.stdout and "| e2e tests |" in out.stdout
    for step in range(1, 8):
        assert f"== gpu-check {step}:" in out.stderr
    assert not (tmp_path / "venv").exists()  # a dry run installs nothing
