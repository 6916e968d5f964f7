"""`bench safety`, redaction part: how often secret redaction fires on code that holds no
secrets, and what a prompt's redaction costs.

False positives: every non-blank line of the standard library (and of site-packages) with
a redaction counts as flagged; the rate is flagged lines over non-blank lines, broken
down by kind. Test suites do hold test passwords (``password = 'pass'``): those count as
false positives here, though a user would want them redacted too. Recall: the planted
secrets of ``tests/fixtures/secrets`` (``planted.json`` names them) redacted.

Cost: a prompt-sized text (120 lines of the standard library) redacted cold (every line
scanned) and warm (the line cache of a typing session, one line changed).
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.corpus import Reader
from lsp_copilot.privacy.redact import Redactor

SECRETS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "secrets"
PROMPT_LINES = 120


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


def cost(files: list[tuple[str, Reader]], seed: int = 0, rounds: int = 20) -> dict[str, Any]:
    """Milliseconds to redact a prompt-sized text, cold and warm (one line changed)."""
    rng = random.Random(seed)
    texts = []
    for name, read in rng.sample(files, min(len(files), rounds)):
        lines = read().decode("utf-8", "replace").split("\n")
        start = rng.randrange(max(1, len(lines) - PROMPT_LINES))
        texts.append((name, lines[start:start + PROMPT_LINES]))
    cold, warm = [], []
    for name, lines in texts:
        redactor = Redactor()
        t0 = time.perf_counter()
        redactor.text("\n".join(lines), name)
        cold.append((time.perf_counter() - t0) * 1000)
        lines[-1] += " x"  # a keystroke at the end of the prompt
        t0 = time.perf_counter()
        redactor.text("\n".join(lines), name)
        warm.append((time.perf_counter() - t0) * 1000)
    cold.sort()
    warm.sort()
    return {"prompt_lines": PROMPT_LINES, "prompts": len(texts),
            "cold_ms_median": round(cold[len(cold) // 2], 2) if cold else 0.0,
            "warm_ms_median": round(warm[len(warm) // 2], 3) if warm else 0.0,
            "warm_ms_max": round(warm[-1], 3) if warm else 0.0}


def render(result: dict[str, Any]) -> str:
    """The redaction table, for docs/benchmarks.md."""
    rows = ["| corpus | files | code lines | redacted lines | rate | by kind |",
            "|---|---|---|---|---|---|"]
    for name, r in result["false_positives"].items():
        if "absent" in r:
            rows.append(f"| {name} | absent ({r['absent']}) | | | | |")
            continue
        kinds = ", ".join(f"{k} {v}" for k, v in r["by_kind"].items()) or "-"
        files = (f"{r['files']}" if r["files"] == r["files_in_corpus"]
                 else f"{r['files']} of {r['files_in_corpus']}")
        rows.append(f"| {name} | {files} | {r['code_lines']} | {r['flagged_lines']} | "
                    f"{r['rate'] * 100:.4f}% | {kinds} |")
    rec = result["recall"]
    rows += ["", f"planted secrets redacted: {rec['found']} of {rec['planted']}"
             + (f" (missed: {', '.join(rec['missed'])})" if rec["missed"] else "")]
    c = result.get("cost")
    if c:
        rows.append(f"cost per prompt of {c['prompt_lines']} lines: {c['cold_ms_median']} ms "
                    f"cold, {c['warm_ms_median']} ms warm (median of {c['prompts']}; warm "
                    f"max {c['warm_ms_max']} ms)")
    return "\n".join(rows)
