"""The collector runs between requests: start-up objects frozen, young ones after answers."""

from __future__ import annotations

import asyncio
import gc

from lsp_copilot import gc_timing


def test_settle_freezes_what_survived() -> None:
    kept = [[i] for i in range(1000)]  # long-lived containers, as the index's
    try:
        gc_timing.settle()
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()


async def test_young_generations_are_collected_after_the_current_callbacks() -> None:
    seen: list[int] = []
    gc.callbacks.append(lambda phase, info: phase == "start" and seen.append(
        info["generation"]))
    try:
        gc_timing.collect_young_soon()
        assert seen == []  # not inside the handler that asked
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert 1 in seen
    finally:
        gc.callbacks.pop()
