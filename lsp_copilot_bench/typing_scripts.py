"""The keys of ``bench typing``: which functions are typed, and how a user types them.

A function of 150-600 characters (a Python ``def``, or a brace language's function or
method found by tree-sitter with ``languages.FUNCTION_NODES``), not in a test file, is
typed key by key with human gaps; Enter takes the editor's indentation (Python's
``auto_indent``, else one level more after an opener) and the typist fixes the rest.
With ``autoclose`` the typist works in ``autoclose.Editor`` and goes to the closers it
put below with a ``move`` key.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lsp_copilot.language.ids import language_for, parser_for
from lsp_copilot_bench.autoclose import Change, Editor
from lsp_copilot_bench.corpus import python_files
from lsp_copilot_bench.languages import CORPORA, FUNCTION_NODES


@dataclass(frozen=True)
class Key:
    """One keystroke: insert ``text`` (or delete one character) then wait ``gap_ms``.
    ``move``: the user goes to the closer the editor put below (``text``: the intended
    whitespace, then that closer)."""

    text: str | None  # None: backspace
    gap_ms: float
    move: bool = False


@dataclass
class Script:
    uri: str
    before: str  # the file up to the function: context the user is typing into
    keys: list[Key]
    rel: str = ""  # path in the corpus
    after: str = ""  # the file after the function (on disk in the workspace, not typed)
    body: str = ""  # the function being typed: before + body is what the user means to type
    corpus: str = ""  # the package of a split's run
    unit: str = "    "  # one indentation level in this file


def _functions(path: Path) -> list[tuple[int, str]]:
    """(offset, source) of top-level or method definitions of a reasonable size."""
    text = path.read_text("utf-8", "replace")
    out = []
    lines = text.split("\n")
    offset = 0
    starts = []
    for line in lines:
        starts.append(offset)
        offset += len(line) + 1
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if not stripped.startswith("def ") or i < 30:
            continue
        indent = len(line) - len(stripped)
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or
                                  len(lines[j]) - len(lines[j].lstrip()) > indent):
            j += 1
        body = "\n".join(lines[i:j]).rstrip() + "\n"
        if 150 <= len(body) <= 600 and '"""' not in body:
            out.append((starts[i], body))
    return out


def functions(path: Path, language: str) -> list[tuple[int, str]]:
    """(offset, source) of the functions and methods of 150-600 characters in a file of a
    brace language (``languages.FUNCTION_NODES``), from their line's start to the end of
    their last line, past line 30 (context before them)."""
    text = path.read_text("utf-8", "replace")
    parser = parser_for(language_for(language, None) or language)
    if parser is None or "\r" in text:
        return []
    data = text.encode()
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    out = []
    stack = [parser.parse(data).root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        if node.type not in FUNCTION_NODES[language] or node.start_point[0] < 30:
            continue
        # `export function f`, `const f = () => {...};`: from the statement's start.
        while (node.parent is not None and node.parent.start_point[0] == node.start_point[0]
               and node.parent.end_point[0] == node.end_point[0]
               and data[node.start_byte - node.start_point[1]:node.start_byte].strip()):
            node = node.parent
        row, end_row = node.start_point[0], node.end_point[0]
        if data[node.start_byte - node.start_point[1]:node.start_byte].strip():
            continue
        tail = data[node.end_byte:].split(b"\n", 1)[0].strip()
        if tail not in (b"", b";", b","):
            continue
        body = "\n".join(lines[row:end_row + 1]) + "\n"
        if 150 <= len(body) <= 600 and "/**" not in body:
            out.append((starts[row], body))
    return sorted(set(out))


BLOCK_ENDERS = ("return", "raise", "pass", "break", "continue")


def auto_indent(line: str) -> str:
    """The indentation an editor puts on the line after ``line`` when Enter is pressed
    (VS Code's, Neovim's and Emacs's Python modes): the same, one level more after a
    block or bracket opener, one less after a statement that ends its block."""
    stripped = line.strip()
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    if stripped.endswith((":", "(", "[", "{")):
        return indent + "    "
    if stripped.split(" ", 1)[0] in BLOCK_ENDERS:
        return indent[:-4]
    return indent


def brace_indent(line: str, unit: str = "    ") -> str:
    """Enter's indentation in a brace language: one level more after a line ending in
    an opener, the same otherwise (the typist fixes the rest)."""
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    return indent + unit if line.rstrip().endswith(("{", "(", "[")) else indent


def _indenter(language: str, unit: str) -> Callable[[str], str]:
    if language == "python":
        return auto_indent
    return lambda line: brace_indent(line, unit)


def _char_gap(ch: str, rng: random.Random) -> float:
    if ch in ".(:,=" and rng.random() < 0.35:
        return rng.uniform(350, 900)  # after punctuation: sometimes look
    return rng.lognormvariate(4.7, 0.35)  # ~110 ms bursts


def _common(a: str, b: str) -> int:
    """The length of the common start of two indentations."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _ends_body(lines: list[str], i: int) -> bool:
    """Line ``i`` is the empty rest after the body's final newline. That newline is in
    the file already (the rest of the file is below the function as it is typed), so it
    is not typed: an Enter there would add a blank line the file does not have, and a
    pause on it that has nothing to type. (The Enter's gap is drawn all the same, so the
    keys of the scripts after it stay as they were.)"""
    return i == len(lines) - 1 and not lines[i]


def _type(body: str, rng: random.Random, limit: int, language: str = "python",
          unit: str = "    ") -> list[Key]:
    """The keystrokes of a user typing ``body`` in an editor that indents on Enter: Enter
    is one change (the newline and the editor's indentation), then the user pauses and
    fixes the indentation with quick spaces or backspaces."""
    keys: list[Key] = []
    lines = body.split("\n")
    indenter = _indenter(language, unit)
    blank = " " if language == "python" else " \t"
    for i, line in enumerate(lines):
        want = len(line) - len(line.lstrip(blank)) if line.strip() else 0
        have = 0
        if i > 0:
            indent = indenter(lines[i - 1])
            enter = Key("\n" + indent, rng.uniform(500, 1500))  # end of line: think
            if _ends_body(lines, i):
                break
            keys.append(enter)
            have = len(indent)
            common = _common(indent, line[:want])
            keys += [Key(None, 15)] * max(0, have - common)
            have = common
        keys += [Key(c, 15) for c in line[have:want]]
        for ch in line[want:] if line.strip() else "":
            if ch.isalpha() and rng.random() < 0.02:  # a typo, noticed and fixed
                keys.append(Key(rng.choice("qxz"), rng.uniform(120, 250)))
                keys.append(Key(None, rng.uniform(150, 300)))
            keys.append(Key(ch, _char_gap(ch, rng)))
        if len(keys) >= limit:
            break
    return keys[:max(0, limit)]


def _type_closing(body: str, rng: random.Random, limit: int, language: str,
                  unit: str) -> list[Key]:
    """As ``_type``, in an editor that auto-closes (``autoclose.Editor``): a line that
    starts with the closer Enter pushed below is reached with a ``move`` key instead of
    Enter and the indentation fix."""
    keys: list[Key] = []
    editor = Editor("", language, True, unit)
    lines = body.split("\n")
    indenter = _indenter(language, unit)

    def press(key: Key) -> None:
        keys.append(key)
        apply_key(editor, key)

    for i, line in enumerate(lines):
        want = len(line) - len(line.lstrip(" \t")) if line.strip() else 0
        start = want
        if i > 0 and line.strip() and editor.closer_below(line[want]):
            press(Key("\n" + line[: want + 1], rng.uniform(500, 1500), move=True))
            start = want + 1
        elif i > 0:
            indent = indenter(lines[i - 1])
            enter = Key("\n" + indent, rng.uniform(500, 1500))
            if _ends_body(lines, i):
                break
            press(enter)
            common = _common(indent, line[:want])
            for _ in range(len(indent) - common):
                press(Key(None, 15))
            for c in line[common:want]:
                press(Key(c, 15))
        else:
            for c in line[:want]:
                press(Key(c, 15))
        for ch in line[start:] if line.strip() else "":
            if ch.isalpha() and rng.random() < 0.02:
                press(Key(rng.choice("qxz"), rng.uniform(120, 250)))
                press(Key(None, rng.uniform(150, 300)))
            press(Key(ch, _char_gap(ch, rng)))
        if len(keys) >= limit:
            break
    return keys[:max(0, limit)]


def apply_key(editor: Editor, key: Key) -> Change | None:
    """The change a key makes in ``editor`` (None: the cursor only moves)."""
    if key.text is None:
        return editor.backspace()
    if key.move:
        return editor.move(key.text)
    if key.text.startswith("\n"):
        return editor.enter(key.text)
    change = None
    for ch in key.text:
        change = editor.type(ch)
    return change


def _source_files(corpus: Path, language: str) -> list[Path]:
    skip = lambda p: "test" in str(p.relative_to(corpus))  # noqa: E731
    if language == "python":
        return python_files(corpus, 5_000, 150_000, skip)
    return sorted(p for ext in CORPORA[language].extensions for p in corpus.rglob(f"*{ext}")
                  if not skip(p) and 2_000 < p.stat().st_size < 150_000)


def _unit(text: str) -> str:
    """One indentation level of a file: a tab, or the smallest step of spaces (2-8)."""
    steps = [len(line) - len(line.lstrip(" ")) for line in text.split("\n")[:400]
             if line.startswith(" ") and line.strip()]
    if sum(line.startswith("\t") for line in text.split("\n")[:400]) > len(steps):
        return "\t"
    return " " * max(2, min(steps, default=4)) if steps else "    "


def make_scripts(corpus: Path, keystrokes: int, seed: int = 1, language: str = "python",
                 autoclose: bool = False) -> list[Script]:
    rng = random.Random(seed)
    files = _source_files(corpus, language)
    rng.shuffle(files)
    scripts: list[Script] = []
    total = 0
    for path in files:
        if total >= keystrokes:
            break
        found = _functions(path) if language == "python" else functions(path, language)
        if not found:
            continue
        offset, body = rng.choice(found)
        text = path.read_text("utf-8", "replace")
        unit = "    " if language == "python" else _unit(text)
        typist = _type_closing if autoclose else _type
        keys = typist(body, rng, keystrokes - total, language, unit)
        total += len(keys)
        rel = path.relative_to(corpus).as_posix()
        scripts.append(Script(path.as_uri(), text[:offset], keys, rel,
                              text[offset + len(body):], body, unit=unit))
    return scripts
