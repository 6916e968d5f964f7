"""P2: the call sites of the function being written (``call_sites.py``), definitions of
what is referenced near the cursor, from this file, then from the workspace index; then
this file's outline, nearest the cursor first."""

from __future__ import annotations

from lsp_copilot.context.index.symbols import Definition
from lsp_copilot.context.layers import call_sites
from lsp_copilot.context.layers.blocks import Block
from lsp_copilot.context.layers.layer_inputs import LayerInputs


def candidates(r: LayerInputs, first_line: int) -> list[Block]:
    """P2's blocks in priority order (``first_line``: the window's first line)."""
    strong: list[Block] = call_sites.candidates(r, first_line)
    imported_files = {target for _, target, _ in r.resolved}
    open_files, recent = r.open_and_recent()
    # A plain identifier (not a call, type or qualifier) is often a local variable that
    # merely shares its name with a field somewhere: such matches come after the rest.
    weak: list[Block] = []
    for name in r.references:
        captured = name in r.captured
        defined = False
        local: list[Definition] = []
        for d in r.symbols.iter_named(name):
            defined = True
            if not r.visible(d, first_line) and not r.encloses(d):
                local.append(d)
                if len(local) == 2:
                    break
        if local:
            kept = captured or local[0].container is None
            (strong if kept else weak).extend(r.block_for(r.path, d) for d in local[:2])
            continue
        if defined:
            continue  # defined in the window itself
        if r.index is not None:
            ranked = r.index.ranked(name, r.rel, imported_files, open_files, recent,
                                    r.q.grammar, limit=1)
            for rel, d in ranked[:1]:
                kept = (captured and d.kind != "field") or rel in imported_files
                (strong if kept else weak).append(r.block_for(rel, d))
    # Then this file's outline: top-level definitions nearest the cursor first.
    row, offset = r.cursor_row, r.offset
    outline = [(abs(line - row), line, d)
               for line, start, end, d in r.symbols.top_level_rows()
               if d.kind not in ("constant", "field")
               and not first_line <= line <= row  # visible
               and not start <= offset < end]  # encloses the cursor
    outline.sort(key=lambda o: (o[0], o[1]))
    outline_blocks = [Block(r.path, line,
                            d.summary if d.kind in ("class", "interface") else d.signature)
                      for _, line, d in outline]
    # Measured on the standard library (bench context): weak matches before this file's
    # outline gave a definition recall of 0.47, after it 0.41.
    return strong + weak + outline_blocks
