"""`lsp-copilot bench robustness`: what survives abuse, through the real protocol and engine.

Six trials against one `lsp-copilot serve` process (stdio, the real default engine), one
line each: (a) fuzzed LSP traffic, valid and invalid; (b) hypothesis-generated edit
sequences with non-ASCII text against a reference buffer (in-process against the
DocumentStore: the protocol exposes no document text); (c) 200 simultaneous requests;
(d) the engine process killed mid-stream; (e) secret files opened and typed in; (f) a soak
with the server's RSS measured after a warm-up and at the end. The adversarial trial
(``adversarial.py``: a hostile workspace and remote) starts servers of its own.

The client here is a raw JSON-RPC client on purpose: pygls' client refuses to send
malformed frames, invalid JSON or ill-typed params, which is what the fuzzer is for.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from lsp_copilot_bench.robustness.adversarial import trial_adversarial
from lsp_copilot_bench.robustness.client import RawClient
from lsp_copilot_bench.robustness.edits import trial_edits
from lsp_copilot_bench.robustness.fuzz import trial_fuzz
from lsp_copilot_bench.robustness.kill import trial_kill
from lsp_copilot_bench.robustness.load import trial_burst, trial_soak
from lsp_copilot_bench.robustness.secret_files import trial_secrets
from lsp_copilot_bench.robustness.trial import Trial


async def _run(messages: int, soak: int, examples: int, only: set[str] | None,
               emit: Any, out: Path) -> list[Trial]:
    trials: list[Trial] = []

    def report(trial: Trial) -> None:
        trials.append(trial)
        emit(trial)

    if only is None or "edits" in only:
        report(await asyncio.to_thread(trial_edits, examples))
    out.mkdir(parents=True, exist_ok=True)
    if only is None or "adversarial" in only:
        with open(out / "adversarial-servers.log", "wb") as log:
            print(f"adversarial servers' log: {out / 'adversarial-servers.log'}",
                  file=sys.stderr)
            await trial_adversarial(log, report)
    if only is not None and only <= {"edits", "adversarial"}:
        return trials
    log_path = out / "robustness-server.log"
    with tempfile.TemporaryDirectory(prefix="lsp-copilot-robustness-") as tmp, \
            open(log_path, "wb") as log:
        print(f"server log: {log_path}", file=sys.stderr)
        client = await RawClient.start(log)
        try:
            # The deadline is a guard against hangs: on a starved machine a completion can
            # take 30-60 s, and the engine-kill trial must see the real ones come back.
            await client.initialize({"cacheDir": tmp, "requestTimeoutMs": 120_000})
            s = await client.wait_ready()
            if s["engine_state"] != "ready":
                raise SystemExit(f"error: the engine did not start: {s['engine_error']}")
            steps = [("fuzz", lambda: trial_fuzz(client, messages)),
                     ("burst", lambda: trial_burst(client)),
                     ("secrets", lambda: trial_secrets(client)),
                     ("engine-kill", lambda: trial_kill(client)),
                     ("soak", lambda: trial_soak(client, soak, max(1, soak // 10)))]
            for name, step in steps:
                if only is not None and name not in only:
                    continue
                if client.proc.returncode is not None:
                    report(Trial(name, False, "not run: the server died"))
                    continue
                ready = await client.wait_ready()  # an earlier trial may have restarted it
                if ready["engine_state"] != "ready":
                    report(Trial(name, False, f"not run: engine {ready['engine_state']}"))
                    continue
                incidents = ready["engine_incidents"]
                trial = await step()
                s = await client.stats()
                if name != "engine-kill" and s["engine_incidents"] != incidents:
                    trial.ok = False
                    trial.summary += (f"; ENGINE INCIDENTS +{s['engine_incidents'] - incidents}:"
                                      f" {s['engine_error']}")
                report(trial)
        finally:
            await client.stop()
    return trials


def run(messages: int = 10_000, soak: int = 5_000, examples: int = 200,
        only: list[str] | None = None, json_out: bool = False,
        out: Path = Path("bench-results")) -> int:
    def emit(trial: Trial) -> None:
        if not json_out:
            print(trial.line(), flush=True)

    trials = asyncio.run(_run(messages, soak, examples, set(only) if only else None, emit,
                              out))
    if json_out:
        print(json.dumps([t.__dict__ for t in trials], indent=2, default=str))
    return 0 if all(t.ok for t in trials) else 1
