"""When Python's cyclic garbage collector runs: between requests, not inside them.

Measured in `bench typing` (300 keys, stdlib workspace): the collector's own schedule ran
about 130 young-generation passes of 1-4 ms and five full passes of 80-100 ms (one of
675 ms while the index was built), each landing inside whatever request was running.
So: once the engine and the index are up, the heap is collected and frozen (the index,
the model's tokenizer and vLLM's client objects are never scanned again), and after each
answer has been sent the young generations are collected while the user reads it, so
that the collector seldom has a reason to start in the middle of a request.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time

log = logging.getLogger(__name__)


def settle() -> None:
    """Collect everything, then freeze what survived: it is long-lived by now."""
    started = time.perf_counter()
    gc.collect()
    gc.freeze()
    log.info("heap settled in %.0f ms (%d objects frozen)",
             (time.perf_counter() - started) * 1000, gc.get_freeze_count())


def collect_young_soon() -> None:
    """Collect the young generations once the current callbacks (the response) are done."""
    with contextlib.suppress(RuntimeError):  # no loop (the CLI's one-shot completion)
        asyncio.get_running_loop().call_soon(gc.collect, 1)
