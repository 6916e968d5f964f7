"""P3: symbols of the files this one imports, those referenced nearest the cursor first."""

from __future__ import annotations

from lsp_copilot.context.layers.blocks import Block
from lsp_copilot.context.layers.layer_inputs import MAX_NAMES, LayerInputs


def candidates(r: LayerInputs) -> list[Block]:
    """P3's blocks in priority order: by the rank of the name near the cursor, then by
    the order of the imports."""
    if r.index is None:
        return []
    refs = {name: i for i, name in enumerate(r.references)}
    found: list[tuple[int, int, Block]] = []
    for order, (module, target, names) in enumerate(r.resolved):
        entry = r.index.file(target)
        if entry is None or target == r.rel:
            continue
        alias = module.rsplit(".", 1)[-1].rsplit("/", 1)[-1].lstrip(".")
        blocks = r.cache.layers.imported_blocks(r.index, target, entry, names)
        if names:
            for name, block in blocks:
                found.append((refs.get(name, MAX_NAMES), order, block))
        else:
            near = refs.get(alias, MAX_NAMES)
            for name, block in blocks:
                rank = min(refs.get(name, MAX_NAMES + 1), near + 1)
                found.append((rank, order, block))
    found.sort(key=lambda c: (c[0], c[1], c[2].path, c[2].line))
    return [c[2] for c in found]
