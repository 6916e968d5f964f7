"""P4: the lines around other buffers' last edits, then snippets like the code above the
cursor from open buffers, this file out of the window's sight and the files next to it."""

from __future__ import annotations

from lsp_copilot.context.index.workspace import uri_to_path
from lsp_copilot.context.index.workspace_index import MAX_FILE_BYTES
from lsp_copilot.context.layers.blocks import Block, line_start
from lsp_copilot.context.layers.layer_inputs import LayerInputs
from lsp_copilot.context.layers.similarity import QUERY_LINES, Windows, similar_snippets

RECENT_EDITS = 2
EDIT_CONTEXT_LINES = 4
"""P4 shows this many lines each side of another buffer's last edit."""
MAX_NEIGHBOUR_WINDOWS = 1500
"""Files next to this one are searched as long as their windows come to no more than this
(a base build scores each window: about a microsecond each)."""


def candidates(r: LayerInputs, first_line: int) -> list[Block]:
    """P4's blocks in priority order (``first_line``: the window's first line)."""
    if r.workspace is None:
        return []
    docs: list[tuple[str, str, Windows, range | None]] = []
    texts: dict[str, tuple[str, str]] = {}
    open_rels = set()
    for uri, text in r.documents():
        if uri == r.snapshot.uri or _too_large(text):
            continue  # (a buffer larger than the index takes from disk: data, not code)
        rel = r.workspace.relative(uri)
        if rel is None:
            path = uri_to_path(uri)
            rel = path.name if path is not None else uri
        else:
            open_rels.add(rel)
        docs.append((rel, text, r.cache.layers.buffer_windows(text), None))
        texts[uri] = (rel, text)
    docs.sort(key=lambda d: d[0])
    # Recent edits first: the lines around the last edit of other open buffers (what
    # the user just wrote elsewhere is likely what they use here), most recent first.
    blocks = []
    # This document's own edits are not counted: the first keystroke in it would push
    # another buffer out and change the prompt from P4 on (the warm-up missed that).
    others = [(u, n) for u, n in r.workspace.recent_edits() if u != r.snapshot.uri]
    for uri, line in others[:RECENT_EDITS]:
        if uri in texts:
            rel, text = texts[uri]
            rows = text.split("\n")
            first = max(0, line - EDIT_CONTEXT_LINES)
            body = "\n".join(rows[first:line + EDIT_CONTEXT_LINES + 1]).rstrip("\n") + "\n"
            if body.strip():
                blocks.append(Block(rel, first, body))
    # This file's own code out of the window's sight (below the cursor, for a model
    # that reads no suffix, or far above), then the files next to it in the repository.
    own = r.data.decode("utf-8", "replace")
    docs.append((r.path, own, r.cache.layers.windows(own), range(first_line, r.cursor_row + 1)))
    if r.index is not None and r.rel is not None:
        room = MAX_NEIGHBOUR_WINDOWS
        for rel in r.cache.layers.neighbours(r.index, r.rel, r.q.grammar):
            if rel in open_rels:
                continue
            text, wins = r.cache.layers.disk_windows(r.index, rel)
            if wins:
                docs.append((rel, text, wins, None))
                room -= len(wins)
                if room <= 0:
                    break
    # The query is the lines above the cursor's line: the prompt's base is decided at
    # a line start and kept for many lines (build_context), so the snippets do not
    # change with each keystroke.
    end = line_start(r.data, r.offset)
    start = end
    for _ in range(QUERY_LINES):
        start = line_start(r.data, start - 1) if start > 0 else 0
    query = r.data[start:end].decode("utf-8", "replace")
    snippets = similar_snippets(query, docs)
    return blocks + [Block(s.name, s.start_line, s.text) for s in snippets]


def _too_large(text: str) -> bool:
    """Whether a buffer is over the index's size limit (bytes, as the file would be on
    disk; encoded only when its characters alone cannot tell)."""
    if len(text) > MAX_FILE_BYTES:
        return True
    return len(text) * 4 > MAX_FILE_BYTES and len(text.encode("utf-8", "replace")) > MAX_FILE_BYTES
