from lsp_copilot.context.builder import BASE_MAX_LINES, build_context
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.context.window import ANCHOR_LINES, cursor_window
from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.language.trigger import completion_mode
from lsp_copilot.prompts.templates import template_for
from lsp_copilot.tokens import TiktokenCounter

SOURCE = "".join(f"def f{i}(x):\n    return x + {i}\n\n" for i in range(200))


def _snap(text: str, language: str = "python"):  # type: ignore[no-untyped-def]
    store = DocumentStore()
    store.open("file:///t.py", language, 1, text)
    return store, store.snapshot("file:///t.py")


def test_window_respects_budget_and_starts_on_an_anchor(cl100k: TiktokenCounter) -> None:
    data = SOURCE.encode()
    counter = cl100k
    offset = len(data) - 10
    w = cursor_window(data, offset, counter, 300, 0)
    assert w.prefix_tokens <= 300
    assert w.first_line % ANCHOR_LINES == 0
    assert data[:offset].decode().endswith(w.prefix)


def test_window_start_is_stable_while_typing(cl100k: TiktokenCounter) -> None:
    counter = cl100k
    base = SOURCE + "def g(y):\n    return "
    starts = set()
    for typed in ("", "y", "y +", "y + 1"):
        data = (base + typed).encode()
        starts.add(cursor_window(data, len(data), counter, 300, 0).first_line)
    assert len(starts) == 1  # same first line: the engine's prefix cache keeps hitting


def test_prompts_extend_each_other_across_new_lines_and_modes(cl100k: TiktokenCounter) -> None:
    """Typing lines (a new line in multi-line mode, then a statement in single-line mode)
    only appends to the prompt, so the engine's prefix cache serves all but the new text;
    after BASE_MAX_LINES lines the start is decided again."""
    counter = cl100k
    workspace = Workspace()  # keeps the base between the builds
    text = SOURCE + "def g(y):\n"
    store, snap = _snap(text + "\n" + SOURCE)
    first = build_context(snap, len(text), counter, template_for(None), 1024, workspace=workspace)
    previous = first.prompt
    version = 1
    for line in range(BASE_MAX_LINES + 2):
        for ch in ("    y = y + 1\n" if line else "    return (y"):
            version += 1
            text += ch
            store.close("file:///t.py")
            store.open("file:///t.py", "python", version, text + "\n" + SOURCE)
            snap = store.snapshot("file:///t.py")
            ctx = build_context(snap, len(text), counter, template_for(None), 1024,
                                workspace=workspace)
            assert ctx.prompt_tokens <= 1024
            if line < BASE_MAX_LINES - 1:
                assert ctx.prompt.startswith(previous), (line, ch)
            previous = ctx.prompt
    assert not previous.startswith(first.prompt)  # decided again, further down


def test_fill_in_the_middle_prompts_keep_their_start_while_typing(
        cl100k: TiktokenCounter) -> None:
    """A fill-in-the-middle prompt keeps a base too: what stands before the cursor only
    grows (the prefix cache hits), and the code after the cursor is the document's as it
    is now (the bracket an editor closed included), with or without a suffix budget. (A
    suffix-first format keeps its start only while the line's rest stays as it was.)"""
    for name, share in (("qwen2.5-coder", 0.0), ("qwen2.5-coder", 0.5), ("mellum", 0.5)):
        template = template_for(name)
        workspace = Workspace()
        text = SOURCE + "def g(y):\n"
        previous = None
        version = 1
        store, _ = _snap(text)
        line = ""
        for ch in "    return (y + 1":
            version += 1
            text += ch
            line += ch
            below = (")" if "(" in line else "") + "\n" + SOURCE  # closed as typed
            store.close("file:///t.py")
            store.open("file:///t.py", "python", version, text + below)
            snap = store.snapshot("file:///t.py")
            ctx = build_context(snap, len(text), cl100k, template, 1024, workspace=workspace,
                                suffix_share=share)
            before, after = ctx.at_cursor()
            assert ctx.prompt_tokens <= 1024
            assert before.endswith(text[-20:]), (name, ch)
            assert below.startswith(ctx.suffix)
            assert ctx.suffix in (before if template.order == "spm" else after)
            if share:
                assert ctx.suffix.startswith(below[:2]), (name, ch)
            if previous is not None and template.order == "psm":
                assert before.startswith(previous), (name, ch)
            previous = before


def test_a_prompt_keeps_its_start_when_the_lines_below_change(
        cl100k: TiktokenCounter) -> None:
    """Enter between an editor's `{` and `}` pushes the `}` down: the lines below the
    cursor change, and a prompt whose suffix follows its prefix keeps its start (before,
    each such key rebuilt the prompt from its first token: a second of prefill on a CPU);
    its suffix is the document's as it is now. A suffix-first format starts afresh."""
    def typed(before: str, below: str, version: int, store: DocumentStore,
              template_name: str, workspace: Workspace) -> tuple[str, str]:
        store.close("file:///t.py")
        store.open("file:///t.py", "python", version, before + below)
        ctx = build_context(store.snapshot("file:///t.py"), len(before), cl100k,
                            template_for(template_name), 1024, workspace=workspace,
                            suffix_share=0.5)
        return ctx.at_cursor()

    for name in ("qwen2.5-coder", "mellum"):
        workspace = Workspace()
        store, _ = _snap(SOURCE)
        text = SOURCE + "def g(y):\n    if y: ("
        first, _ = typed(text, ")\n" + SOURCE, 2, store, name, workspace)
        text += "\n        "
        before, after = typed(text, "\n    )\n" + SOURCE, 3, store, name, workspace)
        if name == "qwen2.5-coder":
            assert before.startswith(first)
            assert "\n    )\ndef f0" in after  # the `)` Enter pushed down
        else:
            assert before.endswith(text[-20:])


def test_huge_single_line_is_cut_to_budget(cl100k: TiktokenCounter) -> None:
    data = ("x = [" + "1, " * 5000).encode()
    w = cursor_window(data, len(data), cl100k, 100, 0)
    assert 0 < w.prefix_tokens <= 100


def test_same_input_same_prompt(cl100k: TiktokenCounter) -> None:
    _, snap = _snap(SOURCE)
    counter = cl100k
    a = build_context(snap, len(snap.data), counter, template_for(None), 256)
    b = build_context(snap, len(snap.data), counter, template_for(None), 256)
    assert a.prompt == b.prompt and a.prompt_tokens <= 256 + 1


def test_modes() -> None:
    cases = {
        "def f(x):\n    ": "multi-line",  # blank line after a block opener
        "def f(x):\n    |\n\ny = 1\n": "multi-line",  # the scope ends below: room
        # The block already goes on below: a second copy of it has no room.
        "def f(x):\n    |\n    return x\n": "single-line",
        "def f(x):\n    |\n        return x\n": "single-line",
        "x = foo(": "single-line",
        "x = fo|o": "none",  # in the middle of a word
        "# a comm": "none",  # prose in a comment
    }
    for text, expected in cases.items():
        before, _, after = text.partition("|")
        _, snap = _snap(before + after)
        assert completion_mode(snap, len(before.encode())) == expected, text


def test_modes_from_queries() -> None:
    cases = {
        ("x = 'some te", "python"): "none",  # prose in a string
        ("// a comm", "javascript"): "none",
        ("function f() {\n  ", "javascript"): "multi-line",
        ("let x = foo(", "javascript"): "single-line",
    }
    for (text, language), expected in cases.items():
        store = DocumentStore()
        store.open("file:///t", language, 1, text)
        snap = store.snapshot("file:///t")
        assert completion_mode(snap, len(text.encode())) == expected, text


def test_after_a_closed_block_comment_is_code() -> None:
    text = "int x = 1; /* note */"
    store = DocumentStore()
    store.open("file:///t.c", "c", 1, text)
    snap = store.snapshot("file:///t.c")
    assert completion_mode(snap, len(text.encode())) != "none"


def _layer(ctx, name: str):  # type: ignore[no-untyped-def]
    return next(layer for layer in ctx.layers if layer.name == name)


def test_multi_line_mode_gets_a_larger_window_for_prefix_only_and_fim(
    cl100k: TiktokenCounter,
) -> None:
    """The window grows with the mode: same cursor, multi-line sees more of the code around
    it than single-line, with any template, and neither goes over the budget."""
    from lsp_copilot.prompts.templates import TEMPLATES

    before = SOURCE + "class K:\n    def m(self):\n"
    _, snap = _snap(before + SOURCE.replace("def f", "def g"))
    offset = len(before.encode())
    counter = cl100k
    for template in (template_for(None), TEMPLATES["starcoder-fim"]):
        for budget in (256, 512, 1024, 2048):
            # Without a workspace nothing is kept: each mode's own first prompt here (a
            # kept base would serve both).
            single = build_context(snap, offset, counter, template, budget, "single-line")
            multi = build_context(snap, offset, counter, template, budget, "multi-line")
            p0_single = _layer(single, "P0 cursor window").tokens
            p0_multi = _layer(multi, "P0 cursor window").tokens
            assert p0_multi >= p0_single, (template.name, budget)
            if budget >= 512:  # (at 256 both windows are the same whole anchors)
                assert p0_multi > p0_single, (template.name, budget)
                if template.fim:
                    assert len(multi.suffix) > len(single.suffix)
                else:
                    assert len(multi.prefix) > len(single.prefix)
            assert counter.count(multi.prompt) <= budget
            assert counter.count(single.prompt) <= budget
            workspace = Workspace()
            kept = build_context(snap, offset, counter, template, budget, "multi-line",
                                 workspace=workspace)
            again = build_context(snap, offset, counter, template, budget, "multi-line",
                                  workspace=workspace)
            assert again.prompt == kept.prompt
