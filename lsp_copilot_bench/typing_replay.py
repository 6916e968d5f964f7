"""`lsp-copilot bench typing`: replay human typing through the real protocol.

It spawns `lsp-copilot serve` as an editor would and types real functions from a corpus
character by character, with human gaps (bursts, pauses at line ends and after
punctuation, a few typos fixed with backspace). Like VS Code, it sends an inline
completion request per keystroke and cancels the previous one. The naive configuration
(no debounce, merge, reuse, typing-through or cache) and the default one run side by
side in one run, on the same keystrokes. The buffer is the file without the function,
the cursor where the function goes: the rest of the file below it, as in an editor.
Each pause is counted whole or not (on the line as accepting the first item leaves it),
and right or not against the line the user goes on to type
(``lsp_copilot_bench.pauses``).

With ``--language`` the functions typed are of that language (the didOpen language id);
with ``--autoclose on`` (the default) the buffer is an editor's that pairs brackets and
quotes (``autoclose``): a key that only moves over a closer sends no didChange but still
asks for a completion, and each pause also counts whether accepting the first item
would double a closer. The keys themselves are made in ``typing_scripts``.

With ``--split tune|report`` the keystrokes are spread over the packages of
``scripts/fresh-corpus.sh``'s split (ceil(keystrokes / packages) each), typed into one
workspace that holds them side by side; the figures are given per package and pooled.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types

from lsp_copilot.server.protocol import STATS
from lsp_copilot.telemetry import percentile
from lsp_copilot_bench import ablation
from lsp_copilot_bench.autoclose import Change, Editor, utf16_offset, utf16_position
from lsp_copilot_bench.corpus import split_corpora
from lsp_copilot_bench.languages import CORPORA
from lsp_copilot_bench.metrics import median, share
from lsp_copilot_bench.pauses import corpus_figures, pause_figures, score_pause, whole
from lsp_copilot_bench.runtime import compiled_in_place, private_runtime
from lsp_copilot_bench.typing_scripts import Script, apply_key, make_scripts

NAIVE = {"debounceMode": "off", "merge": False, "typingThrough": False, "cache": False,
         "prefetch": False}
PAUSE_MS = 300
FIRST_SUGGESTION_S = 900.0
"""``--from-start`` gives up when no engine could answer this long after the start."""
FIRST_MINUTES_S = 180.0
"""``--from-start`` reports the pauses of the first this many seconds of typing apart."""


def workspace_without_answers(corpus: Path, scripts: list[Script], root: Path,
                              language: str = "python") -> None:
    """A copy of the corpus's code where each typed function is missing from its file, and
    point the scripts there: the answer must not reach the prompt from the disk (the
    workspace index, this file's unseen code)."""
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(corpus, root, ignore=lambda d, names: [
        n for n in names if not (n.endswith(CORPORA[language].extensions)
                                 or (Path(d) / n).is_dir())])
    for script in scripts:
        path = root / script.rel
        path.write_text(script.before + script.after, "utf-8")
        script.uri = path.as_uri()


@dataclass
class Run:
    name: str
    keystrokes: int = 0
    pauses: int = 0
    pauses_with_suggestion: int = 0
    pauses_whole: int = 0  # the typed part of the line + the first line is a statement
    pauses_empty: int = 0  # answered in time, but with nothing to show
    pauses_late: int = 0  # not answered before the next keystroke
    pauses_doubled_closer: int = 0  # accepting the first item doubles a closer
    latencies_ms: list[float] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    pause_keys: list[tuple[str, int, str]] = field(default_factory=list)  # uri, version, how
    pause_log: list[dict[str, Any]] = field(default_factory=list)  # what each pause showed
    trace: list[dict[str, Any]] = field(default_factory=list)  # the server's request trace


def _plain(value: Any) -> Any:
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def lsp_change(old: str, change: Change) -> types.TextDocumentContentChangePartial:
    """``change`` of the buffer ``old`` as LSP sends it (positions in UTF-16 units)."""
    start = types.Position(*utf16_position(old, change.start))
    end = types.Position(*utf16_position(old, change.end))
    return types.TextDocumentContentChangePartial(range=types.Range(start, end),
                                                  text=change.text)


def _span(editor: Editor, item: types.InlineCompletionItem) -> tuple[int, int]:
    """What accepting ``item`` replaces: its range, else nothing at the cursor."""
    if item.range is None:
        return len(editor.left), len(editor.left)
    text = editor.text
    return (utf16_offset(text, item.range.start.line, item.range.start.character),
            utf16_offset(text, item.range.end.line, item.range.end.character))


def doubled_closer(editor: Editor, item: types.InlineCompletionItem) -> bool:
    """Accepting ``item`` (its text over its range, else at the cursor) doubles a closer
    (``autoclose``'s definition)."""
    insert = item.insert_text if isinstance(item.insert_text, str) else item.insert_text.value
    return editor.doubled_closer(insert, *_span(editor, item))


def accepted_whole(editor: Editor, item: types.InlineCompletionItem, language: str) -> bool:
    """The pause's measure, on the line as accepting ``item`` leaves it: its text over its
    range (an editor's closer the answer writes too is replaced, not kept after it)."""
    insert = item.insert_text if isinstance(item.insert_text, str) else item.insert_text.value
    start, end = _span(editor, item)
    text = editor.text
    return whole(text[:start], insert, language, text[end:])


async def _replay(name: str, options: dict[str, Any], scripts: list[Script],
                  root: Path, cache_dir: Path, env: dict[str, str] | None = None,
                  language: str = "python", autoclose: bool = True,
                  from_start: bool = False) -> Run:
    """``from_start``: type as soon as the first suggestion arrives (a user's first
    minutes: engines loading, the compiled copy built beside the typing); else once every
    engine is loaded and compiled."""
    from pygls.lsp.client import LanguageClient

    client = LanguageClient("bench-typing", "1")
    trace_path = cache_dir.parent / f"trace-{name}.jsonl"
    trace_path.unlink(missing_ok=True)
    await client.start_io(sys.executable, "-m", "lsp_copilot", "serve",
                          env={**(env or os.environ), "LSP_COPILOT_TRACE": str(trace_path)})
    server = client._server
    drain: asyncio.Future[None] | None = None
    if server is not None and server.stderr is not None:  # drain it: a full pipe blocks
        drain = asyncio.ensure_future(_drain(server.stderr, trace_path.with_suffix(".log")))
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=root.as_uri(),
        initialization_options={**options, "cacheDir": str(cache_dir)}))
    client.initialized(types.InitializedParams())
    if from_start:
        await _first_suggestion(client)
        s = _plain(await client.protocol.send_request_async(STATS, {}))
    else:
        s = await _steady(client, env)
    run = Run(name)
    before = s
    began = time.perf_counter()
    ids = iter(range(1, 10**9))
    for script in scripts:
        # The rest of the file stays below, as when a function is written into a file
        # (its enclosing block's closer included); only the function is missing.
        editor = Editor(script.before, language, autoclose, script.unit,
                        "\n" + script.after if script.after else "")
        version = 1
        client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
            script.uri, language, version, editor.text)))
        pending: tuple[str, asyncio.Future[Any], float] | None = None
        for key in script.keys:
            if pending is not None and not pending[1].done():
                client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=pending[0]))
            old = editor.text
            change = apply_key(editor, key)
            if change is not None:  # a move over an auto-inserted closer changes nothing
                version += 1
                client.text_document_did_change(types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(version=version, uri=script.uri),
                    [lsp_change(old, change)]))
            line, col = utf16_position(editor.text, len(editor.left))
            msg_id = f"bench-{next(ids)}"
            sent = time.perf_counter()
            fut = asyncio.ensure_future(client.protocol.send_request_async(
                types.TEXT_DOCUMENT_INLINE_COMPLETION,
                types.InlineCompletionParams(
                    text_document=types.TextDocumentIdentifier(script.uri),
                    position=types.Position(line, col),
                    context=types.InlineCompletionContext(
                        trigger_kind=types.InlineCompletionTriggerKind.Automatic)),
                msg_id=msg_id))
            answered: list[float] = []
            fut.add_done_callback(lambda f, a=answered: a.append(time.perf_counter()))
            # Cancelled requests end with an error: that is expected, not worth a log line.
            fut.add_done_callback(lambda f: f.cancelled() or f.exception())
            pending = (msg_id, fut, sent)
            run.keystrokes += 1
            await asyncio.sleep(key.gap_ms / 1000)
            if key.gap_ms >= PAUSE_MS:
                run.pauses += 1
                shown: Any = None
                doubled = False
                text = editor.left
                if fut.done() and not fut.cancelled() and fut.exception() is None:
                    result = fut.result()
                    if result is not None and result.items and answered:
                        item = result.items[0]
                        shown = item.insert_text
                        run.pauses_with_suggestion += 1
                        run.latencies_ms.append((answered[0] - sent) * 1000)
                        how = "suggested"
                        if accepted_whole(editor, item, language):
                            run.pauses_whole += 1
                            how = "whole"
                        doubled = isinstance(shown, str) and doubled_closer(editor, item)
                        run.pauses_doubled_closer += doubled
                    else:
                        run.pauses_empty += 1
                        how = "empty"
                else:
                    run.pauses_late += 1
                    how = "late"
                run.pause_keys.append((script.uri, version, how))
                score = score_pause(script.before + script.body, text, shown)
                run.pause_log.append({
                    **({"corpus": script.corpus} if script.corpus else {}),
                    "file": script.rel, "version": version, "how": how,
                    "at_s": round(time.perf_counter() - began, 1),
                    "gap_ms": round(key.gap_ms), "line": text[text.rfind("\n") + 1:],
                    "right": editor.right[:80], "suggestion": shown, "target": score.target,
                    "right_line": score.right_line, "right_start": score.right_start,
                    "doubled_closer": doubled, "similarity": score.similarity,
                    "latency_ms": round((answered[0] - sent) * 1000, 1)
                    if shown is not None else None})
        await asyncio.sleep(0.3)
        client.text_document_did_close(types.DidCloseTextDocumentParams(
            types.TextDocumentIdentifier(script.uri)))
    after = _plain(await client.protocol.send_request_async(STATS, {}))
    run.stats = {k: after[k] - before[k] for k in (
        "engine_requests", "engine_aborted", "generated_tokens", "prompt_tokens",
        "cached_prompt_tokens", "merged", "typed_through", "cache_hits", "superseded")}
    run.stats["server_ms_p99"] = after["server_ms"]["p99"]
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    if drain is not None:
        await asyncio.wait_for(drain, 10)
    if trace_path.exists():
        run.trace = [json.loads(line) for line in trace_path.read_text().splitlines()]
    return run


async def _steady(client: Any, env: dict[str, str] | None) -> dict[str, Any]:
    """Wait for every engine a route names, not only the main one (a second engine
    loading while the keys are typed measures the load, not the typing), and for the
    compiled copy to take over; the stats then."""
    while (s := _plain(await client.protocol.send_request_async(STATS, {})))[
            "engine_state"] == "loading" or any(
            r["state"] == "loading" for r in s.get("routes", {}).values()):
        await asyncio.sleep(0.5)
    if s["engine_state"] != "ready":
        raise SystemExit(f"engine failed: {s['engine_error']}")
    if await compiled_in_place(env or dict(os.environ)):  # the counters of the engine now
        s = _plain(await client.protocol.send_request_async(STATS, {}))
    return s


async def _first_suggestion(client: Any, limit_s: float = FIRST_SUGGESTION_S) -> None:
    """Until every engine a route names can answer (loaded eager: the compiled copy is
    still to come), as a user starts typing once the editor shows suggestions. Asking
    for one at a fixed place would not do: an empty answer there is cached, and asked
    again it stays empty."""
    deadline = time.monotonic() + limit_s
    while (s := _plain(await client.protocol.send_request_async(STATS, {})))[
            "engine_state"] == "loading" or any(
            r["state"] == "loading" for r in s.get("routes", {}).values()):
        if time.monotonic() > deadline:
            raise SystemExit(f"no engine ready within {limit_s:.0f} s of the start")
        await asyncio.sleep(0.5)
    if s["engine_state"] != "ready":
        raise SystemExit(f"engine failed: {s['engine_error']}")


async def _drain(stream: asyncio.StreamReader, path: Path) -> None:
    with path.open("wb") as out:
        while chunk := await stream.read(65536):
            out.write(chunk)


def _pause_breakdown(run: Run) -> dict[str, Any]:
    """Why pauses were missed, from the server's trace of the pause's own request."""
    by_key = {(r["uri"], r["version"]): r for r in run.trace if not r.get("prefetch")}
    out: dict[str, Any] = {}
    for how in ("whole", "suggested", "empty", "late"):
        rows = [by_key.get((u, v), {}) for u, v, h in run.pause_keys if h == how]
        if not rows:
            continue

        def med(name: str, rows: list[dict[str, Any]] = rows) -> float | None:
            return median([r[name] for r in rows if isinstance(r.get(name), int | float)])

        out[how] = {"count": len(rows),
                    "by_source": _tally(r.get("source") or r.get("status", "untraced")
                                        for r in rows),
                    "by_mode": _tally(r.get("mode", "untraced") for r in rows),
                    "by_wait": _tally(_waited_on(r) for r in rows),
                    "debounce_ms_p50": med("debounce_ms"), "engine_ms_p50": med("engine"),
                    "first_token_ms_p50": med("first_token_ms"),
                    "generated_tokens_p50": med("generated_tokens"),
                    "uncached_prompt_tokens_p50": med("uncached"),
                    "total_ms_p50": med("total"),
                    "flight_ms_p50": med("flight_ms"),
                    "flight_first_text_ms_p50": med("flight_first_text_ms"),
                    "flight_chars_p50": med("flight_chars")}
    return out


def _tally(keys: Iterable[str]) -> dict[str, int]:
    return dict(Counter(keys))


def _waited_on(row: dict[str, Any]) -> str:
    """What a pause's request was waiting on when the user went on (read for the late
    ones: the answer of a generation of its own, one it joined, or the debounce)."""
    if "new_tokens" in row:
        return "own_generation"
    if row.get("joined_flight"):
        return "joined_generation"
    if not row:
        return "untraced"
    return "debounce" if row.get("status") == "cancelled" else "answered"


def _first_minutes(run: Run) -> dict[str, Any]:
    """The pauses of the first ``FIRST_MINUTES_S`` of typing: in a ``--from-start`` run,
    what a user meets while the engines load and compile."""
    early = [p for p in run.pause_log if p["at_s"] < FIRST_MINUTES_S]
    return {"seconds": FIRST_MINUTES_S, "pauses": len(early),
            "pauses_with_whole_statement": share(sum(p["how"] == "whole" for p in early),
                                                 len(early)),
            "pauses_right_line": share(sum(bool(p["right_line"]) for p in early),
                                       len(early))}


def _summary(run: Run, scripts: list[Script], split: str | None,
             packages: list[str], language: str = "python",
             autoclose: bool = True) -> dict[str, Any]:
    lat = sorted(run.latencies_ms)
    s = run.stats
    prompt = s["prompt_tokens"]
    figures = pause_figures(run.pause_log)
    out: dict[str, Any] = {"config": run.name, "language": language,
                           "autoclose": "on" if autoclose else "off"}
    if split:
        out["split"] = split
    return out | {
        "keystrokes": run.keystrokes,
        "engine_calls_per_100_keys": round(100 * s["engine_requests"] / max(1, run.keystrokes),
                                           1),
        "generated_tokens": s["generated_tokens"],
        "prompt_tokens": prompt,
        "prompt_tokens_from_prefix_cache": s["cached_prompt_tokens"],
        "prefix_cache_share": share(s["cached_prompt_tokens"], prompt),
        "latency_ms_p50": median(lat),
        "latency_ms_p99": round(percentile(lat, 0.99), 1) if lat else None,
        "pauses": run.pauses,
        "pauses_with_suggestion": round(run.pauses_with_suggestion / max(1, run.pauses), 3),
        "pauses_with_whole_statement": round(run.pauses_whole / max(1, run.pauses), 3),
        "pauses_right_line": figures["pauses_right_line"],
        "pauses_right_start": figures["pauses_right_start"],
        "pauses_doubled_closer": run.pauses_doubled_closer,
        "pause_similarity_mean": figures["pause_similarity_mean"],
        "pauses_answered_empty": run.pauses_empty,
        "pauses_not_answered_in_time": run.pauses_late,
        "pauses_nothing_left": figures["pauses_nothing_left"],
        "whole_where_something_left": figures["whole_where_something_left"],
        "server_ms_p99": s["server_ms_p99"],
        "merged": s["merged"], "typed_through": s["typed_through"],
        "cache_hits": s["cache_hits"], "engine_aborted": s["engine_aborted"],
        "pause_breakdown": _pause_breakdown(run),
        "first_minutes": _first_minutes(run),
        **({"corpora": {name: corpus_figures(
            [p for p in run.pause_log if p.get("corpus") == name],
            sum(len(x.keys) for x in scripts if x.corpus == name))
            for name in packages}} if split else {}),
    }


def _plot(runs: list[Run], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for run in runs:
        if run.latencies_ms:
            values = sorted(run.latencies_ms)
            ax.plot(values, [i / len(values) for i in range(1, len(values) + 1)],
                    label=f"{run.name} (n={len(values)})")
    ax.set_xlabel("latency from the last keystroke to a suggestion (ms)")
    ax.set_ylabel("share of pauses answered")
    ax.set_title("lsp-copilot bench typing")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def split_scripts(corpus: Path, split: str, keystrokes: int, seed: int,
                  language: str = "python", autoclose: bool = False) -> list[Script]:
    """ceil(keystrokes / packages) keys in each package of ``corpus/<split>``, each
    package's script made as for a corpus of its own; paths relative to the split."""
    folders = split_corpora(corpus, split)
    scripts = []
    for name, path in folders:
        for script in make_scripts(path, math.ceil(keystrokes / len(folders)), seed,
                                   language, autoclose):
            script.rel, script.corpus = f"{name}/{script.rel}", name
            scripts.append(script)
    return scripts


def run(corpus: Path, keystrokes: int, out_dir: Path, cache_dir: Path,
        model: str | None = None, seed: int = 1, split: str | None = None,
        settings: dict[str, Any] | None = None, language: str = "python",
        autoclose: bool = True, from_start: bool = False,
        ablate: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """``settings``: editor settings for both configurations (``--settings``);
    ``language``: the files typed and the didOpen language id; ``autoclose``: the editor
    pairs brackets and quotes (``autoclose``); ``from_start``: the default configuration
    typed from a cold start, as soon as the first suggestion comes, beside the default
    at steady state (instead of the naive one beside the default); ``ablate``: the
    default twice, then with each of these mechanisms off (``ablation``), instead."""
    packages = [name for name, _ in split_corpora(corpus, split)] if split else []
    if split:  # a package with no function to type still gets its (empty) entry
        scripts = split_scripts(corpus, split, keystrokes, seed, language, autoclose)
        source = corpus / split
    else:
        scripts, source = make_scripts(corpus, keystrokes, seed, language, autoclose), corpus
    if not scripts:
        raise SystemExit(f"error: no {language} function of 150-600 characters in {source}")
    root = cache_dir / "workspace"
    workspace_without_answers(source, scripts, root, language)
    chosen = {**(settings or {}), **({"model": model} if model else {})}

    async def replays(env: dict[str, str]) -> list[Run]:
        if ablate:
            return [await _replay(name, options, scripts, root, cache_dir / name, server_env,
                                  language, autoclose)
                    for name, options, server_env in ablation.configs(chosen, env, ablate)]
        if from_start:
            first = await _replay("from-start", chosen, scripts, root,
                                  cache_dir / "from-start", env, language, autoclose,
                                  from_start=True)
        else:
            first = await _replay("naive", {**NAIVE, **chosen}, scripts, root,
                                  cache_dir / "naive", env, language, autoclose)
        default = await _replay("default", chosen, scripts, root, cache_dir / "default", env,
                                language, autoclose)
        return [first, default]

    with private_runtime() as env:  # (both share its engines; none stays loaded after)
        runs = asyncio.run(replays(env))
    rows = [_summary(r, scripts, split, packages, language, autoclose) for r in runs]
    for row in rows:
        row["settings"] = settings or {}  # what both configurations were given
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "bench-typing.json").write_text(json.dumps(rows, indent=2))
    for r in runs:  # the server's per-request trace: timings and counts, no text
        (out_dir / f"trace-{r.name}.jsonl").write_text(
            "".join(json.dumps(x) + "\n" for x in r.trace))
        # Each pause: the line as typed and what was shown (text of the corpus).
        (out_dir / f"pauses-{r.name}.jsonl").write_text(
            "".join(json.dumps(x) + "\n" for x in r.pause_log))
    _plot(runs, out_dir / "bench-typing.png")
    return rows
