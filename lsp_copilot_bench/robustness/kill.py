"""Trial (d): the engine process killed mid-stream; suggestions must come back."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time

from lsp_copilot_bench.robustness.client import RawClient, engine_core_pids, suggestion
from lsp_copilot_bench.robustness.trial import Trial


async def _until_suggestion(client: RawClient, uri: str, line: int, char: int,
                            limit_s: float) -> tuple[float | None, int, int]:
    """Seconds until a suggestion comes back; requests sent; requests unanswered."""
    started = time.monotonic()
    sent = hung = 0
    while time.monotonic() - started < limit_s:
        sent += 1
        try:
            result = await asyncio.wait_for(client.inline(uri, line, char), 60)
        except TimeoutError:
            hung += 1
            continue
        if suggestion(result).strip():
            return time.monotonic() - started, sent, hung
        await asyncio.sleep(0.5)
    return None, sent, hung


async def trial_kill(client: RawClient) -> Trial:
    uri = "file:///kill/area.py"
    text = "def area(width, height):\n    return "
    client.open(uri, text)
    await client.drain()
    await client.wait_ready()
    pids = engine_core_pids(client.pid)
    if not pids:
        return Trial("engine-kill", False, "no EngineCore process found")
    before = await client.stats()
    for pid in pids:  # freeze first, so the request is surely mid-stream at the kill
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
    request = client.inline(uri, 1, 11)
    await client.drain()
    deadline = time.monotonic() + 30
    while True:
        s = await client.stats()
        if s["engine_requests"] > before["engine_requests"] and s["queue_depth"] >= 1:
            break
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    killed = time.monotonic()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    try:
        first = await asyncio.wait_for(request, 60)
        answered_s: float | None = time.monotonic() - killed
    except TimeoutError:
        first, answered_s = None, None
    back_s, sent, hung = await _until_suggestion(client, uri, 1, 11, limit_s=300)
    back_total = None if back_s is None else time.monotonic() - killed
    after = await client.stats()
    told = [m for m in client.messages if "engine stopped" in str(m.get("message", ""))]
    ok = (answered_s is not None and not suggestion(first) and back_total is not None
          and back_total <= 60 and hung == 0)
    return Trial("engine-kill", ok, (
        f"EngineCore SIGKILLed mid-stream: in-flight request answered "
        f"{'never' if answered_s is None else f'{answered_s:.2f} s'} later (empty); user told "
        f"{len(told)}x; suggestions back "
        f"{'never' if back_total is None else f'{back_total:.1f} s'} after the kill "
        f"({sent} requests meanwhile, {hung} hung); engine_restarts "
        f"+{after['engine_restarts'] - before['engine_restarts']}"),
        {"answered_s": answered_s, "back_s": back_total, "requests": sent, "hung": hung,
         "restarts": after["engine_restarts"] - before["engine_restarts"]})

