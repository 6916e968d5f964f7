"""Streaming stop rules: where to cut the text generated so far, so that generation stops
as soon as the answer is complete and the engine is free sooner. Only cheap text rules run
here, on every streamed delta; the text check of ``checks.py`` runs them once more on the
final text."""

from __future__ import annotations

from collections.abc import Callable

from lsp_copilot.documents.store import Snapshot
from lsp_copilot.language.folders import LanguageConfig, language_config
from lsp_copilot.language.trigger import Mode
from lsp_copilot.postprocess.brackets import open_brackets, open_triple_quote
from lsp_copilot.postprocess.cursor_text import Cursor, indent
from lsp_copilot.postprocess.loops import find_loop
from lsp_copilot.postprocess.whole import opens_block

MAX_LINES = 16
"""A multi-line answer stops after this many lines."""


def skip_leading_blank_lines(text: str, cursor: Cursor) -> str:
    """At the start of an empty line, a leading newline is the model saying 'blank line'."""
    if cursor.line_before.strip():
        return text
    while "\n" in text and not text.split("\n", 1)[0].strip():
        text = text.split("\n", 1)[1]
    return text


def next_line_start(text: str, cursor: Cursor) -> int | None:
    """At the end of a line the user finished, a model that starts with a newline is
    suggesting the next line (as Copilot shows it): where that line starts, else None."""
    if not cursor.line_before.strip() or cursor.line_after.strip():
        return None
    head = len(text) - len(text.lstrip(" \t"))
    return head + 1 if text[head:head + 1] == "\n" else None


def header_cut(text: str, headers: frozenset[str]) -> int | None:
    """Where a finished line of ``text`` that is one of the prompt's file headers starts
    (the newline before it, or 0): the model began a new file there, the answer ends."""
    pos = 0
    for line in text.split("\n")[:-1]:  # finished lines only
        if line.strip() in headers:
            return max(0, pos - 1)
        pos += len(line) + 1
    return None


CONTINUATION_LINES = 4
"""A generation that goes on past its answer writes at most this many code lines."""


def continuation_end(text: str, start: int, rules: LanguageConfig | None = None
                     ) -> int | None:
    """Where a generation that answered up to the newline at ``start`` stops writing what
    the user will want after Enter: the end of the next code line, or None while it is
    being written. Blank and comment lines are passed over, a docstring is taken whole,
    a line that leaves a bracket open goes on to the line that closes it, and a block
    header goes on to its body's first code line: a header, a comment, an open bracket
    or an open docstring alone is never a whole answer there."""
    rules = rules or LanguageConfig()
    pos, lines, quote, logical = start + 1, 0, None, ""
    while (end := text.find("\n", pos)) >= 0:
        line = text[pos:end]
        inside, quote = quote, open_triple_quote(quote, line)
        pos = end + 1
        if quote is not None:  # a docstring under way
            continue
        passed_over = not line.strip() or (
            rules.comment and line.strip().startswith(rules.comment))
        if inside is None and passed_over and not logical:
            continue
        lines += 1
        logical += line + "\n"
        if inside is None and open_brackets(logical, rules) and lines < MAX_LINES:
            continue  # a statement over several lines: on to the line that closes it
        if inside is not None or not opens_block(logical) or lines >= CONTINUATION_LINES:
            return end
        logical = ""
    return None


def continuation(snapshot: Snapshot) -> Callable[[str, int], int | None]:
    """``continuation_end`` with the rules of the snapshot's language."""
    rules = language_config(snapshot.grammar)
    return lambda text, start: continuation_end(text, start, rules)


def statement_end(text: str, newline: int, first: str, rules: LanguageConfig, *,
                  header: bool = False) -> int | None:
    """Where the statement whose first line is ``first`` (ending at ``text[newline]``)
    ends: that newline, or, when the line leaves a bracket open (``raise E(``), the end
    of the line that closes it (None while it is being written). A statement still open
    after ``MAX_LINES``, or one that turns out to be a block header, ends at ``newline``:
    a fragment, which the whole check drops; with ``header`` a header ends where its
    brackets close (the user is typing it: its body comes after Enter)."""
    if not open_brackets(first, rules):
        return newline
    pos = newline + 1
    for _ in range(MAX_LINES):
        end = text.find("\n", pos)
        if end < 0:
            return None
        logical = first + text[newline:end]
        if not open_brackets(logical, rules):
            return newline if opens_block(logical) and not header else end
        pos = end + 1
    return newline


def opens_docstring(line: str) -> str | None:
    """The triple quote that ``line`` starts and leaves open, followed by text (a
    docstring's first line), or None. A quote alone on its line may as well close one:
    the whole check judges that line."""
    quote = line.strip()[:3]
    if quote not in ('"""', "'''") or line.strip() == quote:
        return None
    return open_triple_quote(None, line)


def docstring_opener(line: str, above: str) -> str | None:
    """``opens_docstring``, and also a quote alone on the line right under a block header
    (``def f():``): there it starts the docstring, it cannot close one."""
    quote = line.strip()
    if quote in ('"""', "'''") and opens_block(above):
        return quote
    return opens_docstring(line)


def quote_end(text: str, newline: int, quote: str) -> int | None:
    """The end of the line after ``newline`` that closes the triple ``quote`` (a
    docstring is offered whole or not at all), or None while it is open."""
    pos = newline + 1
    for _ in range(MAX_LINES):
        end = text.find("\n", pos)
        if end < 0:
            return None
        if open_triple_quote(quote, text[pos:end]) is None:
            return end
        pos = end + 1
    return newline  # too long for a suggestion: the lines above it only


def _closes_block(line: str, base: int) -> bool:
    """``line`` is the closer (`}`, `end`) of a block whose header is indented ``base``."""
    return indent(line) == base and (
        line.strip()[:1] in "})]" or line.strip() in ("end", "end;"))


def _body_follows(cursor: Cursor) -> bool:
    """The next non-blank line is indented deeper than the cursor line: a block header
    completed here already has its body."""
    following = next((x for x in cursor.suffix_lines.split("\n") if x.strip()), "")
    return bool(following) and indent(following) > indent(cursor.line_before)


def _first_line(first: str, cursor: Cursor) -> str | None:
    """The answer's first line as the file will have it, from the cursor line's start (the
    prompt may have dropped some of that line's indentation), or None when the model left
    the cursor's block at once: then there is nothing to add."""
    line_before = cursor.line_before
    dropped = cursor.prompt_dropped_indent
    if not dropped:
        return line_before + first
    if first.strip() and indent(first) < len(dropped):
        return None
    # The first line's column: what the prompt kept of the line, then the model's.
    return line_before[: len(line_before) - len(dropped)] + first


def _block_end(lines: list[str], first: str, line_before: str, pos: int,
               header: bool) -> int | None:
    """Where the answer whose ``first`` line is followed by the finished ``lines``
    (the first of them at ``pos``) ends: at two blank lines, a dedent, a blank line then
    a sibling, or ``MAX_LINES``; with ``header``, where the block it opens ends. None
    while none of these came."""
    base = indent(first) if first.strip() else indent(line_before)
    blank_run = 0
    quote = open_triple_quote(None, first)
    for n, line in enumerate(lines, start=1):
        inside, quote = quote, open_triple_quote(quote, line)
        if inside:  # a docstring's lines: their indentation and blank lines are text
            blank_run = 0
        elif not line.strip():
            blank_run += 1
            if blank_run >= 2:
                return pos - 1
        elif header and indent(line) <= base:
            # The block this answer opened has ended: keep its closer (`}`, `end`).
            return pos + len(line) if _closes_block(line, base) else pos - 1
        else:
            if indent(line) < base or (blank_run and indent(line) == base):
                # Dedent: the block has ended. A blank line then a sibling: a new item.
                return pos - 1
            blank_run = 0
        if n >= MAX_LINES:
            return pos - 1
        pos += len(line) + 1
    return None


def _multi_line(text: str, cursor: Cursor, header: bool = False) -> int | None:
    """The multi-line mode's rule: the answer is a block of lines. ``header``: the
    answer's first line opens a block; its body follows."""
    body = skip_leading_blank_lines(text, cursor)
    skipped = len(text) - len(body)
    complete = body.split("\n")[:-1]  # the last piece may still grow
    if not complete:
        return None
    first = _first_line(complete[0], cursor)
    if first is None:
        return skipped
    return _block_end(complete[1:], first, cursor.line_before,
                      skipped + len(complete[0]) + 1, header)


def _body_end(text: str, newline: int, base: int) -> int | None:
    """Where the body under a block header (indented ``base``, ending at ``newline``)
    ends: its closer kept (`}`, `end`), at ``MAX_LINES``, or None while it is written."""
    pos, lines = newline + 1, 0
    while (end := text.find("\n", pos)) >= 0:
        line = text[pos:end]
        if line.strip() and indent(line) <= base:
            return end if lines and _closes_block(line, base) else pos - 1
        lines += 1
        if lines >= MAX_LINES:
            return end
        pos = end + 1
    return None


def _next_line(text: str, start: int, cursor: Cursor) -> int | None:
    """The line after a finished one; a block header comes with its body, a
    docstring whole."""
    newline = text.find("\n", start)
    if newline >= 0 and (
            quote := docstring_opener(text[start:newline], cursor.line_before)):
        return quote_end(text, newline, quote)
    if newline < 0:
        return None
    if not opens_block(text[start:newline]):
        return statement_end(text, newline, text[start:newline], cursor.rules)
    return _body_end(text, newline, indent(text[start:newline]))


def _single_line(text: str, cursor: Cursor, spans: bool) -> int | None:
    """The single-line mode's rule: the cursor line's statement, or the next line when
    the typed one is finished. ``spans``: a statement may span lines from here."""
    start = next_line_start(text, cursor)
    if start is not None and spans and open_brackets(cursor.line_before, cursor.rules):
        # The typed line ends inside brackets (``f(``): the lines that follow are its
        # statement's, up to the line that closes them.
        return statement_end(text, start - 1, cursor.line_before, cursor.rules,
                             header=True)
    if start is not None:  # the line is finished: suggest the next one
        return _next_line(text, start, cursor)
    body = skip_leading_blank_lines(text, cursor)
    newline = body.find("\n")
    if newline < 0:
        return None
    first = cursor.line_before + body[:newline]
    above = cursor.line_above if not cursor.line_before.strip() else ""
    if not cursor.line_after.strip() and (quote := docstring_opener(first, above)):
        return quote_end(text, len(text) - len(body) + newline, quote)
    if (not cursor.line_after.strip() and not _body_follows(cursor)
            and opens_block(first)):
        # A header with nothing under it would break the file: give it its body.
        return _multi_line(text, cursor, header=True)
    if not spans:
        return len(text) - len(body) + newline
    return statement_end(text, len(text) - len(body) + newline, first, cursor.rules)


def stop_rule(mode: Mode, cursor: Cursor) -> Callable[[str], int | None]:
    """Where to cut the text generated so far, or None to keep streaming."""
    # A statement may span lines from here, unless the file already goes on under it
    # (the rest of a call or an import list the user is filling in).
    spans = not cursor.line_after.strip() and not _body_follows(cursor)

    def line_rule(text: str) -> int | None:
        if mode == "single-line":
            return _single_line(text, cursor, spans)
        return _multi_line(text, cursor)

    def rule(text: str) -> int | None:
        """The mode's rule, or sooner where the answer's line starts looping (its
        evidence kept, for ``loops.close_at_loop`` to cut and close the line)."""
        own = line_rule(text)
        loop = find_loop(text, cursor)
        if loop is None:
            return own
        return loop.seen if own is None else min(own, loop.seen)

    if not cursor.prompt_headers:
        return rule

    def before_header(text: str) -> int | None:
        """The rule, cut sooner where the model began a new file (a prompt's header)."""
        cut = header_cut(text, cursor.prompt_headers)
        if cut is None:
            return rule(text)
        own = rule(text[:cut] + "\n")
        return cut if own is None else min(own, cut)

    return before_header
