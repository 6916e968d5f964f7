"""`lsp-copilot bench starts`: start the shared engine again and again, as servers do,
and count the starts that reach ready (a start that hangs is killed by the watchdog and
tried once more, so a hang shows up as a retry or a failure, never as a stuck run)."""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.settings.engine import EngineSettings
from lsp_copilot.settings.layers import EngineSetup
from lsp_copilot.settings.supervision import SupervisionSettings


async def _one(settings: EngineSetup, runtime: Path) -> dict[str, Any]:
    manager = EngineManager()
    notices: list[str] = []
    manager.notify = lambda level, message: notices.append(f"{level}: {message}")
    started = time.monotonic()
    result = await manager.start(settings)
    seconds = round(time.monotonic() - started, 1)
    await manager.shutdown()
    subprocess.run([sys.executable, "-m", "lsp_copilot", "engine", "stop"], capture_output=True,
                   timeout=300, check=False, env={**os.environ,
                                                  "LSP_COPILOT_RUNTIME_DIR": str(runtime)})
    return {"ok": result.ok, "seconds": seconds, "message": result.message,
            "stalls": manager.telemetry.snapshot().get("engine_load_stalls", 0),
            "notices": notices}


async def _run(count: int, model: str | None) -> dict[str, Any]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="lc-starts-") as folder:
        runtime = Path(folder)
        runtime.chmod(0o700)
        os.environ["LSP_COPILOT_RUNTIME_DIR"] = folder
        settings = EngineSetup(EngineSettings(model=model or ""),
                               supervision=SupervisionSettings(engine_shared=True))
        for _ in range(count):
            rows.append(await _one(settings, runtime))
            print(f"start {len(rows)}: {rows[-1]['seconds']} s, "
                  f"{'ready' if rows[-1]['ok'] else rows[-1]['message']}", file=sys.stderr)
    times = [r["seconds"] for r in rows if r["ok"]]
    return {"model": model or "default", "starts": count,
            "ready": sum(r["ok"] for r in rows),
            "retried_after_a_hang": sum(bool(r["stalls"]) for r in rows),
            "seconds_median": statistics.median(times) if times else None,
            "seconds_max": max(times) if times else None,
            "failures": [r["message"] for r in rows if not r["ok"]]}


def run(count: int, model: str | None) -> dict[str, Any]:
    return asyncio.run(_run(count, model))
