"""`bench safety`, redaction part: how often secret redaction fires on code that holds no
secrets, and what a prompt's redaction costs.

False positives: every non-blank line of the standard library (and of site-packages) with
a redaction counts as flagged; the rate is flagged lines over non-blank lines, broken
down by kind. Test suites do hold test passwords (``password = 'pass'``): those count as
false positives here, though a user would want them redacted too. Recall: the planted
secrets of ``tests/fixtures/secrets`` (``planted.json`` names them) redacted.

Cost: the prompt's build with and without redaction while a line is typed (``cost``).
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from lsp_copilot.privacy.redact import Redactor
from lsp_copilot_bench.corpus import Reader

SECRETS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "secrets"


def false_positives(files: list[tuple[str, Reader]], examples: int = 3) -> dict[str, Any]:
    """Lines with a redaction over non-blank lines, with a few examples per kind."""
    redactor = Redactor()
    lines = flagged = 0
    kinds: Counter[str] = Counter()
    shown: dict[str, list[str]] = {}
    started = time.perf_counter()
    for name, read in files:
        data = read()
        if b"\0" in data:
            continue
        for i, line in enumerate(data.decode("utf-8", "replace").split("\n")):
            if not line.strip():
                continue
            lines += 1
            spans = redactor.spans(line, name)
            if not spans:
                continue
            flagged += 1
            for span in spans:
                kinds[span.kind] += 1
                if len(shown.setdefault(span.kind, [])) < examples:
                    shown[span.kind].append(f"{name}:{i + 1}: {line.strip()[:100]}")
    seconds = time.perf_counter() - started
    return {"files": len(files), "code_lines": lines, "flagged_lines": flagged,
            "rate": round(flagged / lines, 6) if lines else 0.0,
            "by_kind": dict(kinds.most_common()), "examples": shown,
            "seconds": round(seconds, 1),
            "us_per_line": round(seconds / lines * 1e6, 1) if lines else 0.0}


def planted(folder: Path = SECRETS) -> dict[str, dict[str, str]]:
    """file name -> {format: value} of the secrets planted in the corpus."""
    data: dict[str, dict[str, str]] = json.loads((folder / "planted.json").read_text("utf-8"))
    return data


def recall(folder: Path = SECRETS) -> dict[str, Any]:
    """Planted secrets that redaction removes from their files."""
    redactor = Redactor()
    count = found = 0
    missed = []
    for name, values in planted(folder).items():
        redacted = redactor.text((folder / name).read_text("utf-8"), name).text
        for fmt, value in values.items():
            count += 1
            if value in redacted:
                missed.append(f"{name}: {fmt}")
            else:
                found += 1
    return {"planted": count, "found": found, "missed": missed,
            "recall": round(found / count, 3) if count else 0.0}


def cost(files: list[tuple[str, Reader]], seed: int = 0, rounds: int = 12,
         keys: int = 20) -> dict[str, Any]:
    """What redaction adds to a prompt's build: ``keys`` keystrokes typed back into a line
    of each of ``rounds`` files, the prompt built after each with and without a redactor
    (the server's build: a workspace keeping the base, the fill-in-the-middle template).
    Cold: a file's first prompt (every line scanned); warm: the keystrokes after it."""
    from lsp_copilot.context.builder import build_context
    from lsp_copilot.context.index.workspace import Workspace
    from lsp_copilot.documents.store import DocumentStore
    from lsp_copilot.prompts.templates import template_for
    from lsp_copilot.tokens import TokenCounters

    rng = random.Random(seed)
    counter = TokenCounters().fallback()
    template = template_for("qwen2.5-coder")
    times: dict[tuple[bool, bool], list[float]] = {(r, c): [] for r in (True, False)
                                                   for c in (True, False)}
    picked = [f for f in rng.sample(files, min(len(files), rounds * 3))
              if len(f[1]()) > 4000][:rounds]
    for name, read in picked:
        text = read().decode("utf-8", "replace")
        lines = text.split("\n")
        row = rng.randrange(len(lines) // 4, len(lines) * 3 // 4)
        while row < len(lines) - 1 and len(lines[row].strip()) < keys // 2:
            row += 1
        line = lines[row]
        head = "\n".join(lines[:row]) + "\n"
        tail = "\n" + "\n".join(lines[row + 1:])
        # Both builds at each keystroke, side by side (the machine's load hits both).
        redactor, workspaces = Redactor(), {False: Workspace(), True: Workspace()}
        store = DocumentStore()
        uri = f"file:///bench/{Path(name).name}"
        for k in range(0, min(keys, len(line)) + 1):
            typed = line[:k]
            store.close(uri)
            store.open(uri, "python", k + 1, head + typed + tail)
            snapshot = store.snapshot(uri)
            offset = len((head + typed).encode())
            for redact in (k % 2 == 0, k % 2 != 0):
                t0 = time.perf_counter()
                build_context(snapshot, offset, counter, template, 1536,
                              workspace=workspaces[redact],
                              redactor=redactor if redact else None)
                times[(redact, k == 0)].append((time.perf_counter() - t0) * 1000)

    def median(values: list[float]) -> float:
        values = sorted(values)
        return round(values[len(values) // 2], 2) if values else 0.0

    return {"files": len(picked), "keystrokes": keys,
            "cold_ms": median(times[(False, True)]),
            "cold_redacted_ms": median(times[(True, True)]),
            "warm_ms": median(times[(False, False)]),
            "warm_redacted_ms": median(times[(True, False)])}


def false_positive_rows(per_corpus: dict[str, Any], flagged: str, by: str) -> list[str]:
    """The false-positive table of a scan (redaction or the safety rules): per corpus,
    the lines it flagged, broken down by ``by`` (a kind or a rule)."""
    rows = [f"| corpus | files | code lines | {flagged} lines | rate | by {by} |",
            "|---|---|---|---|---|---|"]
    for name, r in per_corpus.items():
        if "absent" in r:
            rows.append(f"| {name} | absent ({r['absent']}) | | | | |")
            continue
        counts = ", ".join(f"{k} {v}" for k, v in r[f"by_{by}"].items()) or "-"
        files = (f"{r['files']}" if r["files"] == r["files_in_corpus"]
                 else f"{r['files']} of {r['files_in_corpus']}")
        rows.append(f"| {name} | {files} | {r['code_lines']} | {r['flagged_lines']} | "
                    f"{r['rate'] * 100:.4f}% | {counts} |")
    return rows


def render(result: dict[str, Any]) -> str:
    """The redaction table, for docs/benchmarks.md."""
    rows = false_positive_rows(result["false_positives"], "redacted", "kind")
    rec = result["recall"]
    rows += ["", f"planted secrets redacted: {rec['found']} of {rec['planted']}"
             + (f" (missed: {', '.join(rec['missed'])})" if rec["missed"] else "")]
    c = result.get("cost")
    if c:
        rows.append(f"prompt build, median over {c['files']} files x {c['keystrokes']} keys: "
                    f"first prompt {c['cold_ms']} ms, {c['cold_redacted_ms']} ms with "
                    f"redaction; then {c['warm_ms']} ms, {c['warm_redacted_ms']} ms with "
                    "redaction")
    return "\n".join(rows)
