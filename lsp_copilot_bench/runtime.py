"""A private runtime folder for the servers a benchmark starts: the shared engines they
load live there, apart from the user's own, and are stopped when the benchmark ends (a
shared engine otherwise stays loaded for `engineIdleMinutes` after its last server)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def private_runtime() -> Iterator[dict[str, str]]:
    """The environment for the benchmark's servers; their engines stop on leaving."""
    runtime = Path(tempfile.mkdtemp(prefix="lc-bench-run-"))
    runtime.chmod(0o700)
    env = {**os.environ, "LSP_COPILOT_RUNTIME_DIR": str(runtime)}
    try:
        yield env
    finally:
        subprocess.run([sys.executable, "-m", "lsp_copilot", "engine", "stop"], env=env,
                       capture_output=True, timeout=300, check=False)
        for leftover in runtime.iterdir():
            leftover.unlink(missing_ok=True)
        runtime.rmdir()
