"""A private runtime folder for the servers a benchmark starts: the shared engines they
load live there, apart from the user's own, and are stopped when the benchmark ends (a
shared engine otherwise stays loaded for `engineIdleMinutes` after its last server)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
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


HANDOFF_WAIT_S = 900.0


def engines(env: dict[str, str]) -> list[dict[str, object]]:
    """`lsp-copilot engine status --json` for the benchmark's runtime folder."""
    out = subprocess.run([sys.executable, "-m", "lsp_copilot", "engine", "status", "--json"],
                         env=env, capture_output=True, text=True, timeout=120, check=True)
    rows: list[dict[str, object]] = json.loads(out.stdout)
    return rows


async def compiled_in_place(env: dict[str, str]) -> list[dict[str, object]]:
    """Until no engine is still to be replaced by its compiled copy (a CPU's typing
    engine loads eager, then compiles in the background): a replay measures the engine
    users have after the first minutes, not the compile beside it. Returns the engines."""
    deadline = time.monotonic() + HANDOFF_WAIT_S
    while True:
        rows = await asyncio.to_thread(engines, env)
        pending = [r for r in rows if r.get("successor_pending")]
        if not pending:
            return rows
        if time.monotonic() > deadline:
            raise SystemExit(f"the compiled engine did not take over: {pending}")
        await asyncio.sleep(2.0)
