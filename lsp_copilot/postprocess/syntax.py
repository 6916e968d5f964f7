"""Rules that read the document's tree with the answer inserted: cut a multi-line answer
where the block it fills ends, and keep only what is whole (``whole.py``)."""

from __future__ import annotations

import tree_sitter

from lsp_copilot.language.folders import LanguageConfig
from lsp_copilot.postprocess.whole import WholeChecker, header_alone


def cut_at_block_end(text: str, whole: WholeChecker, rules: LanguageConfig) -> str:
    """Cut where the block the completion fills ends, as the parser sees it with the
    completion inserted (a closing brace, a dedent, an ``end`` the model wrote). The
    block's closing token is the suffix's, unless the file with the answer cut before it
    has more errors than with it (the model wrote the closer of a one-line body whose
    line the hole is: ``throw e; }``)."""
    if not rules.blocks or not text:
        return text
    insertion = whole.insertion
    offset = insertion.offset
    tree = insertion.tree(text)
    if tree is None:
        return text
    inserted = text.encode("utf-8")
    node: tree_sitter.Node | None = tree.root_node.descendant_for_byte_range(offset, offset)
    while node is not None and not (node.type in rules.blocks and node.start_byte <= offset
                                    and node.end_byte > offset):
        node = node.parent
    if node is None or node.has_error:
        return text
    end = node.end_byte
    last = node.children[-1] if node.children else None
    if last is not None and not last.is_named:
        end = last.start_byte  # the block's own closing token (`}`, `end`) is the suffix's
    if end >= offset + len(inserted):
        return text
    cut = inserted[: end - offset].decode("utf-8", "ignore").rstrip()
    if last is not None and end == last.start_byte and last.end_byte <= offset + len(inserted):
        closed = inserted[: last.end_byte - offset].decode("utf-8", "ignore")
        if _errors_after(whole, closed) < _errors_after(whole, cut):
            return closed
    return cut


def _errors_after(whole: WholeChecker, text: str) -> int:
    verdict = whole.check(text)
    return 0 if verdict is None else verdict.errors_after


def keep_whole(text: str, checker: WholeChecker) -> str:
    """Nothing that leaves the file worse than before the line was typed: an answer keeps
    its longest run of whole lines that is whole (not an unclosed string, a header with
    no body, C comments in Python), or the block header it completes on the typed line
    (whose body comes next), or is not shown."""
    if checker.is_whole(text):
        return text
    lines = text.split("\n")
    for end in range(len(lines) - 1, 0, -1):
        head = "\n".join(lines[:end]).rstrip()
        if head.strip() and checker.is_whole(head):
            return head
    return header_alone(checker, text)
