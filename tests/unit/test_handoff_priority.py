"""The compiled copy loads at the lowest CPU priority and takes normal priority back just
before it takes over, on every thread (scheduling is per thread on Linux): its compile
takes both cores for a minute or two while the user types on the eager engine. Real
threads in a process of their own session (an autogroup's nice is its session's); the copy
through the real host with a fake engine."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from lsp_copilot.engine.shared import handoff
from lsp_copilot.engine.shared import host as host_mod
from lsp_copilot.engine.shared.runtime import EnginePlace, private_dir
from lsp_copilot.settings.core import Settings
from tests.support.fakes import FakeEngine

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import json, os, threading, time
from lsp_copilot.engine.shared import handoff

def threads():
    return sorted((os.sched_getscheduler(int(t)), os.getpriority(os.PRIO_PROCESS, int(t)))
                  for t in os.listdir("/proc/self/task"))

gate = threading.Event()
threading.Thread(target=gate.wait).start()  # started before: lowered by the walk
out = {"before": threads(), "group_before": handoff._autogroup_nice()}
saved = handoff.lower_priority()
threading.Thread(target=gate.wait).start()  # started after: its creator's priority
deadline = time.monotonic() + 10
while len(os.listdir("/proc/self/task")) > 3 and time.monotonic() < deadline:
    time.sleep(0.01)  # the probe's thread ends (it may keep the lowered priority)
out |= {"mode": saved.threads, "lowered": threads(), "group_lowered": handoff._autogroup_nice()}
out |= {"restored_ok": handoff.restore_priority(saved), "restored": threads(),
        "group_restored": handoff._autogroup_nice()}
gate.set()
print(json.dumps(out))
"""

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux scheduling")


def _child(*prefix: str) -> dict[str, Any]:
    """CHILD in a session of its own (it changes its autogroup's nice, which is the
    session's: not this test's)."""
    done = subprocess.run([*prefix, sys.executable, "-c", CHILD], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, start_new_session=True,
                          check=False, env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return out


def _check_autogroup(out: dict[str, Any]) -> None:
    if out["group_before"] is None:  # a kernel without autogroups
        return
    assert out["group_lowered"] == handoff.LOWEST_NICE
    assert out["group_restored"] == out["group_before"]


def test_every_thread_compiles_at_idle_priority_and_takes_its_parents_back() -> None:
    out = _child()
    normal = [os.SCHED_OTHER, out["before"][0][1]]
    assert out["before"] == [normal, normal]
    assert out["restored_ok"] and out["restored"] == [normal] * 3
    _check_autogroup(out)
    if out["mode"] == "idle":  # allowed to come back (root, CAP_SYS_NICE, RLIMIT_NICE)
        assert [policy for policy, _ in out["lowered"]] == [os.SCHED_IDLE] * 3
    elif out["mode"] == "nice":
        assert out["lowered"] == [[os.SCHED_OTHER, handoff.LOWEST_NICE]] * 3
    else:  # unprivileged: they could not come back, so they were left alone
        assert out["lowered"] == [normal] * 3


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="the test above runs unprivileged already (or no setpriv)")
def test_an_unprivileged_copy_lowers_only_what_it_can_raise_again() -> None:
    """Without privilege a thread can leave neither SCHED_IDLE nor nice 19; the autogroup's
    nice (the copy is a session of its own) comes back to 0."""
    out = _child("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                 "--inh-caps=-all", "--bounding-set=-all")
    normal = [os.SCHED_OTHER, out["before"][0][1]]
    assert out["mode"] == "" and out["lowered"] == [normal] * 3
    assert out["restored_ok"] and out["restored"] == [normal] * 3
    _check_autogroup(out)


@pytest.fixture
async def place(tmp_path: Path) -> AsyncIterator[EnginePlace]:
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"lc-prio-{os.getpid()}-{id(tmp_path)}"
    yield EnginePlace(private_dir(folder), "fake-0123456789")
    for path in folder.iterdir():
        path.unlink()
    folder.rmdir()


@pytest.mark.parametrize("raised", [True, False])
async def test_the_copy_loads_lowered_and_takes_over_only_at_normal_priority(
        place: EnginePlace, monkeypatch: pytest.MonkeyPatch, raised: bool) -> None:
    """Through ``serve``: lowered before its load starts, raised before its socket
    becomes the engine's; a copy that stayed low does not take over (the eager engine
    serves on)."""
    steps: list[str] = []
    saved = handoff.Priority(nice=0, autogroup=0, threads="idle")

    def lower() -> handoff.Priority:
        steps.append("lower")
        return saved

    def restore(given: handoff.Priority) -> bool:
        assert given is saved
        steps.append("restore")
        return raised

    def take_over(place: EnginePlace, bound: Path, replaces: int) -> bool:
        steps.append("take over")
        return False  # (the engine it was compiled for is gone: serve returns)

    def load(settings: Any, report: Any) -> FakeEngine:
        steps.append("load")
        return FakeEngine()

    monkeypatch.setattr(handoff, "lower_priority", lower)
    monkeypatch.setattr(handoff, "restore_priority", restore)
    monkeypatch.setattr(handoff, "take_over", take_over)
    monkeypatch.setattr(host_mod, "_kill_group", lambda: None)  # its shutdown guard
    monkeypatch.setenv("PYTHONFAULTHANDLER", "1")
    loop = asyncio.get_running_loop()
    try:
        code = await asyncio.wait_for(host_mod.serve(
            place, Settings().engine_setup, "fake", 1.0, load, replaces=1), 30)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.remove_signal_handler(sig)
    assert code == 0
    assert steps == (["lower", "load", "restore", "take over"] if raised
                     else ["lower", "load", "restore"])
