"""Trial (b): hypothesis edit sequences with non-ASCII text against a reference buffer."""

from __future__ import annotations

import time

from lsp_copilot_bench.robustness.trial import SOURCE, Trial, utf16_len


def trial_edits(examples: int) -> Trial:
    """Hypothesis edit sequences on DocumentStore (in-process: the protocol shows no text)."""
    try:
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st
    except ImportError:
        return Trial("edits", False, "not run: hypothesis is missing (pip install "
                     "'lsp-copilot[dev]')")

    from lsp_copilot.documents.buffer import Buffer
    from lsp_copilot.documents.store import DocumentStore
    from lsp_copilot.language.ids import parser_for

    pieces = ["a", "_", "1", " ", "    ", "\t", "\n", "\r\n", "😀", "👍🏽", "漢字", "é", "(", ")",
              "[", "]", "{", "}", ":", "'", '"', "#", "def ", "if ", "return ", "class ", "pass"]
    inserted = st.lists(st.sampled_from(pieces), max_size=6).map("".join)
    seeds = ["", SOURCE, 'class A:\n    x = "😀😀"\n\n    def m(self):\n        pass\r\n']
    counts = {"sequences": 0, "edits": 0, "mismatches": 0}

    def utf16_offsets(line: str) -> list[int]:
        """UTF-16 offsets that fall on code-point boundaries of ``line``."""
        out, units = [0], 0
        for ch in line:
            units += utf16_len(ch)
            out.append(units)
        return out

    def to_index(text: str, line: int, character: int) -> int:
        lines = text.split("\n")
        start = sum(len(x) + 1 for x in lines[:line])
        units = 0
        for i, ch in enumerate(lines[line]):
            if units >= character:
                return start + i
            units += utf16_len(ch)
        return start + len(lines[line])

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        store = DocumentStore()
        uri = "file:///bench/edits.py"
        text = data.draw(st.sampled_from(seeds))
        store.open(uri, "python", 0, text)
        for version in range(1, data.draw(st.integers(1, 30)) + 1):
            # Positions by "\n"-split lines; CR alone is not a line break for this reference.
            ref_lines = text.split("\n")
            lines_ok = not any("\r" in x[:-1] for x in ref_lines)
            if not lines_ok or data.draw(st.integers(0, 30)) == 0:
                new = data.draw(inserted)
                store.change(uri, version, [(None, new)], "utf-16")
                text = new
            else:
                s_line = data.draw(st.integers(0, len(ref_lines) - 1))
                s_char = data.draw(st.sampled_from(utf16_offsets(ref_lines[s_line].rstrip("\r"))))
                e_line = data.draw(st.integers(s_line, min(s_line + 2, len(ref_lines) - 1)))
                e_offsets = utf16_offsets(ref_lines[e_line].rstrip("\r"))
                e_char = data.draw(st.sampled_from(
                    [o for o in e_offsets if e_line > s_line or o >= s_char] or [s_char]))
                new = data.draw(inserted)
                start, end = to_index(text, s_line, s_char), to_index(text, e_line, e_char)
                store.change(uri, version, [((s_line, s_char, e_line, e_char), new)], "utf-16")
                text = text[:start] + new + text[end:]
            counts["edits"] += 1
            snap = store.snapshot(uri)
            if snap.text != text:
                counts["mismatches"] += 1
                raise AssertionError(f"text differs from the reference after edit {version}")
        counts["sequences"] += 1
        snap = store.snapshot(uri)
        parser = parser_for(snap.grammar or "python")
        assert parser is not None and snap.tree is not None
        fresh = parser.parse(snap.data)
        if not fresh.root_node.has_error:
            assert str(snap.tree.root_node) == str(fresh.root_node), "tree differs"
        else:  # error recovery may differ; the tree must still span the document
            assert snap.tree.root_node.end_byte == fresh.root_node.end_byte, "tree span"
        assert Buffer(snap.text).text == snap.text

    started = time.perf_counter()
    failure = ""
    try:
        run()
    except Exception as exc:  # hypothesis re-raises the shrunk failing example
        failure = f"{type(exc).__name__}: {str(exc)[:200]}"
    seconds = time.perf_counter() - started
    ok = not failure
    return Trial("edits", ok, (
        f"{counts['sequences']} hypothesis sequences, {counts['edits']} edits (UTF-16, emoji, "
        f"CJK, CRLF), in-process DocumentStore: text = reference after every edit, tree = "
        f"fresh parse after every sequence{'' if ok else ' -- ' + failure}; {seconds:.1f} s"),
        {"sequences": counts["sequences"], "edits": counts["edits"], "failure": failure})

