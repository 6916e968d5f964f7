"""Prefetch: the suggestion that follows an accepted one, computed before it is asked for
(llama.vim's speculative request); typing-through and the cache then answer it at once.
"""

from __future__ import annotations

import asyncio
import logging

from lsp_copilot.documents.buffer import Encoding, PositionError
from lsp_copilot.documents.store import DocumentError, DocumentStore
from lsp_copilot.pipeline.completer import Completer

log = logging.getLogger(__name__)

PREFETCH_WAIT_S = 0.5
"""How long the accepted text may take to reach the document (its didChange)."""


async def prefetch_after(completer: Completer, store: DocumentStore, encoding: Encoding,
                         uri: str, line: int, character: int, text: str) -> None:
    """Complete where ``text``, accepted at (``line``, ``character``), ends.

    The accepted text reaches us as a didChange that may come before or after the
    acceptance: wait until the document holds it, then complete at its end.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PREFETCH_WAIT_S
    encoded = text.encode("utf-8", "surrogatepass")
    while True:
        try:
            start = store.get_offset(uri, line, character, encoding)
            snapshot = store.snapshot(uri)
        except (DocumentError, PositionError):
            return
        end = start + len(encoded)
        if snapshot.data[start:end] == encoded:
            break
        if loop.time() > deadline:
            return
        await asyncio.sleep(0.02)
    completer.telemetry.count("prefetched")
    try:
        await completer.complete(snapshot, end, prefetch=True)
    except Exception:
        log.exception("prefetch failed")
