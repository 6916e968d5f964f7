"""A line the model loops in (postprocess/loops.py): cut where the loop starts, the
line's brackets closed, the generation stopped once the loop shows; code that only looks
like a loop is left alone."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.language.folders import language_config
from lsp_copilot.language.trigger import completion_mode
from lsp_copilot.pipeline.prompt import cursor_at
from lsp_copilot.postprocess.checks import finalize
from lsp_copilot.postprocess.cursor_text import Cursor
from lsp_copilot.postprocess.loops import close_at_loop, find_loop
from lsp_copilot.postprocess.stop import stop_rule

PY = language_config("python")
AFTER = "\n\ndef other():\n    pass\n"


def _cursor(before: str, after: str = "", suffix: str = AFTER) -> Cursor:
    return Cursor(line_before=before, line_after=after, suffix_lines=suffix, rules=PY)


@pytest.mark.parametrize(("typed", "answer", "closed"), [
    # A key the dict already has, typed before the pause or written by the model.
    ('    cmds.append(("zadd", name, {"nx": nx, "xx": xx,',
     ' "gt": gt, "lt": lt, "ch": ch, "gt": ch, "lg": ch, "ht": ch,',
     ' "gt": gt, "lt": lt, "ch": ch}))'),
    ('    d = {"nx": nx, "ch":', ' ch, "nx": nx, "xx": xx', ' ch}'),
    # A keyword argument repeated.
    ("    run(cmd, ", "check=True, text=True, check=True, text=True", "check=True, text=True)"),
    # The same group over and over: its first copy kept.
    ("    cmds.append(", '("zadd", (name, nx, gt, ch, ch, ch, ch, ch, ch, ch',
     '("zadd", (name, nx, gt, ch)))'),
    # The model spread the items over lines, one per line.
    ("    cmds.append((", '"zadd", name, {\n        "gt": gt,\n        "lt": lt,  # less\n'
     '        "gtg": gt,\n        "lt": lt,\n        "lg": lt,',
     '"zadd", name, {\n        "gt": gt,\n        "lt": lt,  # less\n        "gtg": gt}))'),
    # In a block header: closed, and the header ended (its body comes after Enter).
    ("        if any(s.get(k) for k in ('anyOf',", " 'noneOf', 'noneOf', 'noneOf', 'noneOf',",
     " 'noneOf')):"),
    ("    for x in (", "a, b, b, b, b, b", "a, b):"),
    ("    match = re.search(", "p, p, p, p, p", "p)"),  # `match` names a variable here
    # A clause over and over: two copies and the start of a third are a loop already.
    ("    ", "if not isinstance(o, (M, N)) and not isinstance(o, (M, N)) and not isinstance(o,",
     "if not isinstance(o, (M, N)):"),
    ("    x = ", "f(a, b.c) + f(a, b.c) + f(a, b.c) + f(a,", "f(a, b.c)"),
    ("    ", "if f(o, (M, N)) and not f(o, (M, N)) and not f(o, (M, N)) and not isinst",
     "if f(o, (M, N)) and not f(o, (M, N)):"),  # the token limit cut the third copy
    # In a docstring: its first copy kept, the docstring closed.
    ("    ", '"""Entries: a starter, a job, a job, a job, a job, a job,',
     '"""Entries: a starter, a job"""'),
    # Inside one word: a name or a string glued from the same part (its first copy kept,
    # the string closed).
    ("    mode = ", "Mode._SLAM_CALIBRATE_CALIBRATE_CALIBRATE_CALIBRATE_CALIB",
     "Mode._SLAM_CALIBRATE"),
    ("    names = [", '"env_twin_env_twin_env_twin_env_twin_env_', '"env_twin"]'),
    # After a finished line, the answer's next line loops.
    ('    d = {"a": 1}', '\n    e = {"b": 2, "c": 3, "b": 4, "c": 5}',
     '\n    e = {"b": 2, "c": 3}'),
])
def test_a_looping_line_is_cut_and_closed(typed: str, answer: str, closed: str) -> None:
    assert close_at_loop(answer, _cursor(typed)) == closed


@pytest.mark.parametrize(("typed", "answer"), [
    ("    run(cmd, ", "check=True, text=True)"),
    ("    x = arr[i:j, ", "i:k]"),  # slices are not keys
    ("    f(lambda x: x, ", "lambda x: y)"),  # a lambda's parameter is no item key
    ("    d = {", '"a": 1, "b": {"a": 2}}'),  # the same key in another dict
    ("    s = ", '"a: 1, a: 2, a: 3"'),  # in a string
    ("    if a == b and ", "a == c:"),
    ("    pairs = ", "[(a, b), (a, b)]"),  # a long group twice is no loop yet
    ("    key = ", '"abcabc" + KEY_ABC_ABC'),  # a part of a word twice is no loop yet
    ("    n = ", "0x5555555555 + 1000000000"),  # numbers, not a name looping
    ("    pad = ", '"xxxxxxxxxxxxxxxxxxxxxxxx"'),  # one character over and over: a value
])
def test_code_that_only_looks_like_a_loop_stays(typed: str, answer: str) -> None:
    assert find_loop(answer, _cursor(typed)) is None
    assert close_at_loop(answer, _cursor(typed)) == answer


def test_nothing_is_closed_where_the_file_closes_it_below() -> None:
    typed, answer = "    run(", "check=True, text=True, check=True"
    # The call goes on over the next lines, or the line has text after the cursor.
    for cursor in (_cursor(typed, suffix="        env=env,\n    )\n"),
                   _cursor(typed, suffix=")\n"), _cursor(typed, after=")")):
        assert close_at_loop(answer, cursor) == "check=True, text=True"


def test_the_generation_stops_once_the_loop_shows() -> None:
    cursor = _cursor('    d = {"nx": nx,')
    rule = stop_rule("single-line", cursor)
    assert rule(' "xx": xx, "lt"') is None  # no loop yet: it streams on
    text = ' "xx": xx, "nx": nx, "xx": xx, "lt": lt'
    cut = rule(text)
    assert cut is not None and text[:cut] == ' "xx": xx, "nx":'
    # What the stream kept still shows the loop: the final text is cut and closed.
    assert close_at_loop(text[:cut], cursor) == ' "xx": xx}'


@pytest.mark.parametrize(("typed", "answer", "shown"), [
    ('{"nx": nx,', ' "xx": xx, "nx": nx, "xx": xx, "nx": nx, "xx": xx, "nx"', ' "xx": xx}))'),
    # Spread over lines: cut, closed, then put on one line (``one_line``).
    ("", '{\n            "nx": nx,\n            "xx": xx,\n            "nx": xx,\n            "lg"',
     '{"nx": nx, "xx": xx}))'),
])
def test_the_loop_cut_makes_a_typing_answer_whole_in_the_file(
        typed: str, answer: str, shown: str) -> None:
    """Through the text and whole checks: the looping answer was no suggestion before."""
    text = ("class P:\n    def zadd(self, name, mapping, nx=False, xx=False):\n"
            '        self._commands.append(("zadd", name, ' + typed)
    source = text + "\n\n    def zrem(self, name):\n        return self\n"
    store = DocumentStore()
    store.open("file:///w/p.py", "python", 1, source)
    snapshot = store.snapshot("file:///w/p.py")
    offset = len(text.encode())
    cursor = replace(cursor_at(snapshot, offset), prompt_dropped_indent="")
    mode = completion_mode(snapshot, offset)
    assert finalize(answer, mode, cursor, snapshot, offset, truncated=True) == shown
