"""Tests for lsp_copilot.documents: positions, edits, incremental trees, the store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import tree_sitter
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lsp_copilot.documents.buffer import Buffer, Encoding, PositionError
from lsp_copilot.documents.store import DocumentError, DocumentStore
from lsp_copilot.language.ids import parser_for

ENCODINGS: tuple[Encoding, ...] = ("utf-8", "utf-16", "utf-32")

# --------------------------------------------------------------------------- buffer


TEXTS = [
    "",
    "hello\nworld\n",
    "a😀b\n😀😀\n",
    "漢字かな\n中文 text\n",
    "line one\r\nline two\r\n\r\nend",
    "mixed\rbreaks\r\nhere\n😀\r漢\n",
    "é\u0301 combining\n",
]


def _boundaries(buf: Buffer) -> Iterator[int]:
    """Byte offsets that start a character (plus the end)."""
    data = buf.data
    for i in range(len(data) + 1):
        if i == len(data) or not 0x80 <= data[i] <= 0xBF:
            yield i


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_offset_position_round_trip(text: str, encoding: Encoding) -> None:
    buf = Buffer(text)
    for off in _boundaries(buf):
        line, char = buf.position(off, encoding)
        back = buf.offset(line, char, encoding)
        if off < len(buf.data) and buf.data[off] == 0x0A and off > 0 and buf.data[off - 1] == 0x0D:
            assert back == off - 1  # between \r and \n is the end of the line
        else:
            assert back == off, (text, off, line, char)


def test_known_positions() -> None:
    buf = Buffer("a😀b\n漢字x")
    assert buf.offset(0, 3, "utf-16") == 5
    assert buf.offset(0, 5, "utf-8") == 5
    assert buf.offset(0, 2, "utf-32") == 5
    assert buf.position(5, "utf-16") == (0, 3)
    assert buf.position(5, "utf-32") == (0, 2)
    assert buf.offset(1, 2, "utf-16") == 7 + 6
    assert buf.position(len(buf.data), "utf-16") == (1, 3)
    assert buf.position(len(buf.data), "utf-8") == (1, 7)


def test_mid_character_snaps_to_start() -> None:
    buf = Buffer("a😀b")
    assert buf.offset(0, 2, "utf-16") == 1  # between the halves of the surrogate pair
    assert buf.offset(0, 3, "utf-8") == 1  # inside the 4-byte sequence
    assert buf.position(3, "utf-16") == (0, 1)


def test_character_past_line_end_clamps() -> None:
    buf = Buffer("ab\r\ncd\rxy\nz")
    assert buf.offset(0, 99) == 2  # before the \r\n
    assert buf.offset(1, 99) == 6  # before the lone \r
    assert buf.offset(3, 99) == len(buf.data)
    assert buf.position(3) == (0, 2)  # between \r and \n


def test_line_rules() -> None:
    buf = Buffer("ab\ncd")
    assert buf.line_count == 2
    assert buf.offset(2, 0) == len(buf.data)  # one past the last line, char 0: the end
    with pytest.raises(PositionError, match=r"position 2:1 is past the end .*\(2 lines\)"):
        buf.offset(2, 1)
    with pytest.raises(PositionError, match="3:0"):
        buf.offset(3, 0)
    with pytest.raises(PositionError):
        buf.offset(-1, 0)
    with pytest.raises(PositionError):
        buf.offset(0, -1)
    with pytest.raises(PositionError, match="outside the document"):
        buf.position(6)
    with pytest.raises(PositionError):
        buf.position(-1)
    assert Buffer("ab\n").line_count == 2
    assert Buffer("").line_count == 1
    assert Buffer("").offset(0, 5) == 0


def test_line_breaks_and_points() -> None:
    buf = Buffer("a\rb\r\nc\nd")
    assert buf.line_count == 4
    assert [buf.line_range(i) for i in range(4)] == [(0, 1), (2, 3), (5, 6), (7, 8)]
    # tree-sitter counts rows by \n only
    assert buf.point(2) == (0, 2)
    assert buf.point(5) == (1, 0)
    assert buf.point(7) == (2, 0)


@pytest.mark.parametrize(
    ("text", "start", "end", "new", "expected_lines"),
    [
        ("a\rb", 2, 2, "\n", ["a", "b"]),  # \r + \n merge into one break
        ("a\r\nb", 2, 3, "", ["a", "b"]),
        ("a\r\nb", 1, 2, "", ["a", "b"]),
        ("a\r\nb", 2, 2, "x", ["a", "x", "b"]),  # split a \r\n
        ("ab", 1, 1, "\r", ["a", "b"]),
        ("a\nb", 0, 3, "", [""]),
        ("", 0, 0, "x\ny\r\n", ["x", "y", ""]),
    ],
)
def test_replace_keeps_line_index(
    text: str, start: int, end: int, new: str, expected_lines: list[str]
) -> None:
    buf = Buffer(text)
    buf.replace(start, end, new)
    got = [buf.data[a:b].decode() for a, b in (buf.line_range(i) for i in range(buf.line_count))]
    assert got == expected_lines
    _assert_same_index(buf, Buffer(buf.text))


@settings(max_examples=200, deadline=None)
@given(
    text=st.sampled_from([*TEXTS, "x = 1\n" * 40]),
    steps=st.lists(
        st.tuples(st.integers(-3, 3), st.sampled_from(["a", "😀", "\n", "\r", " ", ""]),
                  st.integers(0, 2)),
        min_size=1, max_size=60,
    ),
)
def test_typing_near_the_cursor_keeps_line_index(
    text: str, steps: list[tuple[int, str, int]]
) -> None:
    """Keystrokes at and around one place: the line index shifts the tail lazily while no
    line break comes or goes, and must always equal a fresh index."""
    buf = Buffer(text)
    cursor = len(buf.data) // 2
    for move, typed, deleted in steps:
        bounds = list(_boundaries(buf))
        i = min(range(len(bounds)), key=lambda k: abs(bounds[k] - cursor))
        start = bounds[max(0, min(len(bounds) - 1, i + move))]
        end = bounds[min(len(bounds) - 1, bounds.index(start) + deleted)]
        buf.replace(start, end, typed)
        cursor = start + len(typed.encode())
        _assert_same_index(buf, Buffer(buf.text))


def test_replace_rejects_bad_offsets() -> None:
    buf = Buffer("a😀b")
    with pytest.raises(PositionError):
        buf.replace(2, 3, "x")
    with pytest.raises(PositionError):
        buf.replace(3, 1, "x")
    with pytest.raises(PositionError):
        buf.replace(0, 99, "x")
    assert buf.text == "a😀b"


def test_byte_edit_points() -> None:
    buf = Buffer("ab\ncd😀\nef")
    e = buf.replace(4, 9, "X\nY")
    assert (e.start_byte, e.old_end_byte, e.new_end_byte) == (4, 9, 7)
    assert e.start_point == (1, 1)
    assert e.old_end_point == (1, 6)
    assert e.new_end_point == (2, 1)


def test_lone_surrogates_never_crash() -> None:
    buf = Buffer("a\ud800b\n")
    assert len(buf.data) == 6
    assert buf.text == "a\ud800b\n"
    assert buf.offset(0, 2, "utf-16") == 4
    assert buf.position(4, "utf-16") == (0, 2)
    buf.replace(1, 4, "\udfff")
    assert buf.text == "a\udfffb\n"
    buf = Buffer("a\ud800😀b")  # a line with a lone surrogate takes the slow path
    assert buf.offset(0, 3, "utf-16") == 4  # between the halves of 😀
    assert buf.offset(0, 4, "utf-16") == 8
    assert buf.position(8, "utf-16") == (0, 4)


def _assert_same_index(a: Buffer, b: Buffer) -> None:
    assert a.data == b.data
    assert a.line_count == b.line_count
    for i in range(a.line_count):
        assert a.line_range(i) == b.line_range(i)
    for off in range(len(a.data) + 1):
        assert a.point(off) == b.point(off)


# ------------------------------------------------------------------ reference model


def _units(text: str, encoding: Encoding) -> list[int]:
    """The text as a list of code units of ``encoding``, computed with the codecs."""
    if encoding == "utf-8":
        return list(text.encode("utf-8"))
    if encoding == "utf-16":
        raw = text.encode("utf-16-le")
        return [int.from_bytes(raw[i : i + 2], "little") for i in range(0, len(raw), 2)]
    return [ord(c) for c in text]


def _text(units: list[int], encoding: Encoding) -> str:
    if encoding == "utf-8":
        return bytes(units).decode("utf-8")
    if encoding == "utf-16":
        return b"".join(u.to_bytes(2, "little") for u in units).decode("utf-16-le")
    return "".join(chr(u) for u in units)


def _mid_char(units: list[int], i: int, encoding: Encoding) -> bool:
    if i <= 0 or i >= len(units):
        return False
    if encoding == "utf-8":
        return 0x80 <= units[i] <= 0xBF
    if encoding == "utf-16":
        return 0xDC00 <= units[i] <= 0xDFFF and 0xD800 <= units[i - 1] <= 0xDBFF
    return False


def _ref_lines(units: list[int]) -> list[tuple[int, int]]:
    """(start, end-before-break) of every line, by a plain scan of code units."""
    lines: list[tuple[int, int]] = []
    start = i = 0
    while i < len(units):
        if units[i] == 0x0D and i + 1 < len(units) and units[i + 1] == 0x0A:
            lines.append((start, i))
            i += 2
            start = i
        elif units[i] in (0x0A, 0x0D):
            lines.append((start, i))
            i += 1
            start = i
        else:
            i += 1
    lines.append((start, len(units)))
    return lines


def _ref_index(units: list[int], line: int, char: int, encoding: Encoding) -> int | None:
    """Unit index of an LSP position, or None if the store must raise PositionError."""
    lines = _ref_lines(units)
    if line == len(lines) and char == 0:
        return len(units)
    if line >= len(lines):
        event("position past the end")
        return None
    start, end = lines[line]
    i = min(start + char, end)
    if start + char > end:
        event("character clamped to line end")
    if _mid_char(units, i, encoding):
        event("position snapped to character start")
    while _mid_char(units, i, encoding):
        i -= 1
    return i


def _ref_apply(
    units: list[int],
    changes: list[tuple[tuple[int, int, int, int] | None, str]],
    encoding: Encoding,
) -> list[int] | None:
    for rng, new in changes:
        if rng is None:
            units = _units(new, encoding)
            continue
        a = _ref_index(units, rng[0], rng[1], encoding)
        b = _ref_index(units, rng[2], rng[3], encoding)
        if a is None or b is None:
            return None
        if a > b:
            event("reversed range")
        a, b = min(a, b), max(a, b)
        units = units[:a] + _units(new, encoding) + units[b:]
    return units


def _walk(node: tree_sitter.Node) -> Iterator[tuple[object, ...]]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield (
            n.type,
            n.start_byte,
            n.end_byte,
            tuple(n.start_point),
            tuple(n.end_point),
            n.is_missing,
            n.has_error,
            n.child_count,
        )
        stack.extend(reversed(n.children))


def _assert_tree_is_fresh(tree: tree_sitter.Tree | None, grammar: str, data: bytes) -> None:
    assert tree is not None
    parser = parser_for(grammar)
    assert parser is not None
    fresh = parser.parse(data)
    if fresh.root_node.has_error:
        # Tree-sitter does not promise the same error recovery for an incremental parse
        # of broken code as for a fresh one (seen: an ERROR node placed one statement
        # earlier). What our edits must still get right: every node's points agree with
        # its bytes in the current text, and the tree spans the whole document.
        assert tree.root_node.has_error
        assert tree.root_node.end_byte == fresh.root_node.end_byte
        for node in _nodes(tree.root_node):
            assert node.start_point == _point(data, node.start_byte), node
            assert node.end_point == _point(data, node.end_byte), node
        return
    assert str(tree.root_node) == str(fresh.root_node)
    assert list(_walk(tree.root_node)) == list(_walk(fresh.root_node))


def _nodes(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    yield node
    for child in node.children:
        yield from _nodes(child)


def _point(data: bytes, offset: int) -> tuple[int, int]:
    row = data.count(b"\n", 0, offset)
    return row, offset - (data.rfind(b"\n", 0, offset) + 1)


# -------------------------------------------------------------- the key property test

PIECES = [
    "a", "x", "_", "1", " ", "    ", "\t", "\n", "\r\n", "\r", "\n",
    "😀", "😀", "😀", "👍🏽", "漢字", "漢字", "é", "é",
    "(", ")", "[", "]", "{", "}", ":", ",", ".", "=", "'", '"', "#", "\\",
    "def ", "if ", "else", "return ", "class ", "for ", "in ", "lambda", "pass",
    "function ", "const ", "=>", "/*", "*/", "//", "`", ";",
]  # fmt: skip

SEEDS = {
    "python": [
        "",
        'def greet(name):\n    """Say hi 😀 to 漢字."""\n    if name:\r\n'
        '        return f"héllo {name}"\r\n    return [1, (2, {3: 4})]\n',
        "class A:\n    x = '😀😀'\n\n    def m(self):\n        pass\r",
    ],
    "javascript": [
        "",
        "function f(a) {\n  // 漢字 😀\n  return `x${a}`;\r\n}\nconst g = (b) => [b, {c: 'é'}];\n",
    ],
}

inserted = st.lists(st.sampled_from(PIECES), max_size=6).map("".join)


@st.composite
def _position(
    draw: st.DrawFn, units: list[int], near: tuple[int, int] | None = None
) -> tuple[int, int]:
    """A position in ``units``; rarely past the end, often close after ``near``."""
    lines = _ref_lines(units)
    if draw(st.integers(0, 80)) == 80:
        return len(lines) + draw(st.integers(0, 1)), draw(st.integers(0, 1))
    if near is not None and near[0] < len(lines) and draw(st.booleans()):
        line = draw(st.integers(near[0], min(near[0] + 2, len(lines) - 1)))
    else:
        line = draw(st.integers(0, len(lines) - 1))
    start, end = lines[line]
    return line, draw(st.integers(0, end - start + 2))


def _run_edit_sequence(
    data: st.DataObject, language_id: str, grammar: str, encoding: Encoding
) -> None:
    store = DocumentStore()
    uri = "file:///t/doc"
    text = data.draw(st.sampled_from(SEEDS[language_id]))
    store.open(uri, language_id, 0, text)
    units = _units(text, encoding)
    for version in range(1, data.draw(st.integers(1, 6)) + 1):
        changes: list[tuple[tuple[int, int, int, int] | None, str]] = []
        scratch = units
        for _ in range(data.draw(st.integers(1, 3))):
            if data.draw(st.integers(0, 100)) == 100:
                event("full content change")
                changes.append((None, data.draw(inserted)))
            else:
                s = data.draw(_position(scratch))
                e = data.draw(_position(scratch, near=s))
                changes.append(((s[0], s[1], e[0], e[1]), data.draw(inserted)))
            after = _ref_apply(scratch, changes[-1:], encoding)
            if after is None:
                break
            scratch = after
        expected = _ref_apply(units, changes, encoding)
        before = store.snapshot(uri)
        if expected is None:
            with pytest.raises(PositionError):
                store.change(uri, version, changes, encoding)
            after_snap = store.snapshot(uri)
            assert after_snap.text == before.text
            assert after_snap.version == before.version
            assert (before.tree is None) or str(after_snap.tree.root_node) == str(  # type: ignore[union-attr]
                before.tree.root_node
            )
            # Out of sync now: the client's full text (here: ours) brings it back.
            assert after_snap.out_of_sync is not None
            store.change(uri, version, [(None, before.text)], encoding)
            assert store.snapshot(uri).out_of_sync is None
            continue
        store.change(uri, version, changes, encoding)
        units = expected
        snap = store.snapshot(uri)
        assert snap.text == _text(units, encoding)
        assert snap.data == snap.text.encode("utf-8")
        assert snap.version == version
        assert snap.grammar == grammar
        _assert_tree_is_fresh(snap.tree, grammar, snap.data)
    _assert_same_index(store.buffer(uri), Buffer(store.snapshot(uri).text))


_FAST = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(_FAST, max_examples=300)
@given(data=st.data())
def test_random_utf16_edits_python(data: st.DataObject) -> None:
    _run_edit_sequence(data, "python", "python", "utf-16")


@settings(_FAST, max_examples=150)
@given(data=st.data())
def test_random_utf16_edits_javascript(data: st.DataObject) -> None:
    _run_edit_sequence(data, "javascript", "javascript", "utf-16")


@settings(_FAST, max_examples=75)
@given(data=st.data(), encoding=st.sampled_from(["utf-8", "utf-32"]))
def test_random_edits_other_encodings(data: st.DataObject, encoding: Encoding) -> None:
    _run_edit_sequence(data, "python", "python", encoding)


def _ref_point(data: bytes, offset: int) -> tuple[int, int]:
    """Tree-sitter's (row, byte column): rows end at \\n only."""
    return data.count(b"\n", 0, offset), offset - (data.rfind(b"\n", 0, offset) + 1)


@settings(_FAST, max_examples=300)
@given(
    text=st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    edits=st.lists(
        st.tuples(st.floats(0, 1), st.floats(0, 1), st.lists(st.sampled_from(PIECES), max_size=4)),
        min_size=1,
        max_size=8,
    ),
)
def test_random_byte_edits_keep_index_and_points(
    text: str, edits: list[tuple[float, float, list[str]]]
) -> None:
    buf = Buffer(text)
    for a, b, pieces in edits:
        new = "".join(pieces)
        old = buf.data
        bounds = list(_boundaries(buf))
        start, end = sorted(
            (bounds[int(a * (len(bounds) - 1))], bounds[int(b * (len(bounds) - 1))])
        )
        e = buf.replace(start, end, new)
        assert buf.data == old[:start] + new.encode() + old[end:]
        assert (e.start_byte, e.old_end_byte, e.new_end_byte) == (
            start,
            end,
            start + len(new.encode()),
        )
        assert e.start_point == _ref_point(old, start)
        assert e.old_end_point == _ref_point(old, end)
        assert e.new_end_point == _ref_point(buf.data, e.new_end_byte)
    fresh = Buffer(buf.text)
    _assert_same_index(buf, fresh)
    for off in range(len(buf.data) + 1):
        assert buf.point(off) == _ref_point(buf.data, off)
    units = _units(buf.text, "utf-16")
    assert buf.line_count == len(_ref_lines(units))


# --------------------------------------------------------------------------- store

PY = "def f(x):\n    return x + 1\n"


def test_unknown_uri() -> None:
    store = DocumentStore()
    with pytest.raises(DocumentError, match=r"file:///nope\.py"):
        store.snapshot("file:///nope.py")
    with pytest.raises(DocumentError):
        store.change("file:///nope.py", 1, [((0, 0, 0, 0), "x")], "utf-16")
    assert "file:///nope.py" not in store
    with pytest.raises(DocumentError):
        store.get_offset("file:///nope.py", 0, 0, "utf-16")
    store.close("file:///nope.py")  # closing twice is harmless


def test_open_close_contains() -> None:
    store = DocumentStore()
    store.open("file:///a.py", "python", 1, PY)
    assert "file:///a.py" in store
    assert store.uris() == ["file:///a.py"]
    store.close("file:///a.py")
    assert "file:///a.py" not in store
    with pytest.raises(DocumentError):
        store.snapshot("file:///a.py")


def test_failing_change_leaves_document_intact() -> None:
    store = DocumentStore()
    store.open("file:///a.py", "python", 1, PY)
    before = store.snapshot("file:///a.py")
    assert before.tree is not None
    good = ((0, 4, 0, 5), "g")
    bad = ((7, 0, 7, 1), "boom")
    with pytest.raises(PositionError, match="7:0"):
        store.change("file:///a.py", 2, [good, bad], "utf-16")
    after = store.snapshot("file:///a.py")
    assert after.text == PY
    assert after.version == 1
    assert after.tree is not None
    assert str(after.tree.root_node) == str(before.tree.root_node)
    _assert_tree_is_fresh(after.tree, "python", after.data)
    # The editor applied the batch, we did not: refuse partial edits until the full text.
    assert after.out_of_sync is not None and "7:0" in after.out_of_sync
    with pytest.raises(DocumentError, match="out of sync"):
        store.change("file:///a.py", 3, [good], "utf-16")
    assert store.snapshot("file:///a.py").text == PY
    store.change("file:///a.py", 3, [(None, "def g(x):\n    pass\n"), ((1, 4, 1, 8), "return 1")],
                 "utf-16")
    snap = store.snapshot("file:///a.py")
    assert snap.out_of_sync is None
    assert snap.text == "def g(x):\n    return 1\n"
    _assert_tree_is_fresh(snap.tree, "python", snap.data)
    store.change("file:///a.py", 4, [((0, 4, 0, 5), "h")], "utf-16")  # edits apply again
    assert store.snapshot("file:///a.py").text.startswith("def h(x)")


def test_version_going_backwards_waits_for_full_text() -> None:
    store = DocumentStore()
    store.open("file:///a.py", "python", 5, PY)
    with pytest.raises(DocumentError, match="version 4 goes backwards"):
        store.change("file:///a.py", 4, [((0, 4, 0, 5), "g")], "utf-16")
    snap = store.snapshot("file:///a.py")
    assert snap.text == PY and snap.version == 5 and snap.out_of_sync is not None
    with pytest.raises(DocumentError, match="out of sync"):
        store.change("file:///a.py", 6, [((0, 4, 0, 5), "g")], "utf-16")
    store.change("file:///a.py", 2, [(None, "x = 1\n")], "utf-16")  # full text: resync
    snap = store.snapshot("file:///a.py")
    assert (snap.text, snap.version, snap.out_of_sync) == ("x = 1\n", 2, None)
    _assert_tree_is_fresh(snap.tree, "python", snap.data)
    store.change("file:///a.py", 2, [((0, 0, 0, 1), "y")], "utf-16")  # same version: fine
    assert store.snapshot("file:///a.py").text == "y = 1\n"


def test_full_text_for_unknown_document_opens_it() -> None:
    store = DocumentStore()
    store.change("file:///b.py", 3, [(None, "a = 1\n"), ((0, 0, 0, 1), "b")], "utf-16")
    snap = store.snapshot("file:///b.py")
    assert snap.text == "b = 1\n" and snap.version == 3 and snap.grammar == "python"
    _assert_tree_is_fresh(snap.tree, "python", snap.data)


def test_snapshot_is_immutable() -> None:
    store = DocumentStore()
    store.open("file:///a.py", "python", 1, PY)
    snap = store.snapshot("file:///a.py")
    assert snap.tree is not None
    sexp = str(snap.tree.root_node)
    store.change("file:///a.py", 2, [((1, 4, 1, 12), "pass #")], "utf-16")
    assert snap.text == PY
    assert str(snap.tree.root_node) == sexp
    assert snap.tree.root_node.end_byte == len(PY)
    with pytest.raises(AttributeError):
        snap.text = "x"  # type: ignore[misc]


def test_full_content_change() -> None:
    store = DocumentStore()
    store.open("file:///a.py", "python", 1, PY)
    store.change("file:///a.py", 2, [(None, "x = '漢'\n"), ((0, 7, 0, 7), " + 'é'")], "utf-16")
    snap = store.snapshot("file:///a.py")
    assert snap.text == "x = '漢' + 'é'\n"
    _assert_tree_is_fresh(snap.tree, "python", snap.data)


def test_too_large_tracked_not_parsed() -> None:
    store = DocumentStore(max_parse_bytes=100)
    big = "x = 1\n" * 30
    store.open("file:///big.py", "python", 1, big)
    snap = store.snapshot("file:///big.py")
    assert snap.too_large
    assert snap.tree is None
    assert snap.grammar == "python"
    store.change("file:///big.py", 2, [((0, 0, 0, 0), "y = 2\n")], "utf-16")
    assert store.snapshot("file:///big.py").text == "y = 2\n" + big
    # shrinking it below the limit makes it parseable again
    store.change("file:///big.py", 3, [((1, 0, 31, 0), "")], "utf-16")
    snap = store.snapshot("file:///big.py")
    assert snap.text == "y = 2\n"
    assert not snap.too_large
    _assert_tree_is_fresh(snap.tree, "python", snap.data)


def test_binary_tracked_not_parsed() -> None:
    store = DocumentStore()
    store.open("file:///b.py", "python", 1, "x = 1\x00\x01\n")
    snap = store.snapshot("file:///b.py")
    assert snap.binary
    assert snap.tree is None
    store.change("file:///b.py", 2, [((0, 5, 0, 7), "")], "utf-16")
    snap = store.snapshot("file:///b.py")
    assert snap.text == "x = 1\n"
    assert not snap.binary
    _assert_tree_is_fresh(snap.tree, "python", snap.data)


def test_language_without_grammar_tracked() -> None:
    store = DocumentStore()
    store.open("file:///notes.txt", "plaintext", 1, "hello 😀\n")
    store.change("file:///notes.txt", 2, [((0, 8, 0, 8), "!")], "utf-16")
    snap = store.snapshot("file:///notes.txt")
    assert snap.grammar is None
    assert snap.tree is None
    assert snap.text == "hello 😀!\n"
    assert store.get_offset("file:///notes.txt", 0, 8, "utf-16") == len("hello 😀".encode())


def test_grammar_from_uri_when_language_id_unknown() -> None:
    store = DocumentStore()
    store.open("file:///src/main.rs", "plaintext", 1, "fn main() {}\n")
    snap = store.snapshot("file:///src/main.rs")
    assert snap.grammar == "rust"
    _assert_tree_is_fresh(snap.tree, "rust", snap.data)
