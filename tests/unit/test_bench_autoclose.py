"""bench typing's editor: VS Code's auto-closing as a model, the keys it makes the typist
press, UTF-16 ranges, functions of brace languages, and the doubled-closer count."""

from __future__ import annotations

import random
from pathlib import Path

from lsprotocol import types

from lsp_copilot_bench.autoclose import Change, Editor, utf16_offset, utf16_position
from lsp_copilot_bench.corpus import python_files
from lsp_copilot_bench.typing_replay import (
    accepted_whole,
    doubled_closer,
    lsp_change,
    workspace_without_answers,
)
from lsp_copilot_bench.typing_scripts import (
    Key,
    _functions,
    apply_key,
    auto_indent,
    functions,
    make_scripts,
)


def typed(editor: Editor, text: str) -> list[Change | None]:
    return [editor.type(ch) for ch in text]


def test_an_opener_inserts_its_pair_before_whitespace_or_a_closer() -> None:
    e = Editor("x = ", "typescript", True)
    assert e.type("(") == Change(4, 4, "()")
    assert (e.left, e.right) == ("x = (", ")")
    e.type("[")  # before `)`: paired
    assert e.right == "])"
    e = Editor("", "typescript", True, below="abc")
    assert e.type("(") == Change(0, 0, "(")  # before a word: not paired
    assert e.right == "abc"


def test_the_rest_of_the_file_stays_below_what_is_typed() -> None:
    """The buffer is the file without the function being typed: the enclosing block's
    closer and what follows it stay below the cursor (the editor's own closers go
    between)."""
    e = Editor("class A {\n", "typescript", True, "  ", below="\n}\n")
    typed(e, "  f() {")
    e.enter("\n    ")
    assert e.text == "class A {\n  f() {\n    \n  }\n}\n"
    assert e.closer_below("}")


def test_a_closer_types_over_the_auto_inserted_one_without_a_change() -> None:
    e = Editor("f", "typescript", True)
    assert typed(e, "(a)") == [Change(1, 1, "()"), Change(2, 2, "a"), None]
    assert (e.left, e.right) == ("f(a)", "")


def test_quotes_pair_outside_strings_and_not_after_a_word() -> None:
    e = Editor("s = ", "typescript", True)
    assert e.type('"') == Change(4, 4, '""')
    assert typed(e, "it's") [-1] is not None and e.right == '"'  # `'` after a word
    assert e.type('"') is None and e.right == ""  # over the closing quote
    e = Editor("a = `x", "typescript", True)
    assert e.type("'") == Change(6, 6, "'")  # inside a template string
    assert Editor("", "python", True).type("`") == Change(0, 0, "`")  # no backtick pair
    assert Editor("", "typescript", True).type("`") == Change(0, 0, "``")


def test_enter_between_a_pair_puts_the_closer_on_its_own_line() -> None:
    e = Editor("  if (x) ", "typescript", True, "  ")
    e.type("{")
    change = e.enter("\n    ")
    assert change == Change(10, 10, "\n    \n  ")
    assert e.left.endswith("{\n    ") and e.right == "\n  }"
    assert Editor("a", "go", True).enter("\n") == Change(1, 1, "\n")  # no pair: plain


def test_backspace_in_an_empty_pair_deletes_both() -> None:
    e = Editor("f", "rust", True)
    e.type("(")
    assert e.backspace() == Change(1, 3, "")
    assert e.text == "f"
    e = Editor("x = ", "rust", True)
    e.type('"')
    assert e.backspace() == Change(4, 6, "") and e.text == "x = "
    e = Editor("ab", "rust", True)
    assert e.backspace() == Change(1, 2, "") and e.text == "a"


def test_the_user_moves_to_the_closer_enter_pushed_below() -> None:
    e = Editor("fn f() ", "rust", True)
    e.type("{")
    e.enter("\n    ")
    typed(e, "g();")
    assert e.closer_below("}") and not e.closer_below(")")
    assert e.move("\n}") is None  # the same whitespace: the cursor only moves
    assert (e.left, e.right) == ("fn f() {\n    g();\n}", "")
    e = Editor("fn f() ", "rust", True)
    e.type("{")
    e.enter("\n    ")
    typed(e, "g();")
    assert e.move("\n  }") == Change(len("fn f() {\n    g();"), len("fn f() {\n    g();\n"),
                                     "\n  ")
    assert e.text == "fn f() {\n    g();\n  }"


def test_autoclose_off_is_plain_insertion() -> None:
    e = Editor("f", "typescript", False)
    assert typed(e, "({") == [Change(1, 1, "("), Change(2, 2, "{")]
    assert e.enter("\n  ") == Change(3, 3, "\n  ") and e.right == ""


def test_ranges_are_in_utf16_units_with_non_ascii_text() -> None:
    text = "s = 'é😀'\nab"
    assert utf16_position(text, text.index("'", 5)) == (0, 8)  # the emoji is two units
    assert utf16_offset(text, 0, 8) == text.index("'", 5)
    assert utf16_offset(text, 1, 1) == len(text) - 1
    e = Editor("x = '😀", "typescript", True)
    old = e.text
    change = e.backspace()  # deletes the emoji: two UTF-16 units
    lsp = lsp_change(old, change)
    assert (lsp.range.start.character, lsp.range.end.character) == (5, 7)
    e = Editor("😀 = ", "typescript", True)
    old = e.text
    lsp = lsp_change(old, e.type("("))
    assert lsp.range.start == types.Position(0, 5) and lsp.text == "()"


def test_typed_keys_reach_the_intended_text(tmp_path: Path) -> None:
    body = ("  render(items: Item[]): void {\n    for (const item of items) {\n"
            "      this.draw(item, { x: 1, label: \"a\" });\n    }\n"
            "    callback(() => {\n      done();\n    });\n  }\n")
    head = "".join(f"const x{i} = {i};  // filler line {'.' * 60}\n" for i in range(40))
    (tmp_path / "mod.ts").write_text(head + "class A {\n" + body + "}\n")
    scripts = make_scripts(tmp_path, 10_000, 1, "typescript", autoclose=True)
    assert [s.body for s in scripts] == [body]
    # As the replay has it: the rest of the file below the line the function goes on.
    e = Editor(scripts[0].before, "typescript", True, scripts[0].unit, "\n" + scripts[0].after)
    for key in scripts[0].keys:
        apply_key(e, key)
    # The file as it was, and no line more: the body's last newline is already there.
    assert e.text == (tmp_path / "mod.ts").read_text()
    assert e.left == scripts[0].before + body.rstrip("\n") and e.right == "\n}\n"
    assert sum(k.move for k in scripts[0].keys) == 3  # `}` twice, `})` once
    root = tmp_path / "ws"
    (tmp_path / "notes.py").write_text("x = 1\n")
    workspace_without_answers(tmp_path, scripts, root, "typescript")
    assert (root / "mod.ts").exists() and not (root / "notes.py").exists()
    assert "render(" not in (root / "mod.ts").read_text()


def test_typescript_functions_are_found(tmp_path: Path) -> None:
    head = "".join(f"const x{i} = {i};\n" for i in range(35))
    fn = ("export function total(values: number[], offset: number): number {\n  let sum = 0;\n"
          "  for (const v of values) {\n    sum += v * 2;\n  }\n"
          "  return sum + values.length + offset;\n}\n")
    arrow = ("const scale = (values: number[], by: number): number[] => {\n"
             "  const out: number[] = [];\n  for (const v of values) out.push(v * by);\n"
             "  return out.filter((x) => x > 0);\n};\n")
    path = tmp_path / "a.ts"
    path.write_text(head + fn + "\n" + arrow + "const tiny = () => 1;\n")
    found = [body for _, body in functions(path, "typescript")]
    assert found == [fn, arrow]
    offset, body = functions(path, "typescript")[0]
    assert path.read_text()[offset:offset + len(body)] == body


def _old_type(body: str, rng: random.Random, limit: int) -> list[Key]:
    """bench typing's generator before autoclose (commit 9960416), kept to compare."""
    keys: list[Key] = []
    lines = body.split("\n")
    for i, line in enumerate(lines):
        want = len(line) - len(line.lstrip(" ")) if line.strip() else 0
        have = 0
        if i > 0:
            indent = auto_indent(lines[i - 1])
            enter = Key("\n" + indent, rng.uniform(500, 1500))
            if i == len(lines) - 1 and not line:  # (the file's own newline, since then)
                break
            keys.append(enter)
            have = len(indent)
            keys += [Key(None, 15)] * max(0, have - want)
        keys += [Key(" ", 15)] * max(0, want - have)
        for ch in line[want:] if line.strip() else "":
            if ch.isalpha() and rng.random() < 0.02:
                keys.append(Key(rng.choice("qxz"), rng.uniform(120, 250)))
                keys.append(Key(None, rng.uniform(150, 300)))
            if ch in ".(:,=" and rng.random() < 0.35:
                gap = rng.uniform(350, 900)
            else:
                gap = rng.lognormvariate(4.7, 0.35)
            keys.append(Key(ch, gap))
        if len(keys) >= limit:
            break
    return keys[:max(0, limit)]




def test_autoclose_off_types_python_as_before(tmp_path: Path) -> None:
    bodies = [
        "def alpha(values):\n    total = 0\n    for value in values:\n"
        "        if value > 2:\n            total += value * 2\n        else:\n"
        "            return {\"a\": [value, (total, 'x')]}\n    return total\n",
        "    def beta(self, items, key=None):\n        out = []\n        for item in items:\n"
        "            out.append(self.fix(item, key=key or item.name))\n"
        "            continue\n        return out\n",
    ]
    for n in range(4):
        head = "".join(f"x{i} = {i}  # filler {'.' * 80}\n" for i in range(60))
        (tmp_path / f"m{n}.py").write_text(head + bodies[n % 2] + "\nclass C:\n"
                                          + bodies[1] + "\nZ = 1\n")
    for seed in (1, 2, 3):
        rng = random.Random(seed)
        files = python_files(tmp_path, 5_000, 150_000, lambda p: False)
        rng.shuffle(files)
        old: list[Key] = []
        for path in files:
            if len(old) >= 400:
                break
            found = _functions(path)
            _, body = rng.choice(found)
            old += _old_type(body, rng, 400 - len(old))
        assert len(old) == 400
        new = [k for s in make_scripts(tmp_path, 400, seed, "python", autoclose=False)
               for k in s.keys]
        assert [(k.text, k.gap_ms) for k in new] == [(k.text, k.gap_ms) for k in old]


def test_a_suggestion_that_writes_the_auto_inserted_closer_again_is_doubled() -> None:
    e = Editor("x = f", "typescript", True)
    typed(e, "(a, ")
    assert e.right == ")"
    item = types.InlineCompletionItem(insert_text="b)")
    assert doubled_closer(e, item)  # `x = f(a, b))`
    assert not doubled_closer(e, types.InlineCompletionItem(insert_text="b"))
    covering = types.InlineCompletionItem(  # the range covers the `)` right of the cursor
        insert_text="b)", range=types.Range(types.Position(0, 9), types.Position(0, 10)))
    assert not doubled_closer(e, covering)
    off = Editor("x = f", "typescript", False)
    typed(off, "(a, ")
    assert not doubled_closer(off, item)
    s = Editor("x = ", "typescript", True)
    typed(s, '"')
    assert not doubled_closer(s, types.InlineCompletionItem(insert_text='(")'))


def test_a_pause_is_judged_on_the_line_accepting_leaves() -> None:
    """An answer that writes the closer the editor put right of the cursor is whole when
    its range covers that closer (accepting replaces it), not when it would stand before
    it (``x = f(a, b))``)."""
    e = Editor("x = f", "python", True)
    typed(e, "(a, ")
    assert e.right == ")"
    covering = types.InlineCompletionItem(
        insert_text="b)", range=types.Range(types.Position(0, 9), types.Position(0, 10)))
    assert accepted_whole(e, covering, "python")
    assert not accepted_whole(e, types.InlineCompletionItem(insert_text="b)"), "python")
    assert accepted_whole(e, types.InlineCompletionItem(insert_text="b"), "python")
    assert not accepted_whole(e, types.InlineCompletionItem(insert_text="b +"), "python")
