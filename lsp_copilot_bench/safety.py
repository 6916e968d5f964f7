"""`bench safety`: how often the safety rules fire on real code, and how many of the
dangerous snippets they catch.

False positives: every non-blank line of real code (standard libraries, none written
here) that has a finding counts as flagged; the rate is flagged lines over non-blank
lines, per language and per rule. Real code does use ``eval`` and ``pickle`` on purpose,
so not every flagged line is wrong, but each is one a suggestion would be blocked or
warned about for. Recall: the marked lines of ``tests/fixtures/safety/snippets.*``
(``unsafe: RULE`` and ``missed: RULE``) found with the right rule, and of
``tests/fixtures/safety/heldout/variants.*``, written after the rules and not tuned
against (the snippets were: their recall says what the rules cover, the held-out one how
they do on code they were not written for).
"""

from __future__ import annotations

import random
import sysconfig
import time
from collections import Counter
from pathlib import Path
from typing import Any

from lsp_copilot.language.ids import parser_for
from lsp_copilot.postprocess.safety import scan
from lsp_copilot_bench import redaction
from lsp_copilot_bench.corpus import SOURCES, Reader, archive_files, default_corpus, folder_files

MAX_FILE_BYTES = 1_000_000

CORPORA: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    # name: (grammar, extensions (empty: headers without one), default locations)
    "python": ("python", (".py",), ("/usr/lib/python3.11", str(default_corpus()))),
    "site-packages": ("python", (".py",), (sysconfig.get_paths()["purelib"],)),
    "go": ("go", (".go",), SOURCES["go"]),
    "java": ("java", (".java",), SOURCES["java"]),
    "cpp": ("cpp", (), SOURCES["cpp"]),
    "rust": ("rust", (".rs",), SOURCES["rust"]),
    # No default: a folder of npm packages (node_modules), given with LANG=PATH.
    "javascript": ("javascript", (".js", ".mjs", ".cjs"), ()),
    "typescript": ("typescript", (".ts",), ()),
}

REDACTION_CORPORA = ("python", "site-packages")
"""Corpora whose redaction false positives are measured (the issue's target: stdlib)."""

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "safety"
SNIPPETS = {"python": "snippets.py", "javascript": "snippets.js", "typescript": "snippets.ts",
            "go": "snippets.go", "java": "Snippets.java", "c": "snippets.c",
            "cpp": "snippets.cpp", "rust": "snippets.rs"}
HELDOUT = {"python": "variants.py", "javascript": "variants.js", "go": "variants.go",
           "java": "Variants.java", "c": "variants.c", "cpp": "variants.cpp",
           "rust": "variants.rs"}
"""``heldout/``: snippets written after the rules and never tuned against."""


def corpus_files(root: Path, extensions: tuple[str, ...]) -> list[tuple[str, Reader]]:
    """(name, reader) of a folder's or a .zip's source files."""
    if root.is_file() and root.suffix == ".zip":
        return archive_files(root, extensions, MAX_FILE_BYTES)
    if root.is_dir():
        return [(str(path), read) for path, read in folder_files(root, extensions,
                                                                  MAX_FILE_BYTES)]
    return []


def false_positives(grammar: str, files: list[tuple[str, Reader]],
                    examples: int = 3) -> dict[str, Any]:
    """Flagged lines over non-blank lines in ``files``, with a few examples per rule."""
    parser = parser_for(grammar)
    assert parser is not None
    lines = flagged = 0
    rules: Counter[str] = Counter()
    shown: dict[str, list[str]] = {}
    started = time.perf_counter()
    for name, read in files:
        data = read()
        if b"\0" in data:
            continue
        try:  # (a few stdlib test files are Latin-1 on purpose; the scan wants UTF-8)
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        lines += sum(1 for line in data.split(b"\n") if line.strip())
        findings = scan(grammar, parser.parse(data), data)
        flagged += len({f.line for f in findings})
        for f in findings:
            rules[f.rule] += 1
            if len(shown.setdefault(f.rule, [])) < examples:
                shown[f.rule].append(f"{name}:{f.line + 1}: {f.text[:100]}")
    return {"files": len(files), "code_lines": lines, "flagged_lines": flagged,
            "rate": round(flagged / lines, 6) if lines else 0.0,
            "by_rule": dict(rules.most_common()), "examples": shown,
            "seconds": round(time.perf_counter() - started, 1)}


def markers(text: str) -> list[tuple[int, str, str]]:
    """(0-based line, kind, rule) of a snippet file's ``unsafe:``/``safe:``/``missed:``."""
    out = []
    for i, line in enumerate(text.split("\n")):
        for kind in ("unsafe", "missed", "safe"):
            mark = f" {kind}: "
            if mark in line:
                out.append((i, kind, line.split(mark, 1)[1].split()[0]))
                break
    return out


def recall(grammar: str, path: Path) -> dict[str, Any]:
    """Dangerous lines found with their rule, and safe variants flagged, in one file."""
    parser = parser_for(grammar)
    assert parser is not None
    data = path.read_bytes()
    found = {(f.line, f.rule) for f in scan(grammar, parser.parse(data), data)}
    flagged = {line for line, _ in found}
    marks = markers(data.decode())
    dangerous = [(i, rule) for i, kind, rule in marks if kind != "safe"]
    hits = [(i, rule) for i, rule in dangerous if (i, rule) in found]
    safe = [i for i, kind, _ in marks if kind == "safe"]
    return {"dangerous": len(dangerous), "found": len(hits),
            "recall": round(len(hits) / len(dangerous), 3) if dangerous else 0.0,
            "missed": [f"{path.name}:{i + 1} {rule}" for i, rule in dangerous
                       if (i, rule) not in found],
            "safe_variants": len(safe), "safe_flagged": sum(1 for i in safe if i in flagged)}


def run(folders: dict[str, Path] | None = None, max_files: int = 0,
        seed: int = 0) -> dict[str, Any]:
    """Both measures; ``folders`` replaces a language's default corpus, ``max_files``
    (0: all) samples that many files per corpus."""
    result: dict[str, Any] = {"false_positives": {}, "recall": {}}
    redacted: dict[str, Any] = {"false_positives": {}}
    for name, (grammar, extensions, defaults) in CORPORA.items():
        chosen = [folders[name]] if folders and name in folders else [Path(p) for p in defaults]
        roots = [p for p in chosen if p.exists()][:1]
        if not roots:
            result["false_positives"][name] = {
                "absent": ", ".join(map(str, chosen)) or "no default; give LANG=PATH"}
            continue
        files = [f for f in corpus_files(roots[0], extensions)
                 if not f[0].endswith((".d.ts", ".min.js"))
                 # An interpreter's lib folder holds its site-packages too: not the stdlib.
                 and not (name == "python" and "/site-packages/" in f[0])]
        total = len(files)
        if max_files and total > max_files:
            files = random.Random(seed).sample(files, max_files)
        entry = false_positives(grammar, files)
        entry.update(corpus=str(roots[0]), files_in_corpus=total)
        result["false_positives"][name] = entry
        if name in REDACTION_CORPORA:  # code with no secrets: what redaction takes away
            entry = redaction.false_positives(files)
            entry.update(corpus=str(roots[0]), files_in_corpus=total)
            redacted["false_positives"][name] = entry
            if name == "python":
                redacted["cost"] = redaction.cost(files, seed)
    for key, folder, snippets in (("recall", FIXTURES, SNIPPETS),
                                  ("recall_heldout", FIXTURES / "heldout", HELDOUT)):
        per = {grammar: recall(grammar, folder / name) for grammar, name in snippets.items()}
        dangerous = sum(r["dangerous"] for r in per.values())
        found = sum(r["found"] for r in per.values())
        result[key] = per
        result[key + "_total"] = {"dangerous": dangerous, "found": found,
                                  "recall": round(found / dangerous, 3) if dangerous else 0.0}
    redacted["recall"] = redaction.recall()
    result["redaction"] = redacted
    return result


def parse_folders(values: list[str] | None) -> dict[str, Path]:
    out = {}
    for value in values or []:
        name, sep, path = value.partition("=")
        if not sep or name not in CORPORA:
            raise ValueError(f"expected LANG=PATH with LANG one of {', '.join(CORPORA)}")
        out[name] = Path(path)
    return out


def render(result: dict[str, Any]) -> str:
    """A table per measure, for docs/benchmarks.md."""
    rows = redaction.false_positive_rows(result["false_positives"], "flagged", "rule")
    for key, title in (("recall", "snippets"), ("recall_heldout", "held-out snippets")):
        rows += ["", f"| {title} | dangerous | found | recall | safe variants flagged | missed |",
                 "|---|---|---|---|---|---|"]
        for name, r in result[key].items():
            rows.append(f"| {name} | {r['dangerous']} | {r['found']} | {r['recall']:.0%} | "
                        f"{r['safe_flagged']} of {r['safe_variants']} | "
                        f"{', '.join(r['missed']) or '-'} |")
        total = result[key + "_total"]
        rows.append(f"| all | {total['dangerous']} | {total['found']} | "
                    f"{total['recall']:.0%} | | |")
    if "redaction" in result:
        rows += ["", "Secret redaction (prompts):", "", redaction.render(result["redaction"])]
    return "\n".join(rows)
