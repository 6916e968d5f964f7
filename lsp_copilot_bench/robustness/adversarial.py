"""Trial `adversarial`: a hostile workspace and a hostile remote, through the real server.

Two `lsp-copilot serve` processes, started as an editor starts them (the console script,
the workspace as the working folder), over the workspace of ``hostile_workspace``:

- the embedded engine (shipped defaults, a private runtime folder so that the shared
  engine host starts afresh from the workspace): it must start and answer beside broken
  ``calendar.py``-like files, stay responsive on pathological lines, complete files that
  hold secrets and withhold files made of them, and keep every secret out of its cache
  and logs;
- the remote backend pointed at ``hostile_remote`` (credentials in its URL), the
  workspace opened through a symlink: every prompt that leaves the machine is searched
  for the planted secrets and for text of ignored or outside files, and hostile answers
  must leave the server answering.

Each case prints what it got; a case passes only when nothing leaked or froze.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from lsp_copilot_bench.robustness import hostile_workspace as ws
from lsp_copilot_bench.robustness.client import RawClient, RpcError, suggestion
from lsp_copilot_bench.robustness.hostile_remote import BIDI, HostileRemote
from lsp_copilot_bench.robustness.trial import Trial

REDACTION_LIMIT_MS = 50.0
STATS_LIMIT_S = 2.0
"""A server busy redacting on its event loop answers nothing, stats included."""
URL_PASSWORD = "Ur1Pa55wd9Qx"
HOSTILE_MODES = ("bidi", "secret", "garbage", "huge-event", "endless")

TIMING_CODE = """
import json, sys, time
from lsp_copilot.privacy.redact import Redactor
from lsp_copilot_bench.robustness.hostile_workspace import PATHOLOGICAL
r = Redactor()
r.text("warm = 'up'", "x.py")
for name, line in PATHOLOGICAL.items():
    t = time.perf_counter()
    r.text(line, "x.py")
    print(json.dumps([name, (time.perf_counter() - t) * 1000]), flush=True)
"""


async def redaction_times(timeout: float = 120.0) -> dict[str, float | None]:
    """Milliseconds to redact each pathological line (in a child: an old, cubic
    redactor could take hours on one); None for lines still unfinished at ``timeout``."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", TIMING_CODE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    times: dict[str, float | None] = dict.fromkeys(ws.PATHOLOGICAL)
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    try:
        while (left := deadline - time.monotonic()) > 0:
            line = await asyncio.wait_for(proc.stdout.readline(), left)
            if not line:
                break
            name, ms = json.loads(line)
            times[name] = ms
    except TimeoutError:
        pass
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
    return times


async def _ask(client: RawClient, uri: str, line: int, col: int,
               timeout: float = 180.0) -> tuple[str, float, str | None]:
    """An explicit request: (suggestion, seconds, error or None)."""
    t = time.monotonic()
    try:
        result = await asyncio.wait_for(client.inline(uri, line, col, trigger=1), timeout)
        return suggestion(result), time.monotonic() - t, None
    except (TimeoutError, RpcError, ConnectionError) as exc:
        return "", time.monotonic() - t, f"{type(exc).__name__}: {exc}"[:120]


async def _stats_latency(client: RawClient) -> float:
    t = time.monotonic()
    try:
        await client.request("lspCopilot/stats", timeout=60)
    except (TimeoutError, RpcError, ConnectionError):
        return float("inf")
    return time.monotonic() - t


def _found(haystack: bytes, values: dict[str, str]) -> list[str]:
    return [name for name, value in values.items() if value.encode() in haystack]


def _files_bytes(*folders: Path) -> bytes:
    return b"".join(p.read_bytes() for folder in folders if folder.exists()
                    for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink())


def _open_file(client: RawClient, path: Path, root: Path, work: Path) -> str:
    """Open ``work``'s file at ``path`` under ``root`` (the link or the folder itself)."""
    uri = (root / path.relative_to(work)).as_uri()
    client.open(uri, path.read_text(), ws.language(path.name))
    return uri


async def embedded_cases(base: Path, paths: dict[str, Path], log: Any,
                         emit: Callable[[Trial], None]) -> None:
    work = paths["work"]
    values = {f: v for f, (_, _, v) in ws.SECRETS.items()}
    cache, logs = base / "cache", base / "logs"
    client = await RawClient.start(log, cwd=work, env={
        "LSP_COPILOT_RUNTIME_DIR": str(base / "runtime"),
        "LSP_COPILOT_LOG_FILE": str(logs / "server.log")})
    try:
        await client.initialize({"cacheDir": str(cache), "logFile": str(logs / "server.log"),
                                 "logLevel": "debug", "engineIdleMinutes": 0,
                                 "acceptanceFile": str(base / "acceptance.sqlite3"),
                                 "requestTimeoutMs": 120_000}, root=work)
        try:
            ready = await client.wait_ready(timeout=900)
        except (TimeoutError, RpcError, ConnectionError) as exc:
            ready = {"engine_state": f"no answer ({type(exc).__name__})", "engine_error": ""}
        uri = _open_file(client, work / "main.py", work, work)
        text, secs, err = (await _ask(client, uri, *ws.end_of(work / "main.py"))
                           if ready["engine_state"] == "ready" else ("", 0.0, "not asked"))
        emit(Trial("adv-stdlib", ready["engine_state"] == "ready" and bool(text.strip()), (
            f"{len(ws.STDLIB_NAMES)} broken stdlib-named files in the server's and engine's "
            f"working folder: engine {ready['engine_state']} {ready.get('engine_error') or ''}"
            f"; explicit request answered {text.strip()[:40]!r} in {secs:.1f} s"
            f"{'; ' + err if err else ''}"), {"engine_state": ready["engine_state"]}))
        if ready["engine_state"] != "ready":
            return

        times = await redaction_times()
        slow = {k: v for k, v in times.items() if v is None or v >= REDACTION_LIMIT_MS}
        for big in sorted(work.glob("big_line_*.py")):  # open buffers: P4's snippets
            _open_file(client, big, work, work)
        uri = _open_file(client, work / "long_lines.py", work, work)
        b = await client.stats()
        request = asyncio.ensure_future(_ask(client, uri, *ws.end_of(work / "long_lines.py")))
        probes = [await _stats_latency(client) for _ in range(3)]
        text, secs, err = await request
        asked = (await client.stats())["engine_requests"] - b["engine_requests"]
        worst = max(v if v is not None else float("inf") for v in times.values())
        emit(Trial("adv-long-lines", not slow and max(probes) < STATS_LIMIT_S and err is None
                   and asked > 0, (
            f"{len(ws.PATHOLOGICAL)} pathological lines: redaction worst {worst:.1f} ms "
            f"(limit {REDACTION_LIMIT_MS:.0f}){', over: ' + ', '.join(slow) if slow else ''};"
            f" stats answered in {max(probes):.2f} s at worst while the file was completed; "
            f"request {'answered' if err is None else err} in {secs:.1f} s, engine asked "
            f"{asked} time(s)"),
            {"redaction_ms": times, "stats_s": probes}))

        before = await client.stats()
        answered, asked_files = 0, 0
        for name in ("settings.py", "Db.java", "db.go", "deploy.sh"):
            b = await client.stats()
            uri = _open_file(client, work / name, work, work)
            text, _, err = await _ask(client, uri, *ws.cursor(name))
            a = await client.stats()
            asked_files += a["engine_requests"] > b["engine_requests"]
            answered += bool(text.strip()) and not _found(text.encode(), values)
        for name in ("Dockerfile", "kubeconfig.yaml"):  # open buffers: context of the rest
            _open_file(client, work / name, work, work)
        after = await client.stats()
        withheld_before = after
        for name in ws.WITHHELD:
            uri = _open_file(client, work / name, work, work)
            await _ask(client, uri, *ws.end_of(work / name))
        withheld_after = await client.stats()
        leaks = {"cache": _found(_files_bytes(cache), values),
                 "log": _found(_files_bytes(logs), values)}
        emit(Trial("adv-secrets", asked_files == 4 and not any(leaks.values())
                   and after["secret_skipped"] == before["secret_skipped"], (
            f"{len(values)} formats planted in 6 files: 4 code files completed (engine asked "
            f"for {asked_files}, {answered} suggestions, none with a secret); redacted "
            f"+{after.get('secrets_redacted', 0) - before.get('secrets_redacted', 0)}; found in"
            f" the cache: {leaks['cache'] or 'none'}, in the logs: {leaks['log'] or 'none'}"),
            {"leaks": leaks, "engine_asked_files": asked_files}))
        asked = withheld_after["engine_requests"] - withheld_before["engine_requests"]
        skipped = withheld_after["secret_skipped"] - withheld_before["secret_skipped"]
        emit(Trial("adv-withheld", asked == 0 and skipped >= len(ws.WITHHELD), (
            f"{len(ws.WITHHELD)} credential files ({', '.join(ws.WITHHELD)}): engine "
            f"requests +{asked}, secret_skipped +{skipped}"), {"asked": asked}))
    finally:
        await client.stop()


async def remote_cases(base: Path, paths: dict[str, Path], log: Any,
                       emit: Callable[[Trial], None]) -> None:
    work, link = paths["work"], paths["link"]
    values = {f: v for f, (_, _, v) in ws.SECRETS.items()}
    logs = base / "remote-logs"
    remote = await HostileRemote().start()
    client = await RawClient.start(log, cwd=base, env={
        "LSP_COPILOT_RUNTIME_DIR": str(base / "runtime"),
        "LSP_COPILOT_LOG_FILE": str(logs / "server.log"), "LSP_COPILOT_API_KEY": "k-adv"})
    try:
        await client.initialize({
            "engineBackend": "remote", "remoteUrl": remote.url(f"admin:{URL_PASSWORD}"),
            "remoteModel": "hostile-coder", "remoteRetries": 0, "remoteTimeoutMs": 8000,
            "remoteFirstTokenTimeoutMs": 5000, "cacheDir": str(base / "remote-cache"),
            "logFile": str(logs / "server.log"), "logLevel": "debug",
            "acceptanceFile": str(base / "remote-acceptance.sqlite3"),
            "excludedFolders": [str(work.resolve() / "excluded")]}, root=link)
        ready = await client.wait_ready(timeout=120)
        if ready["engine_state"] != "ready":
            emit(Trial("adv-remote", False, f"remote engine {ready['engine_state']}: "
                                            f"{ready.get('engine_error')}"))
            return
        for name in ("settings.py", "Db.java", "db.go", "deploy.sh"):
            uri = _open_file(client, work / name, link, work)
            await _ask(client, uri, *ws.cursor(name), timeout=60)
        for name in ("Dockerfile", "kubeconfig.yaml"):
            _open_file(client, work / name, link, work)
        main = _open_file(client, work / "main.py", link, work)
        await _ask(client, main, *ws.end_of(work / "main.py"), timeout=60)
        sent = "\n".join(remote.prompts).encode()
        leaked = _found(sent, values)
        emit(Trial("adv-prompts", bool(remote.prompts) and not leaked, (
            f"{len(remote.prompts)} prompts sent to the remote, the workspace opened through "
            f"a symlink: planted secrets in them: {leaked or 'none'} of {len(values)}"),
            {"prompts": len(remote.prompts), "leaked": leaked}))

        b = await client.stats()
        sent_before = remote.requests
        for rel in ("private/keys.py", "excluded/notes.py"):
            uri = _open_file(client, work / rel, link, work)
            await _ask(client, uri, *ws.end_of(work / rel), timeout=60)
        a = await client.stats()
        markers = _found("\n".join(remote.prompts).encode(), ws.MARKERS)
        emit(Trial("adv-symlinks", remote.requests == sent_before and not markers and (
            a["secret_skipped"] - b["secret_skipped"] >= 2), (
            f"ignored and excluded files opened through a linked workspace: remote requests "
            f"+{remote.requests - sent_before}, secret_skipped "
            f"+{a['secret_skipped'] - b['secret_skipped']}; text of ignored, excluded or "
            f"outside files in any prompt: {markers or 'none'}"), {"markers": markers}))

        rss0 = psutil.Process(client.pid).memory_info().rss
        got: dict[str, str] = {}
        for mode in HOSTILE_MODES:
            remote.mode = mode
            uri = (link / f"hostile_{mode.replace('-', '_')}.py").as_uri()
            client.open(uri, f"def area_{mode.replace('-', '_')}(radius):\n    return ")
            text, secs, err = await _ask(client, uri, 1, len("    return "), timeout=60)
            latency = await _stats_latency(client)
            got[mode] = (f"{'error ' + err if err else repr(text.strip()[:30])} in {secs:.1f} s,"
                         f" stats {latency:.2f} s")
            ok = err is None and latency < STATS_LIMIT_S
            if mode == "bidi":
                ok = ok and bool(text.strip()) and not any(c in text for c in BIDI)
            if mode == "secret":
                ok = ok and "AKIA" not in text
            got[mode] = ("ok " if ok else "BAD ") + got[mode]
        rss = psutil.Process(client.pid).memory_info().rss
        url_leak = URL_PASSWORD.encode() in _files_bytes(logs) + _log_bytes(log)
        emit(Trial("adv-remote", all(v.startswith("ok") for v in got.values()) and not url_leak
                   and rss - rss0 < 256 * 2**20 and client.proc.returncode is None, (
            "; ".join(f"{m}: {v}" for m, v in got.items())
            + f"; RSS +{(rss - rss0) / 2**20:.0f} MB; remoteUrl's password in the logs: "
            f"{'YES' if url_leak else 'no'}"), {"answers": got}))
    finally:
        await client.stop()
        await remote.stop()


def _log_bytes(log: Any) -> bytes:
    name = getattr(log, "name", None)
    return Path(name).read_bytes() if isinstance(name, str) and Path(name).exists() else b""


async def trial_adversarial(log: Any, emit: Callable[[Trial], None]) -> None:
    with tempfile.TemporaryDirectory(prefix="lsp-copilot-adversarial-") as tmp:
        base = Path(tmp)
        paths = ws.build(base)
        (base / "runtime").mkdir(mode=0o700)
        await embedded_cases(base, paths, log, emit)
        await remote_cases(base, paths, log, emit)
