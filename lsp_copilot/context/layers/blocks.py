"""The unit every extra layer is made of: a block of whole lines from one file, and the
greedy fill of a layer's allowance with blocks in priority order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from lsp_copilot.language.grammars import LanguageQueries
from lsp_copilot.tokens import TokenCounter


class Block(NamedTuple):  # a tuple: hundreds are made per build
    path: str
    line: int  # 0-based
    body: str  # whole lines, ending with a newline


@dataclass
class Filled:
    blocks: list[Block] = field(default_factory=list)
    tokens: int = 0
    truncated: bool = False


def render(q: LanguageQueries | None, blocks: list[Block]) -> str:
    """The blocks as code, each file's first block headed by a comment with its path."""
    out: list[str] = []
    last_path = None
    comment = q.comment if q is not None else "#"
    for block in blocks:
        if block.path != last_path:
            out.append(f"{comment} {block.path}\n")
            last_path = block.path
        out.append(block.body)
    return "".join(out)


def fill(q: LanguageQueries | None, counter: TokenCounter, candidates: list[Block],
         allowance: int) -> Filled:
    """Greedy in priority order: keep each block that still fits; never split one."""
    filled = Filled()
    seen: set[tuple[str, str]] = set()
    comment = q.comment if q is not None else "#"
    paths = set()
    for block in candidates:
        key = (block.path, block.body)
        if key in seen:
            continue
        seen.add(key)
        # Counted block by block (each ends with a newline, so counts nearly add up; the
        # whole prompt is checked at the end): re-counting the layer per block is quadratic.
        cost = counter.count(block.body)
        if block.path not in paths:
            cost += counter.count(f"{comment} {block.path}\n")
        if filled.tokens + cost <= allowance:
            filled.blocks.append(block)
            filled.tokens += cost
            paths.add(block.path)
        else:
            filled.truncated = True
            if allowance - filled.tokens < 8:
                break
    return filled


def line_start(data: bytes, offset: int) -> int:
    """Byte offset of the start of the line holding ``offset``."""
    return data.rfind(b"\n", 0, offset) + 1
