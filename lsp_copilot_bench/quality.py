"""`lsp-copilot bench quality`: how good are the completions the whole pipeline gives?

Holes are cut in real code (seeded, so runs are comparable): single-line holes take the
rest of a line after its first token; multi-line holes take the body of a block after
its opening line (the cursor on the body's first line, indented as an editor would).
Each hole is filled twice, side by side, by the same engine through the server's own
path (``Completer.complete``: mode, context with the workspace index of the corpus,
template, stop rules, post-processing): once with our context, once with a prefix-only
prompt of the same token budget. The removed text is hidden from the index as well.

Reported per variant: exact match, edit similarity, the share of holes whose file still
parses after the completion is inserted (tree-sitter, among files that parsed before),
the share of empty answers, and, since the holes are explicit requests with alternatives
(``maxSuggestions``), the share of holes offered two or more distinct items and the share
where any item offered is the removed text. With ``--split tune|report`` the corpus is the output of
``scripts/fresh-corpus.sh DIR``: the holes are spread over the split's packages (each its
own workspace), and the figures are given per package and pooled.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_copilot.context.budgets import budgets_for
from lsp_copilot.context.index.workspace import Workspace
from lsp_copilot.context.index.workspace_index import WorkspaceIndex
from lsp_copilot.documents.store import DocumentStore, Snapshot
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.language.ids import language_id_for_path, parser_for
from lsp_copilot.language.trigger import BLOCK_OPENERS, completion_mode
from lsp_copilot.pipeline.completer import Completer
from lsp_copilot.postprocess.insertion import Insertion
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.telemetry import Telemetry
from lsp_copilot_bench.baseline import prefix_only_context
from lsp_copilot_bench.corpus import default_corpus, split_corpora
from lsp_copilot_bench.holes import LineRule, indent_width, pick_block, pick_line
from lsp_copilot_bench.metrics import edit_similarity

PROSE = ("#", "//", "/*", "*", '"', "'", "--")
LINES = LineRule(after_row=10, max_chars=100, prose=PROSE)


@dataclass(frozen=True)
class Hole:
    rel: str  # path in the corpus
    line: int  # 0-based line of the cursor in the masked text
    column: int  # characters
    kind: str  # single-line | multi-line
    masked: str  # the file with the hole cut out (and the cursor's indentation typed)
    expected: str
    original: str


def _single(lines: list[str], rng: random.Random) -> tuple[int, int, list[str], str] | None:
    got = pick_line(lines, rng, LINES)
    if got is None:
        return None
    i, cut = got
    line = lines[i]
    masked = [*lines[:i], line[:cut], *lines[i + 1:]]
    return i, cut, masked, line[cut:].rstrip()


def _multi(lines: list[str], rng: random.Random) -> tuple[int, int, list[str], str] | None:
    got = pick_block(lines, rng, BLOCK_OPENERS, PROSE, after_row=10)
    if got is None:
        return None
    i, body, end = got
    indent = body[0][: indent_width(body[0])]
    masked = [*lines[: i + 1], indent, *lines[end:]]
    expected = "\n".join([body[0][len(indent):], *[b.rstrip() for b in body[1:]]])
    return i + 1, len(indent), masked, expected


def _in_prose(snapshot: Snapshot, offset: int) -> bool:
    """Inside a comment or a string (a docstring's text): prose, not code."""
    if snapshot.tree is None:
        return False
    node = snapshot.tree.root_node.descendant_for_byte_range(max(0, offset - 1), offset)
    while node is not None:
        if "comment" in node.type or "string" in node.type:
            return True
        node = node.parent
    return False


def cut_holes(index: WorkspaceIndex, count: int, seed: int = 0,
              language: str | None = None) -> list[Hole]:
    """``count`` holes, half single-line and half multi-line, at most one per file;
    with ``language`` (an LSP language id) only in that language's files (a package
    ships other languages beside its sources: its build output, declarations)."""
    rng = random.Random(seed)
    files = [f for f in index.files() if not {"test", "tests"} & set(f.split("/")[:-1])
             and (language is None or (language_id_for_path(f) == language
                                       and not f.endswith(".d.ts")))]
    rng.shuffle(files)
    store = DocumentStore()
    quota = {"multi-line": count // 2, "single-line": count - count // 2}
    holes: list[Hole] = []
    for rel in files:
        if not any(quota.values()):
            break
        try:
            original = (index.root / rel).read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        lines = original.split("\n")
        kind = "multi-line" if quota["multi-line"] >= quota["single-line"] else "single-line"
        got = (_multi if kind == "multi-line" else _single)(lines, rng)
        if got is None:
            continue
        line, column, masked_lines, expected = got
        masked = "\n".join(masked_lines)
        if not expected.strip():
            continue
        uri = (index.root / rel).as_uri()
        store.open(uri, language_id_for_path(rel), 1, masked)
        offset = store.get_offset(uri, line, column, "utf-32")
        snapshot = store.snapshot(uri)
        mode = completion_mode(snapshot, offset)
        store.close(uri)
        if mode != kind or _in_prose(snapshot, offset):
            continue  # the server would not ask for this kind of completion here
        quota[kind] -= 1
        holes.append(Hole(rel, line, column, kind, masked, expected, original))
    return holes


def _normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.split("\n")).strip("\n").strip()


def _parses(snapshot: Snapshot, offset: int, text: str) -> bool:
    tree = Insertion(snapshot, offset).tree(text)
    return tree is not None and not tree.root_node.has_error


def _open_buffers(uri: str, text: str) -> Callable[[], list[tuple[str, str]]]:
    return lambda: [(uri, text)]


async def run_holes(holes: list[Hole], index: WorkspaceIndex, hub: SettingsHub,
                    manager: EngineManager, log: Path | None = None, explicit: bool = True,
                    corpus: str | None = None) -> list[dict[str, Any]]:
    """Fill every hole with both variants, interleaved (machine load hits both alike).
    ``explicit``: as the user's explicit request (triggerKind Invoked) would be answered.

    With ``log``, each hole's record is appended to it as a JSON line as soon as it is
    done (a long run on a busy machine can be read, or stopped, half way). ``corpus``:
    the package the holes were cut in, recorded in each hole (a split's runs)."""
    telemetry = Telemetry()
    ours = Completer(manager, telemetry, hub)
    base = Completer(manager, telemetry, hub, context_builder=prefix_only_context,
                     request_ids=ours.request_ids)  # one engine: one source of ids
    store = DocumentStore(hub.settings.max_document_bytes)
    records = []
    for n, hole in enumerate(holes, start=1):
        uri = (index.root / hole.rel).as_uri()
        ours.workspace = Workspace(index, _open_buffers(uri, hole.masked))
        index.update(hole.rel, hole.masked.encode())  # the index must not know the answer
        try:
            store.open(uri, language_id_for_path(hole.rel), 1, hole.masked)
            snapshot = store.snapshot(uri)
            offset = store.get_offset(uri, hole.line, hole.column, "utf-32")
            parser = parser_for(snapshot.grammar) if snapshot.grammar else None
            before_ok = parser is not None and not parser.parse(
                hole.original.encode()).root_node.has_error  # a fresh parse of the file
            record: dict[str, Any] = {} if corpus is None else {"corpus": corpus}
            record |= {"file": hole.rel, "line": hole.line + 1,
                       "column": hole.column + 1, "kind": hole.kind,
                       "expected": hole.expected, "parsed_before": before_ok}
            for name, completer in (("ours", ours), ("prefix_only", base)):
                started = time.perf_counter()
                outcome = await completer.complete(snapshot, offset, explicit=explicit)
                if manager.state != "ready":  # an empty answer would count as the model's
                    raise SystemExit(f"error: the engine stopped during the run ("
                                     f"{manager.state}: {manager.error}); no figures")
                text = outcome.text
                record[name] = {
                    "completion": text, "raw": outcome.raw,
                    "suggestions": 1 + len(outcome.alternatives) if text else 0,
                    "alternatives": list(outcome.alternatives),
                    "prompt_tokens": outcome.context.prompt_tokens if outcome.context else 0,
                    "exact": _normal(text) == _normal(hole.expected),
                    "similarity": round(edit_similarity(_normal(text),
                                                        _normal(hole.expected)), 3),
                    "parses": _parses(snapshot, offset, text),
                    "seconds": round(time.perf_counter() - started, 2),
                }
                completer.forget(uri)
            records.append(record)
            store.close(uri)
            if log is not None:
                with log.open("a") as f:
                    f.write(json.dumps(record, ensure_ascii=False) + "\n")
            print(f"hole {n}/{len(holes)}{'' if corpus is None else ' of ' + corpus} "
                  f"{hole.kind}: ours "
                  f"{'exact' if record['ours']['exact'] else '-'}, prefix-only "
                  f"{'exact' if record['prefix_only']['exact'] else '-'}",
                  file=sys.stderr, flush=True)
        finally:
            index.update(hole.rel)
    return records


def _exact_in_any(record: dict[str, Any], name: str) -> bool:
    side = record[name]
    return bool(side["exact"]) or any(_normal(t) == _normal(record["expected"])
                                      for t in side.get("alternatives", ()))


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("all", "single-line", "multi-line"):
        rows = [r for r in records if kind == "all" or r["kind"] == kind]
        if not rows:
            continue
        parsed = [r for r in rows if r["parsed_before"]]
        entry: dict[str, Any] = {"holes": len(rows)}
        for name in ("ours", "prefix_only"):
            entry[name] = {
                "exact_match": round(sum(r[name]["exact"] for r in rows) / len(rows), 3),
                "edit_similarity": round(statistics.mean(r[name]["similarity"] for r in rows), 3),
                "parses": round(sum(r[name]["parses"] for r in parsed) / len(parsed), 3)
                if parsed else None,
                "empty": round(sum(not r[name]["completion"].strip() for r in rows)
                               / len(rows), 3),
                "mean_prompt_tokens": round(statistics.mean(r[name]["prompt_tokens"]
                                                            for r in rows), 1),
                # Explicit requests offer alternatives: how often there is a choice at all,
                # and how often one of the items offered is the removed text.
                "two_or_more_suggestions": round(
                    sum(r[name].get("suggestions", 0) >= 2 for r in rows) / len(rows), 3),
                "exact_in_any": round(sum(_exact_in_any(r, name) for r in rows) / len(rows), 3),
            }
        base_em = entry["prefix_only"]["exact_match"]
        entry["exact_match_ratio"] = (round(entry["ours"]["exact_match"] / base_em, 2)
                                      if base_em else None)
        out[kind] = entry
    return out


async def bench_quality(corpus: Path, count: int, hub: SettingsHub, seed: int = 0,
                        log: Path | None = None, split: str | None = None,
                        languages: dict[str, Path] | None = None) -> dict[str, Any]:
    """``count`` holes in ``corpus``; with ``split``, ceil(count / packages) holes in each
    package of ``corpus/<split>``, each package indexed as its own workspace. With
    ``languages`` (language id -> corpus), the same for each language's corpus, holes
    only in that language's files, all on one engine, with figures per language."""
    started = time.perf_counter()
    groups = list(languages.items()) if languages else [(None, corpus)]
    folders = [(language, name, path) for language, root in groups
               for name, path in (split_corpora(root, split) if split else [(root.name, root)])]
    per_corpus = {language: math.ceil(count / sum(f[0] == language for f in folders))
                  for language, _ in groups}
    manager = EngineManager()
    load = manager.start(hub.settings.engine_setup)
    indexes = [WorkspaceIndex(path) for _, _, path in folders]
    for index in indexes:
        await asyncio.to_thread(index.build)
    result = await load
    if not result.ok:
        raise SystemExit(f"error: the engine could not start: {result.message}")
    cut = [(language, name, index, cut_holes(index, per_corpus[language], seed, language))
           for (language, name, _), index in zip(folders, indexes, strict=True)]
    if not any(holes for *_, holes in cut):
        raise SystemExit(f"error: no holes could be cut in {corpus} (no code files with a "
                         "grammar in grammars/?)")
    by_corpus: dict[tuple[str | None, str], list[dict[str, Any]]] = {}
    try:
        for language, name, index, holes in cut:
            label = name if language is None else f"{language}/{name}"
            by_corpus[language, name] = await run_holes(holes, index, hub, manager, log,
                                                        corpus=label if split else None)
        info = manager.info
    finally:
        await manager.shutdown()
    if languages:
        out = _header(corpus, split, seed, count, info, hub, started)
        out["languages"] = {
            language: _figures(str(root), split, [(name, index.root, by_corpus[lang, name])
                                                  for lang, name, index, _ in cut
                                                  if lang == language], per_corpus[language])
            for language, root in groups}
        return out
    out = _header(corpus, split, seed, count, info, hub, started)
    out |= _figures(str(corpus), split, [(name, index.root, by_corpus[None, name])
                                         for _, name, index, _ in cut], per_corpus[None])
    return out


def _header(corpus: Path, split: str | None, seed: int, count: int, info: Any,
            hub: SettingsHub, started: float) -> dict[str, Any]:
    out: dict[str, Any] = {"corpus": str(corpus)}
    if split:
        out["split"] = split
    return out | {
        "seed": seed,
        "count": count,
        "engine": info.as_dict() if info else None,
        # The holes are explicit requests: their budget is contextBudgets' explicit one.
        "budget_tokens": budgets_for(hub.settings.request, info.device if info else "cpu").explicit,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _figures(corpus: str, split: str | None, done: list[tuple[str, Path, list[dict[str, Any]]]],
             per_corpus: int) -> dict[str, Any]:
    """The summary of one corpus (a split's packages each, and pooled) and its holes."""
    records = [r for *_, recs in done for r in recs]
    out: dict[str, Any] = {"corpus": corpus}
    if split:
        out |= {"split": split, "count_per_corpus": per_corpus,
                "corpora": {name: {"path": str(path), "holes": len(recs),
                                   "summary": summarize(recs)} for name, path, recs in done}}
    return out | {"summary": summarize(records), "holes": records}


def render(result: dict[str, Any]) -> str:
    """The side-by-side table printed by the command (one per language, with
    ``--language-corpus``)."""
    split = f", split {result['split']}" if "split" in result else ""
    head = (f"(seed {result['seed']}), model {(result['engine'] or {}).get('model')}, budget "
            f"{result['budget_tokens']} tokens, {result['seconds']} s")
    if "languages" in result:
        return "\n\n".join(f"{language}: " + _table(figures, f"{split} {head}")
                            for language, figures in result["languages"].items())
    return _table(result, f"{split} {head}")


def _share(value: float | None) -> str:
    """A share for the table; "n/a" where no hole's file parsed before (the C++ library's
    headers, whose macros tree-sitter does not expand)."""
    return "n/a" if value is None else f"{value:.3f}"


def _table(result: dict[str, Any], head: str) -> str:
    lines = [f"corpus {result['corpus']}{head}",
             "holes        | variant     | exact match | edit sim | parses | empty | tokens "
             "| 2+ items | exact in any"]
    for kind, entry in result["summary"].items():
        for name in ("ours", "prefix_only"):
            m = entry[name]
            lines.append(f"{kind:<12} | {name:<11} | {m['exact_match']:>11.3f} | "
                         f"{m['edit_similarity']:>8.3f} | {_share(m['parses']):>6} | "
                         f"{m['empty']:>5.3f} | {m['mean_prompt_tokens']:>6.0f} | "
                         f"{m.get('two_or_more_suggestions', 0):>8.3f} | "
                         f"{m.get('exact_in_any', 0):>12.3f}")
        lines.append(f"{kind:<12} | {entry['holes']} holes, exact match ours / prefix-only: "
                     f"{entry['exact_match_ratio']} (target >= 1.3)")
    for name, corpus in result.get("corpora", {}).items():
        entry = corpus["summary"].get("all")
        if entry is None:
            lines.append(f"{name}: no holes")
            continue
        ours, base = entry["ours"], entry["prefix_only"]
        lines.append(f"{name}: {entry['holes']} holes, exact match ours {ours['exact_match']:.3f}"
                     f" / prefix-only {base['exact_match']:.3f}, edit sim "
                     f"{ours['edit_similarity']:.3f} / {base['edit_similarity']:.3f}, empty "
                     f"{ours['empty']:.3f} / {base['empty']:.3f}, 2+ items "
                     f"{ours['two_or_more_suggestions']:.3f} / "
                     f"{base['two_or_more_suggestions']:.3f}")
    return "\n".join(lines)


def run(corpus: Path | None, count: int, model: str | None, seed: int = 0,
        log: Path | None = None, split: str | None = None,
        languages: dict[str, Path] | None = None) -> dict[str, Any]:
    # The shipped settings, minus what would make holes depend on each other; each hole
    # is an explicit request, answered as the editor's "suggest now" is.
    hub = SettingsHub.of(model=model or "", cache=False, merge=False, typing_through=False,
                         prefetch=False, engine_shared=False)  # nothing stays loaded after
    return asyncio.run(bench_quality(corpus or default_corpus(), count, hub, seed, log, split,
                                     languages))


def parse_languages(values: list[str] | None) -> dict[str, Path]:
    """``LANG=PATH`` arguments (``--language-corpus typescript=DIR/typescript``): LANG an
    LSP language id with a grammars/ folder, PATH a corpus (with ``--split``, the folder
    of ``scripts/fresh-corpus-languages.sh DIR``'s ``DIR/<LANG>``)."""
    from lsp_copilot.language.folders import supported

    out: dict[str, Path] = {}
    for value in values or []:
        key, sep, path = value.partition("=")
        if not sep or key not in supported():
            raise ValueError(f"expected LANG=PATH with LANG one of {', '.join(supported())}: "
                             f"{value!r}")
        out[key] = Path(path)
    return out
