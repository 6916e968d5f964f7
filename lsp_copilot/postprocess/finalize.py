"""Turn raw model text into what the editor should insert.

The rules run twice: while streaming (``stop.stop_rule``, so that generation stops as soon
as the answer is complete, freeing the engine; only cheap text rules) and once on the final
text (``finalize``): the stop rules again, text cleanup (``cleanup``), brackets and quotes
(``brackets``), a statement spread over lines put on one where it fits (``one_line``),
then the rules that re-parse the document with the completion inserted (``syntax``) to cut
a multi-line answer where the block it fills ends, and to keep only what is whole: an
answer that would leave the file worse than before the line was typed is cut to its
longest whole run of lines, or not shown.

Language knowledge (which tree-sitter nodes are blocks, the bracket pairs, the quote
characters) comes from ``grammars/<language>/language.json``.
"""

from __future__ import annotations

from lsp_copilot.documents.store import Snapshot
from lsp_copilot.language.folders import language_config
from lsp_copilot.language.trigger import Mode
from lsp_copilot.postprocess import brackets, cleanup, one_line, stop, syntax
from lsp_copilot.postprocess.cursor_text import Cursor
from lsp_copilot.postprocess.whole import WholeChecker


def finalize(text: str, mode: Mode, cursor: Cursor, snapshot: Snapshot | None = None,
             offset: int | None = None, truncated: bool = False) -> str:
    """Clean the final text; an empty string means 'no suggestion'. ``truncated``: the
    generation ended at its token limit."""
    if mode == "none":
        return ""
    cut = stop.stop_rule(mode, cursor)(text + "\n")
    if cut is not None:
        text = text[:cut]
    text = stop.skip_leading_blank_lines(text, cursor)
    text = cleanup.drop_word_continuation(text, cursor)
    if cursor.prompt_dropped_indent:
        text = cleanup.reindent(text, cursor)
    text = cleanup.trim(text)
    if not text:
        return ""
    rules = language_config(snapshot.grammar if snapshot is not None else None)
    text = cleanup.drop_repetition(text)
    text = cleanup.drop_repeats_of_neighbours(text, mode, cursor)
    text = brackets.balance(text, mode, cursor, rules)
    if mode == "single-line":
        text = one_line.join_spread_statement(text, cursor)
    if mode == "multi-line":
        text = brackets.drop_unfinished_tail(text, rules)
        text = brackets.drop_unfinished_answer(text, rules, truncated)
    if snapshot is not None and offset is not None:
        checker = WholeChecker(snapshot, offset)
        text = syntax.keep_whole(cleanup.trim(text), checker)
        if mode == "multi-line" and text:
            block = syntax.cut_at_block_end(text, snapshot, offset, rules)
            text = block if block == text else syntax.keep_whole(cleanup.trim(block), checker)
    return cleanup.trim(text)
