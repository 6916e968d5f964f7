"""Turn raw model text into what the editor should insert.

The rules run twice: while streaming (``stop_at``, so that generation stops as soon as
the answer is complete, freeing the engine; only cheap text rules) and once on the final
text (``finalize``), which also re-parses the document with the completion inserted to
cut a multi-line answer where the block it fills ends, and to keep only what is whole
(``whole.py``): an answer that would leave the file worse than before the line was typed
is cut to its longest whole run of lines, or not shown.

Language knowledge (which tree-sitter nodes are blocks, the bracket pairs, the quote
characters) comes from ``grammars/<language>/language.json``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import tree_sitter

from lsp_copilot.documents.store import Snapshot
from lsp_copilot.language.trigger import BLOCK_OPENERS, Mode
from lsp_copilot.postprocess.rules import LanguageRules, rules_for
from lsp_copilot.postprocess.whole import WholeChecker, edited_tree, opens_block

MAX_LINES = 16
MIN_REPEATED_LINE = 4
"""A line repeating the suffix or the line above counts only with this many characters."""
NGRAM_REPEATS = 4
"""A run of the same token group this many times over is degenerate repetition."""


@dataclass(frozen=True)
class Cursor:
    """The text around the insertion point that the rules need."""

    line_before: str  # text of the cursor line before the cursor
    line_after: str  # text of the cursor line after the cursor
    prompt_dropped_indent: str = ""  # whitespace the prompt ends before (the model writes it)
    line_above: str = ""  # the nearest non-blank line above the cursor line
    suffix_lines: str = ""  # a few lines after the cursor line


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _skip_leading_blank_lines(text: str, cursor: Cursor) -> str:
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


def _open_quote(quote: str | None, line: str) -> str | None:
    """The triple quote left open after ``line`` (Python, Kotlin, Swift docstrings and
    text blocks), given the one open before it."""
    pos = 0
    while True:
        if quote is None:
            found = [(i, q) for q in ('"""', "'''") if (i := line.find(q, pos)) >= 0]
            if not found:
                return None
            pos, quote = min(found)
        else:
            end = line.find(quote, pos)
            if end < 0:
                return quote
            pos, quote = end, None
        pos += 3


def _body_follows(cursor: Cursor) -> bool:
    """The next non-blank line is indented deeper than the cursor line: a block header
    completed here already has its body."""
    following = next((x for x in cursor.suffix_lines.split("\n") if x.strip()), "")
    return bool(following) and _indent(following) > _indent(cursor.line_before)


def stop_rule(mode: Mode, cursor: Cursor) -> Callable[[str], int | None]:
    """Where to cut the text generated so far, or None to keep streaming."""

    def multi_line(text: str, header: bool = False) -> int | None:
        """``header``: the answer's first line opens a block; its body follows."""
        line_before = cursor.line_before
        body = _skip_leading_blank_lines(text, cursor)
        skipped = len(text) - len(body)
        lines = body.split("\n")
        complete = lines[:-1]  # the last piece may still grow
        if not complete:
            return None
        dropped = cursor.prompt_dropped_indent
        if dropped:
            first = complete[0]
            if first.strip() and _indent(first) < len(dropped):
                return skipped  # the model left the cursor's block at once: nothing to add
            # The first line's column: what the prompt kept of the line, then the model's.
            first = line_before[: len(line_before) - len(dropped)] + first
        else:
            first = line_before + complete[0]
        base = _indent(first) if first.strip() else _indent(line_before)
        blank_run = 0
        pos = skipped + len(complete[0]) + 1
        quote = _open_quote(None, first)
        for n, line in enumerate(complete[1:], start=1):
            inside, quote = quote, _open_quote(quote, line)
            if inside:  # a docstring's lines: their indentation and blank lines are text
                blank_run = 0
            elif not line.strip():
                blank_run += 1
                if blank_run >= 2:
                    return pos - 1
            elif header and _indent(line) <= base:
                # The block this answer opened has ended: keep its closer (`}`, `end`).
                closes = _indent(line) == base and (
                    line.strip()[:1] in "})]" or line.strip() in ("end", "end;"))
                return pos + len(line) if closes else pos - 1
            else:
                if _indent(line) < base or (blank_run and _indent(line) == base):
                    # Dedent: the block has ended. A blank line then a sibling: a new item.
                    return pos - 1
                blank_run = 0
            if n >= MAX_LINES:
                return pos - 1
            pos += len(line) + 1
        return None

    def single_line(text: str) -> int | None:
        start = next_line_start(text, cursor)
        if start is not None:  # the line is finished: suggest the next one
            newline = text.find("\n", start)
            return None if newline < 0 else newline
        body = _skip_leading_blank_lines(text, cursor)
        newline = body.find("\n")
        if newline < 0:
            return None
        if (not cursor.line_after.strip() and not _body_follows(cursor)
                and opens_block(cursor.line_before + body[:newline])):
            # A header with nothing under it would break the file: give it its body.
            return multi_line(text, header=True)
        return len(text) - len(body) + newline

    return single_line if mode == "single-line" else multi_line


# -- text rules ------------------------------------------------------------------------


def _reindent(text: str, cursor: Cursor) -> str:
    """The prompt ended before the cursor's last whitespace, so the model wrote it.

    Its first line's leading whitespace stands for that dropped part: take it off. When
    the model indented its first line more or less than the cursor is, shift the lines
    after it by the same amount, so its body keeps its shape under the cursor's block.
    """
    ws = cursor.prompt_dropped_indent
    kept = cursor.line_before[: len(cursor.line_before) - len(ws)]
    lines = text.split("\n")
    model = lines[0][: _indent(lines[0])]
    lines[0] = lines[0][len(model):]
    if model != ws and not kept.strip():
        for i in range(1, len(lines)):
            if lines[i].startswith(kept + model):
                lines[i] = cursor.line_before + lines[i][len(kept + model):]
    return "\n".join(lines)


def _drop_word_continuation(text: str, cursor: Cursor) -> str:
    """The prompt ended before a space the user typed after a word, and the model did not
    write that space: it went on with the word (``num_tokens`` + ``_per_head = ...``),
    which after the typed space would be broken code. No suggestion."""
    mid_line = cursor.prompt_dropped_indent and cursor.line_before.strip()
    return "" if mid_line and text and not text[0].isspace() else text


def _trim(text: str) -> str:
    """No trailing spaces, no trailing blank lines; whitespace alone is no suggestion."""
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines) if any(line.strip() for line in lines) else ""


def _content(line: str) -> bool:
    return len(line.strip()) >= MIN_REPEATED_LINE and any(c.isalnum() for c in line)


_TOKEN = re.compile(r"\w+|[^\w\s]")


def _degenerate_line(line: str) -> int | None:
    """Where a line falls into repeating one token group (with a name in it: not a
    table of numbers) over and over, or None."""
    tokens = [(m.start(), m.group()) for m in _TOKEN.finditer(line)]
    words = [t for _, t in tokens]
    for start in range(len(words)):
        for size in range(1, 5):
            unit = words[start:start + size]
            if len(unit) < size or not any(w[0].isalpha() or w[0] == "_" for w in unit):
                continue
            repeats = 1
            while words[start + repeats * size:start + (repeats + 1) * size] == unit:
                repeats += 1
            if repeats >= NGRAM_REPEATS:
                return tokens[start + size][0]  # keep the first copy
    return None


def _drop_repetition(text: str) -> str:
    """Cut where the model starts looping: a line (or group of lines) repeated right
    after itself, or a token group repeated many times in a line."""
    lines = text.split("\n")
    for k in range(1, len(lines)):
        for period in (1, 2, 3):
            if k < period or k + period > len(lines):
                continue
            now = [x.strip() for x in lines[k:k + period]]
            before = [x.strip() for x in lines[k - period:k]]
            if now == before and any(_content(x) for x in now):
                return "\n".join(lines[:k])
    pos = 0
    for line in lines:
        cut = _degenerate_line(line)
        if cut is not None:
            return text[:pos + cut].rstrip()
        pos += len(line) + 1
    return text


def _drop_repeats_of_neighbours(text: str, mode: Mode, cursor: Cursor) -> str:
    """Drop an answer that repeats the line above; cut where it reaches the suffix."""
    first = (cursor.line_before + text.split("\n", 1)[0]).strip()
    if _content(first) and first == cursor.line_above.strip():
        return ""
    after = cursor.line_after.strip()
    if after and text.strip() == after:
        return ""  # the model only repeated what is already after the cursor
    if after and text.rstrip().endswith(after):
        text = text.rstrip()[: -len(after)]  # don't insert a second copy of the suffix
    following = next((x.strip() for x in cursor.suffix_lines.split("\n") if x.strip()), "")
    if mode == "single-line" and text.startswith("\n") and text.strip() == following:
        return ""  # a next line the file already has
    if mode == "multi-line" and _content(following):
        lines = text.split("\n")
        for k, line in enumerate(lines):
            if line.strip() == following:
                return "\n".join(lines[:k])
    return text


def _scan(text: str, rules: LanguageRules) -> list[tuple[int, str]]:
    """Bracket characters of ``text`` with their positions, outside strings and comments."""
    return _scan_with_quote(text, rules)[0]


def _scan_with_quote(text: str, rules: LanguageRules) -> tuple[list[tuple[int, str]], str]:
    """``_scan``, and the quote still open at the end of ``text``."""
    out: list[tuple[int, str]] = []
    quote = ""
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 2
                continue
            if ch == quote or ch == "\n":
                quote = ""
        elif rules.comment and text.startswith(rules.comment, i):
            end = text.find("\n", i)
            if end < 0:
                break
            i = end
            continue
        elif ch in rules.quotes:
            quote = ch
        elif ch in rules.closers or any(b[0] == ch for b in rules.brackets):
            out.append((i, ch))
        i += 1
    return out, quote


def _open_brackets(text: str, rules: LanguageRules) -> list[str]:
    stack: list[str] = []
    for _, ch in _scan(text, rules):
        if ch in rules.closers:
            if stack and stack[-1] == rules.closers[ch]:
                stack.pop()
        else:
            stack.append(ch)
    return stack


def _unmatched_closers(text: str, rules: LanguageRules) -> int:
    depth = closers = 0
    for _, ch in _scan(text, rules):
        if ch in rules.closers:
            if depth:
                depth -= 1
            else:
                closers += 1
        else:
            depth += 1
    return closers


def _balance(text: str, mode: Mode, cursor: Cursor, rules: LanguageRules) -> str:
    """Cut at a closing bracket that closes nothing, or that the suffix already has."""
    before = cursor.line_before
    if mode == "multi-line":
        before = cursor.line_above + "\n" + before
        suffix = cursor.line_after + "\n" + cursor.suffix_lines
        # The closers the following lines start with (a block's `}`, a call's `)`).
        head = re.match(r"[\s" + re.escape("".join(rules.closers)) + r"]*", suffix)
        suffix_closers = sum(1 for c in (head.group() if head else "") if c in rules.closers)
    else:
        suffix_closers = _unmatched_closers(cursor.line_after, rules)
    outer = _open_brackets(before, rules)
    may_close = max(0, len(outer) - suffix_closers)
    inner: list[str] = []
    for pos, ch in _scan(text, rules):
        if ch not in rules.closers:
            inner.append(ch)
        elif inner:
            if inner[-1] != rules.closers[ch]:
                return text[:pos].rstrip()  # a mismatched closer: the model lost track
            inner.pop()
        elif outer and outer[-1] == rules.closers[ch] and may_close > 0:
            outer.pop()
            may_close -= 1
        else:
            return text[:pos].rstrip()  # closes nothing, or what the suffix closes
    return text


def _drop_unfinished_tail(text: str, rules: LanguageRules) -> str:
    """A multi-line answer the token limit cut mid-statement: keep it up to the last line
    where its brackets are balanced, without a trailing line that opens an empty block."""
    depth = 0
    balanced_end = -1
    newlines = [(i, "\n") for i, ch in enumerate(text) if ch == "\n"]
    for pos, ch in sorted(_scan(text, rules) + newlines):
        if ch == "\n":
            if depth == 0:
                balanced_end = pos
        elif ch in rules.closers:
            depth = max(0, depth - 1)
        else:
            depth += 1
    if depth > 0 and balanced_end > 0:
        text = text[:balanced_end]
    lines = text.split("\n")
    while len(lines) > 1 and lines[-1].rstrip().endswith(BLOCK_OPENERS):
        lines.pop()
    return "\n".join(lines) if depth > 0 else text


def _drop_unfinished_answer(text: str, rules: LanguageRules, truncated: bool) -> str:
    """A multi-line answer the token limit cut inside its first statement (an open
    bracket or string with no balanced line to keep, often a repetition run to the limit)
    is no suggestion: it would leave the file broken. A deadline's cut is not this: the
    generation goes on, and the rest comes as the user types."""
    if not truncated:
        return text
    brackets, quote = _scan_with_quote(text, rules)
    depth = 0
    for _, ch in brackets:
        depth = max(0, depth - 1) if ch in rules.closers else depth + 1
    return "" if depth or quote or _open_quote(None, text) else text


# -- the syntax tree rule --------------------------------------------------------------


_LAST_PARSE: list[tuple[Snapshot, int, str, tree_sitter.Tree | None]] = []
"""The last ``parse_inserted`` (the rules after ``_keep_parsing`` read the same tree)."""


def parse_inserted(snapshot: Snapshot, offset: int, text: str) -> tree_sitter.Tree | None:
    """The snapshot's tree with ``text`` inserted at ``offset``, or None without a grammar.

    An incremental re-parse of a copy of the snapshot's tree: about a millisecond even in
    a large file, so it runs once per finished completion (never per streamed token). The
    tree is read only, so the last one is reused for the same snapshot, offset and text.
    """
    if _LAST_PARSE and _LAST_PARSE[0][0] is snapshot and _LAST_PARSE[0][1:3] == (offset, text):
        return _LAST_PARSE[0][3]
    tree = _parse_inserted(snapshot, offset, text)
    _LAST_PARSE[:] = [(snapshot, offset, text, tree)]
    return tree


def _parse_inserted(snapshot: Snapshot, offset: int, text: str) -> tree_sitter.Tree | None:
    return edited_tree(snapshot, offset, offset, text.encode("utf-8"))


def _cut_at_block_end(text: str, snapshot: Snapshot, offset: int, rules: LanguageRules) -> str:
    """Cut where the block the completion fills ends, as the parser sees it with the
    completion inserted (a closing brace, a dedent, an ``end`` the model wrote)."""
    if not rules.blocks or not text:
        return text
    tree = parse_inserted(snapshot, offset, text)
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
    return inserted[: end - offset].decode("utf-8", "ignore").rstrip()


def _keep_whole(text: str, checker: WholeChecker) -> str:
    """Nothing that leaves the file worse than before the line was typed: an answer keeps
    its longest run of whole lines that is whole (not an unclosed string, a header with
    no body, C comments in Python), or is not shown."""
    if checker.is_whole(text):
        return text
    lines = text.split("\n")
    for end in range(len(lines) - 1, 0, -1):
        head = "\n".join(lines[:end]).rstrip()
        if head.strip() and checker.is_whole(head):
            return head
    return ""


def finalize(text: str, mode: Mode, cursor: Cursor, snapshot: Snapshot | None = None,
             offset: int | None = None, truncated: bool = False) -> str:
    """Clean the final text; an empty string means 'no suggestion'. ``truncated``: the
    generation ended at its token limit."""
    if mode == "none":
        return ""
    cut = stop_rule(mode, cursor)(text + "\n")
    if cut is not None:
        text = text[:cut]
    text = _skip_leading_blank_lines(text, cursor)
    text = _drop_word_continuation(text, cursor)
    if cursor.prompt_dropped_indent:
        text = _reindent(text, cursor)
    text = _trim(text)
    if not text:
        return ""
    rules = rules_for(snapshot.grammar if snapshot is not None else None)
    text = _drop_repetition(text)
    text = _drop_repeats_of_neighbours(text, mode, cursor)
    text = _balance(text, mode, cursor, rules)
    if mode == "multi-line":
        text = _drop_unfinished_tail(text, rules)
        text = _drop_unfinished_answer(text, rules, truncated)
    if snapshot is not None and offset is not None:
        checker = WholeChecker(snapshot, offset)
        text = _keep_whole(_trim(text), checker)
        if mode == "multi-line" and text:
            block = _cut_at_block_end(text, snapshot, offset, rules)
            text = block if block == text else _keep_whole(_trim(block), checker)
    return _trim(text)
