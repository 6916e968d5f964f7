"""The rules that turn raw model text into what the editor should insert: those that read
the text, and those that read the document with the answer in it.

The stop rules run while streaming (``stop.stop_rule``, so that generation stops as soon
as the answer is complete, freeing the engine; only cheap text rules), and on the final
text only where the stream was not cut by them (text from another cursor's generation,
the cache, an answer that ran to its end); then the ordered checks of ``checks.py``: text cleanup
(``cleanup``), a line cut where the model loops, its brackets closed (``loops``),
brackets and quotes (``brackets``), a statement spread over lines put on one where it
fits and so a docstring of one line of text (``one_line``), a copy of the line's typed
part at the answer's start dropped (``restated``) -- ``clean_text`` -- then the
rules that read the document's tree with the completion inserted (``syntax``) to cut a
multi-line answer where the block it fills ends, and to keep only what is whole: an answer
that would leave the file worse than before the line was typed is cut to its longest
whole run of lines, or not shown -- ``keep_whole_answer``.

Language knowledge (which tree-sitter nodes are blocks, the bracket pairs, the quote
characters) comes from ``grammars/<language>/language.json``.
"""

from __future__ import annotations

from lsp_copilot.language.folders import LanguageConfig
from lsp_copilot.language.trigger import Mode
from lsp_copilot.postprocess import (
    brackets,
    cleanup,
    loops,
    one_line,
    restated,
    stop,
    syntax,
)
from lsp_copilot.postprocess.cursor_text import Cursor
from lsp_copilot.postprocess.whole import WholeChecker


def clean_text(text: str, mode: Mode, cursor: Cursor, rules: LanguageConfig,
               truncated: bool = False, ruled: bool = False) -> str:
    """The rules that read only the text and the lines around the cursor; "" when nothing
    is left. ``truncated``: the generation ended at its token limit; ``ruled``: the
    stream was cut where the stop rule said (text of another cursor's generation, the
    cache or an uncut end still takes it here)."""
    if mode == "none":
        return ""
    text = cleanup.drop_invisible(text)
    cut = None if ruled else stop.stop_rule(mode, cursor)(text + "\n")
    if cut is not None:
        text = text[:cut]
    text = stop.skip_leading_blank_lines(text, cursor)
    text = cleanup.drop_word_continuation(text, cursor)
    text = restated.drop_restated_typing(text, cursor)
    if cursor.prompt_dropped_indent:
        text = cleanup.reindent(text, cursor)
    text = loops.close_at_loop(text, cursor)
    text = cleanup.trim(text)
    if not text:
        return ""
    text = cleanup.drop_repetition(text)
    text = cleanup.drop_repeats_of_neighbours(text, mode, cursor)
    text = brackets.balance(text, mode, cursor, rules)
    text = one_line.join_spread_statement(text, cursor)  # (its first statement)
    text = one_line.join_docstring(text, cursor)
    if mode == "multi-line":
        text = brackets.drop_unfinished_tail(text, rules)
        text = brackets.drop_unfinished_answer(text, rules, truncated)
    return cleanup.trim(text)


def keep_whole_answer(text: str, mode: Mode, whole: WholeChecker, rules: LanguageConfig
                      ) -> str:
    """``text`` as much of it as is whole in the document (see ``syntax.keep_whole``); a
    multi-line answer ends where the block it fills ends."""
    text = syntax.keep_whole(text, whole)
    if mode == "multi-line" and text:
        block = syntax.cut_at_block_end(text, whole, rules)
        text = block if block == text else syntax.keep_whole(cleanup.trim(block), whole)
    return cleanup.trim(text)
