"""Scheduling logic (merge, reuse, typing-through, cache, debounce, overload).

These tests use a FAKE engine that streams scripted text: they check the scheduling
logic only. The same behaviours are checked through the real engine in tests/e2e.
"""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import AsyncGenerator
from pathlib import Path

import pytest

from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.engine.base import EngineRequest, EngineResult
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.pipeline.completer import Completer
from lsp_copilot.pipeline.completion_cache import CompletionCache
from lsp_copilot.pipeline.scheduling import Debouncer
from lsp_copilot.privacy import secret_reason
from lsp_copilot.settings.core import Settings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.telemetry import Telemetry
from tests.support.fakes import FakeEngine
from tests.support.pipeline import URI, completer_for, snap

SOURCE = "def add(a, b):\n    return "


async def test_fake_engine_typing_through_needs_no_call() -> None:
    engine = FakeEngine()
    completer = await completer_for(engine)
    first = await completer.complete(snap(SOURCE), len(SOURCE))
    assert first.text == "a + b" and first.source == "engine"
    typed = SOURCE + "a +"
    second = await completer.complete(snap(typed), len(typed))
    assert second.text == " b" and second.source == "typed_through"
    assert len(engine.prompts) == 1
    assert completer.telemetry.counters["typed_through"] == 1
    # Typing something else: the suggestion no longer applies.
    other = SOURCE + "x"
    third = await completer.complete(snap(other), len(other))
    assert third.source == "engine" and len(engine.prompts) == 2


async def test_fake_engine_request_extending_inflight_prompt_reuses_it() -> None:
    # The prompt ends before the typed space; a BPE model writes it back: " a".
    engine = FakeEngine(reply=" a + b + c\n", step_s=0.02)
    completer = await completer_for(engine, typing_through=False)
    first = asyncio.ensure_future(completer.complete(snap(SOURCE), len(SOURCE)))
    await engine.streamed(2)  # in flight, " a" generated
    typed = SOURCE + "a "
    second = await completer.complete(snap(typed), len(typed))
    assert second.source == "merged" and second.text == "+ b + c"
    assert (await first).text == "a + b + c"
    assert len(engine.prompts) == 1
    assert completer.telemetry.counters["merged"] == 1
    assert completer.telemetry.counters["flights_joined"] == 1


class _ByPromptEngine(FakeEngine):
    """Answers a prompt that ends with the user's ``a +`` with `` b``; others with a
    fragment that nothing can be shown of."""

    def stream(self, request: EngineRequest) -> AsyncGenerator[EngineResult, None]:
        self.reply = " b\n" if request.prompt.rstrip().endswith("a +") else " a + b.\n"
        return super().stream(request)


async def test_fake_engine_a_joined_generation_with_nothing_usable_asks_afresh() -> None:
    """The shared generation's rest is a fragment at the new position: the request does
    not answer empty, it starts its own generation."""
    engine = _ByPromptEngine(step_s=0.02)
    completer = await completer_for(engine, typing_through=False)
    first = asyncio.ensure_future(completer.complete(snap(SOURCE), len(SOURCE)))
    await engine.streamed(4)  # in flight, " a +" generated: the next request joins it
    typed = SOURCE + "a +"
    second = await completer.complete(snap(typed), len(typed))
    assert (await first).text == ""  # `a + b.` is no whole statement
    assert second.source == "engine" and second.text == " b"
    assert len(engine.prompts) == 2
    assert completer.telemetry.counters["flights_joined"] == 1
    assert completer.telemetry.counters["merged_unusable"] == 1
    assert completer.telemetry.counters.get("merged", 0) == 0


async def test_fake_engine_a_joined_generation_at_the_same_place_is_not_asked_again() -> None:
    """Asked again with the same prompt, the engine would write the same fragment."""
    engine = FakeEngine(reply=" a + b.\n", step_s=0.02)
    completer = await completer_for(engine, typing_through=False)
    first = asyncio.ensure_future(completer.complete(snap(SOURCE), len(SOURCE)))
    await engine.streamed(2)
    second = await completer.complete(snap(SOURCE), len(SOURCE))
    assert (await first).text == "" and second.text == ""
    assert len(engine.prompts) == 1
    assert completer.telemetry.counters.get("merged_unusable", 0) == 0


@pytest.mark.parametrize("template", ["qwen2.5-coder", "codellama", "prefix-only"])
async def test_fake_engine_fill_in_the_middle_prompts_merge_too(template: str) -> None:
    """A keystroke changes a FIM prompt inside (before the suffix), not at its end."""
    engine = FakeEngine(reply=" a + b + c\n", step_s=0.02)
    completer = await completer_for(engine, typing_through=False, template=template)
    after = "\n\nprint(add(1, 2))\n"
    first = asyncio.ensure_future(completer.complete(snap(SOURCE + after), len(SOURCE)))
    await engine.streamed(2)  # in flight, " a" generated
    typed = SOURCE + "a "
    second = await completer.complete(snap(typed + after), len(typed))
    assert second.source == "merged" and second.text == "+ b + c"
    assert (await first).text == "a + b + c"
    assert len(engine.prompts) == 1


async def test_fake_engine_enter_takes_the_next_line_under_way() -> None:
    """At the end of a finished line the model writes the next line; the request after
    Enter (and the editor's indentation) joins that generation instead of starting one."""
    line = "def add(a, b):\n    total = a + b"
    engine = FakeEngine(reply="\n    return total\n", step_s=0.02)
    completer = await completer_for(engine, typing_through=False)
    first = asyncio.ensure_future(completer.complete(snap(line), len(line)))
    await engine.streamed(2)
    typed = line + "\n    "
    second = await completer.complete(snap(typed), len(typed))
    assert second.source == "merged" and second.text == "return total"
    assert (await first).text == "\n    return total"
    assert len(engine.prompts) == 1


async def test_fake_engine_enter_takes_what_the_generation_wrote_along_the_line() -> None:
    """At `a: int,` the model went on along the line (` b: int,`); the user pressed Enter
    instead. Inside brackets that is the same code: the new line gets `b: int,`."""
    engine = FakeEngine(reply=" b: int,\n    c: int,\n", step_s=0.02)
    completer = await completer_for(engine, typing_through=False)
    line, after = "def add(\n    a: int,", "\n) -> int:\n    return a\n"
    first = await completer.complete(snap(line + after), len(line))
    assert first.text == " b: int,"
    typed = line + "\n    "
    second = await completer.complete(snap(typed + after), len(typed))
    assert second.source == "merged" and second.text == "b: int,"
    assert len(engine.prompts) == 1


async def test_fake_engine_an_answer_at_the_line_end_goes_on_with_the_next_line() -> None:
    """The answer comes when its line is whole; the generation writes the next line
    meanwhile, for the pause at the end of the line and for the request after Enter."""
    reply = " b)\n    return total\n"
    engine = FakeEngine(reply=reply, step_s=0.02)
    completer = await completer_for(engine, typing_through=False)
    line = "def add(a, b):\n    total = f(a,"
    first = await completer.complete(snap(line), len(line))
    assert first.text == " b)" and engine.sent != reply  # answered, still generating
    typed = line + " b)"
    pause = await completer.complete(snap(typed), len(typed))
    assert pause.source == "merged" and pause.text == "\n    return total"
    typed += "\n    "
    enter = await completer.complete(snap(typed), len(typed))
    assert enter.source == "merged" and enter.text == "return total"
    assert len(engine.prompts) == 1 and engine.aborted == 0


async def test_fake_engine_a_keystroke_elsewhere_stops_the_next_line() -> None:
    engine = FakeEngine(reply=" b)\n    return total\n", step_s=0.02)
    completer = await completer_for(engine, typing_through=False)
    line = "def add(a, b):\n    total = f(a,"
    assert (await completer.complete(snap(line), len(line))).text == " b)"
    typed = line + " c"
    await completer.complete(snap(typed), len(typed))
    assert engine.aborted == 1 and len(engine.prompts) == 2


async def test_fake_engine_typing_all_of_an_answer_asks_what_follows() -> None:
    """The user typed the whole answer of a finished generation: its empty rest is no
    answer (the pause at the end of the line wants the next line), so ask again."""
    engine = FakeEngine(reply=" b\n")
    completer = await completer_for(engine, typing_through=False)
    assert (await completer.complete(snap(SOURCE + "a +"), len(SOURCE) + 3)).text == " b"
    typed = SOURCE + "a + b"
    again = await completer.complete(snap(typed), len(typed))
    assert again.source == "engine" and len(engine.prompts) == 2


async def test_fake_engine_a_generation_behind_the_user_is_not_joined() -> None:
    """Typed further than a (stalled) generation got: start afresh, do not wait on it."""
    engine = FakeEngine(reply=" a + b\n", step_s=0.3)
    completer = await completer_for(engine, typing_through=False)
    first = asyncio.ensure_future(completer.complete(snap(SOURCE), len(SOURCE)))
    await engine.started.wait()  # started, nothing generated yet (0.3 s a step)
    engine.step_s = 0.01  # the fresh generation need not be slow too
    typed = SOURCE + "a + "
    second = await completer.complete(snap(typed), len(typed))
    assert second.source == "engine" and len(engine.prompts) == 2
    assert engine.aborted == 1 and first.done()


async def test_fake_engine_a_generation_nobody_can_use_stops_before_the_debounce() -> None:
    engine = FakeEngine(reply=" a + b + c + d\n", step_s=0.05)
    completer = await completer_for(engine, typing_through=False, debounce_mode="fixed",
                                    debounce_ms=2000, merge_window_ms=5000)
    first = asyncio.ensure_future(completer.complete(snap(SOURCE), len(SOURCE), prefetch=True))
    await engine.streamed(2)
    first.cancel()  # the client moved on; the generation waits for a reuse
    other = SOURCE + "x"  # diverges: it cannot use that generation
    second = asyncio.ensure_future(completer.complete(snap(other), len(other)))
    await asyncio.wait_for(engine.aborts.wait(), 5)
    assert len(engine.prompts) == 1  # aborted while the new request still debounces
    second.cancel()


async def test_fake_engine_backspace_reuses_inflight_generation() -> None:
    engine = FakeEngine(reply=" b\n", step_s=0.02)  # the space the prompt ends before
    completer = await completer_for(engine, typing_through=False)
    longer = SOURCE + "a + "
    first = asyncio.ensure_future(completer.complete(snap(longer), len(longer)))
    await engine.started.wait()
    shorter = SOURCE + "a +"
    second = await completer.complete(snap(shorter), len(shorter))
    assert second.source == "merged" and second.text == " b"
    await first
    assert len(engine.prompts) == 1


async def test_fake_engine_diverging_request_aborts_old_generation() -> None:
    engine = FakeEngine(reply=" a + b + c + d + e\n", step_s=0.02)
    completer = await completer_for(engine, typing_through=False)
    first = asyncio.ensure_future(completer.complete(snap(SOURCE), len(SOURCE)))
    await engine.started.wait()
    other = "import os\n" + SOURCE
    await completer.complete(snap(other), len(other))
    assert engine.aborted == 1
    assert completer.telemetry.counters["engine_aborted"] == 1
    assert (await first).text == ""  # its generation was aborted: nothing to show


async def test_fake_engine_cache_survives_restart(tmp_path: Path) -> None:
    engine = FakeEngine()
    cache = CompletionCache(tmp_path / "ws")
    completer = await completer_for(engine, cache, typing_through=False)
    assert (await completer.complete(snap(SOURCE), len(SOURCE))).source == "engine"
    cache.close()
    restarted = CompletionCache(tmp_path / "ws")  # a new process would open the same folder
    completer2 = await completer_for(engine, restarted, typing_through=False)
    again = await completer2.complete(snap(SOURCE), len(SOURCE))
    assert again.source == "cache" and again.text == "a + b"
    assert len(engine.prompts) == 1
    # Owner-only permissions on everything the cache wrote.
    for path in (tmp_path / "ws").rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, (path, oct(mode))
    restarted.close()


async def test_fake_engine_cache_is_per_workspace(tmp_path: Path) -> None:
    engine = FakeEngine()
    a = await completer_for(engine, CompletionCache(tmp_path / "a"), typing_through=False)
    b = await completer_for(engine, CompletionCache(tmp_path / "b"), typing_through=False)
    await a.complete(snap(SOURCE), len(SOURCE))
    assert (await b.complete(snap(SOURCE), len(SOURCE))).source == "engine"
    assert len(engine.prompts) == 2


async def test_fake_engine_secret_never_sent_or_cached(tmp_path: Path) -> None:
    engine = FakeEngine()
    cache = CompletionCache(tmp_path / "ws")
    completer = await completer_for(engine, cache)
    for uri in ("file:///w/.env", "file:///w/deploy/id_rsa", "file:///w/server.pem"):
        out = await completer.complete(snap(SOURCE, uri), len(SOURCE))
        assert out.text == "" and out.reason and "private" in out.reason
    key_text = "KEY = '''-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n'''\n" + SOURCE
    out = await completer.complete(snap(key_text, "file:///w/cfg.py"), len(key_text))
    assert out.text == ""
    assert engine.prompts == [] and len(cache) == 0
    assert completer.telemetry.counters["secret_skipped"] == 4


def test_secret_patterns() -> None:
    assert secret_reason("file:///a/.env.local", b"") is not None
    assert secret_reason("file:///a/credentials.json", b"") is not None
    # Tokens in ordinary files are redacted from prompts, not withheld (test_redaction.py).
    assert secret_reason("file:///a/x.py", b"token = 'ghp_" + b"a" * 36 + b"'") is None
    assert secret_reason("file:///a/x.py", b"key = 'AKIAABCDEFGHIJKLMNOP'") is None
    assert secret_reason("file:///a/environment.py", b"def env(): pass") is None


async def test_fake_engine_overload_answers_empty_at_once() -> None:
    engine = FakeEngine(step_s=0.05)
    completer = await completer_for(engine, max_queue=1, typing_through=False)
    first = asyncio.ensure_future(completer.complete(snap(SOURCE, "file:///w/a.py"), len(SOURCE)))
    await engine.started.wait()
    second = await completer.complete(snap(SOURCE, "file:///w/b.py"), len(SOURCE))
    assert second.text == "" and completer.telemetry.counters["overloaded"] == 1
    assert (await first).text == "a + b"
    third = await completer.complete(snap(SOURCE, "file:///w/c.py"), len(SOURCE))
    assert third.text == "a + b"  # recovered once the queue drained


def test_debounce_with_a_scripted_clock() -> None:
    now = [0.0]
    deb = Debouncer(clock=lambda: now[0])

    def keystroke(after_ms: float, before: str = "x = fo", after: str = "") -> float:
        now[0] += after_ms / 1000
        return deb.delay_ms("u", "adaptive", 75, 250, before, after)

    assert keystroke(0) == 0.0  # first request: nothing learned yet, start now
    assert keystroke(100) == pytest.approx(180.0)  # a little over the learned gap
    for _ in range(5):
        keystroke(100)
    assert keystroke(100) == pytest.approx(180.0)
    # After a trigger: sooner.
    assert keystroke(100, before="x = foo(", after=")") == pytest.approx(60.0)
    assert keystroke(100, before="x = foo(a, ", after=")") == pytest.approx(60.0)
    # What ends a line, at its end: now (Enter and a pause are likely to follow).
    assert keystroke(100, before="x = foo(a)") == 0.0
    assert keystroke(100, before="    b: int,") == 0.0
    assert keystroke(100, before="x = foo(a, ") == 0.0  # a space after one
    assert keystroke(100, before="    y = self.") == 0.0  # a trigger with nothing after it
    assert keystroke(100, before="    y = ") == 0.0
    assert keystroke(100, before="    y = self.", after=")") == pytest.approx(60.0)
    assert keystroke(100, before="    ") == 0.0  # a new (indented) line: Enter
    assert keystroke(100, before="    ", after="x") == pytest.approx(60.0)
    assert keystroke(100, before="return ") == pytest.approx(180.0)  # any other space
    # A pause before a keystroke says nothing of the next gap (typing resumes in a burst):
    # the usual wait, and the rhythm barely moves.
    assert keystroke(1000) == pytest.approx(180.0, rel=0.2)
    assert keystroke(90) <= 250.0
    for _ in range(10):  # bursts with a pause at each line end: pauses are not the rhythm
        for _ in range(8):
            keystroke(100)
        keystroke(1200)
    assert keystroke(100) == pytest.approx(180.0, rel=0.25)
    assert deb.delay_ms("u", "fixed", 75, 250, "", "") == 75
    assert deb.delay_ms("u", "off", 75, 250, "", "") == 0.0


async def test_fake_engine_typed_through_keystrokes_still_teach_the_debounce() -> None:
    now = [0.0]
    engine = FakeEngine()
    manager = EngineManager(factory=lambda s, report: engine)
    assert (await manager.start(Settings().engine_setup)).ok
    s = Settings(debounce_mode="adaptive")
    completer = Completer(manager, Telemetry(), SettingsHub(s), lambda: None, clock=lambda: now[0])
    await completer.complete(snap(SOURCE), len(SOURCE))  # first request: no wait
    for typed in ("a", "a ", "a +"):  # answered by typing-through, 100 ms apart
        now[0] += 0.1
        text = SOURCE + typed
        assert (await completer.complete(snap(text), len(text))).source == "typed_through"
    # The next request follows the same rhythm: it waits about the learned 100 ms gap (had
    # the typed-through keystrokes been missed, it would see one 400 ms gap instead).
    now[0] += 0.1
    delay = completer.debouncer.delay_ms(URI, "adaptive", 75, 250, "x = a +", "")
    assert delay == pytest.approx(180.0)


async def test_fake_engine_trace_has_timings_and_no_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("LSP_COPILOT_TRACE", str(trace))
    engine = FakeEngine()
    manager = EngineManager(factory=lambda s, report: engine)
    assert (await manager.start(Settings().engine_setup)).ok
    s = Settings(debounce_mode="off", cache=False)
    completer = Completer(manager, Telemetry(), SettingsHub(s))
    assert (await completer.complete(snap(SOURCE), len(SOURCE))).text == "a + b"
    record = json.loads(trace.read_text().splitlines()[0])
    assert record["status"] == "answered" and record["source"] == "engine"
    assert "prompt_tokens" in record and record["total"] >= record["engine"] > 0
    assert "a + b" not in trace.read_text() and "def add" not in trace.read_text()


async def test_fake_engine_deadline_never_cuts_a_line() -> None:
    """A slow single-line generation is not cut at the deadline mid-line (a fragment is
    worse than waiting): the whole line comes, and nothing counts as a deadline answer."""
    engine = FakeEngine(" alpha + beta_gamma(delta)\n", step_s=0.02)
    completer = await completer_for(engine, None, deadline_ms=30)
    outcome = await completer.complete(snap(SOURCE), len(SOURCE))
    assert outcome.text == "alpha + beta_gamma(delta)", outcome.reason
    assert completer.telemetry.counters["deadline_answers"] == 0


async def test_fake_engine_deadline_cuts_multi_line_at_a_whole_line(tmp_path: Path) -> None:
    """Past the deadline a multi-line generation stops at the first line end where the
    answer is whole (not inside the open call), and that cut answer is not cached."""
    source = "def f(xs):\n    "
    raw = (" print(xs,\n          1)\n    total = 0\n    for x in xs:\n"
           "        total += x\n    return total\n")
    engine = FakeEngine(raw, step_s=0.02)
    cache = CompletionCache(tmp_path / "c")
    completer = await completer_for(engine, cache, deadline_ms=30)
    outcome = await completer.complete(snap(source), len(source))
    assert outcome.text == "print(xs, 1)", outcome.raw  # (put on one line: it fits)
    assert completer.telemetry.counters["deadline_answers"] == 1
    patient = await completer_for(engine, cache, deadline_ms=0)
    engine.step_s = 0.001  # without a deadline, speed no longer matters
    full = await patient.complete(snap(source), len(source))
    assert full.source == "engine" and full.text.endswith("return total"), full.reason


async def test_fake_engine_a_request_joining_a_generation_keeps_its_own_deadline() -> None:
    """A prefetch has no deadline; the typing request that joins it has one: past it, the
    request answers with the whole lines written so far, and the generation goes on."""
    source = "def f(xs):\n    "
    raw = " total = 0\n    for x in xs:\n        total += x\n    return total\n"
    engine = FakeEngine(raw, step_s=0.02)
    completer = await completer_for(engine, None, deadline_ms=30)
    prefetch = asyncio.ensure_future(completer.complete(snap(source), len(source),
                                                        prefetch=True))
    await engine.streamed(2)
    typing = await completer.complete(snap(source), len(source))
    assert typing.source == "merged" and typing.text.startswith("total = 0"), typing
    assert not typing.text.endswith("return total") and not prefetch.done()
    assert completer.telemetry.counters["deadline_answers"] == 1
    assert (await prefetch).text.endswith("return total")
    assert len(engine.prompts) == 1


async def test_fake_engine_explicit_request_has_no_deadline() -> None:
    """The user asked: the whole answer, however slow, and several lines on an empty one."""
    source = "def f(xs):\n    total = 0\n\n    "
    engine = FakeEngine(" for x in xs:\n        total += x\n    return total\n",
                        step_s=0.01)  # its first whole line comes long after the deadline
    completer = await completer_for(engine, None, deadline_ms=30)
    outcome = await completer.complete(snap(source), len(source), explicit=True)
    assert outcome.mode == "multi-line"
    assert outcome.text == "for x in xs:\n        total += x\n    return total", outcome.raw
    assert completer.telemetry.counters["deadline_answers"] == 0


async def test_fake_engine_prefetch_has_no_deadline() -> None:
    """Nobody waits for a prefetch: it computes the whole answer, to be ready and cached."""
    engine = FakeEngine(" alpha + beta_gamma(delta)\n", step_s=0.02)
    completer = await completer_for(engine, None, deadline_ms=100)
    outcome = await completer.complete(snap(SOURCE), len(SOURCE), prefetch=True)
    assert outcome.text == "alpha + beta_gamma(delta)"
    assert completer.telemetry.counters["deadline_answers"] == 0


async def test_fake_engine_prefetch_after_an_accept_waits_for_the_text_then_completes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The accept may come before the didChange that inserts the text: the prefetch waits
    for it, completes where it ends, and the request typed there is answered from it."""
    from lsp_copilot.pipeline import prefetch

    monkeypatch.setattr(prefetch, "PREFETCH_WAIT_S", 60.0)  # (a bound, not a measurement)
    engine = FakeEngine(" b\n", step_s=0.001)
    completer = await completer_for(engine, CompletionCache(None))
    store = DocumentStore()
    store.open(URI, "python", 1, SOURCE)
    task = asyncio.ensure_future(  # accepted, not in the document yet
        prefetch.prefetch_after(completer, store, "utf-16", URI, 1, 11, "a + "))
    for _ in range(5):
        await asyncio.sleep(0.02)  # it looks, and waits
    assert engine.prompts == [] and not task.done()
    store.change(URI, 2, [(None, SOURCE + "a + ")], "utf-16")  # the didChange
    await task
    assert completer.telemetry.counters["prefetched"] == 1 and len(engine.prompts) == 1
    assert engine.prompts[0].endswith(SOURCE + "a +")  # (the space is left to the model)
    typed = store.snapshot(URI)
    outcome = await completer.complete(typed, len(typed.data))
    assert (outcome.text, outcome.source) == ("b", "cache") and len(engine.prompts) == 1
    # Text the document never gets: no prefetch once the wait is over.
    monkeypatch.setattr(prefetch, "PREFETCH_WAIT_S", 0.05)
    await prefetch.prefetch_after(completer, store, "utf-16", URI, 1, 15, "zz")
    assert completer.telemetry.counters["prefetched"] == 1 and len(engine.prompts) == 1


async def test_fake_engine_request_timeout_answers_the_whole_lines_it_has() -> None:
    """requestTimeoutMs is a time limit too: it cuts at a line end, never mid-line, and an
    explicit request that ran into it gets what was whole by then (not cached)."""
    source = "def f(xs):\n    total = 0\n\n    "
    reply = " a = 1\n    b = [" + "1, " * 200  # the second line never ends in time
    engine = FakeEngine(reply, step_s=0.02)
    settings = Settings(debounce_mode="off", request_timeout_ms=300)
    manager = EngineManager(factory=lambda s, report: engine)
    assert (await manager.start(settings.engine_setup)).ok
    completer = Completer(manager, Telemetry(), SettingsHub(settings))
    outcome = await completer.complete(snap(source), len(source), explicit=True)
    assert outcome.text == "a = 1", outcome.raw
    assert completer.telemetry.counters["deadline_answers"] == 1


async def test_fake_engine_disabled_language_is_answered_at_once_without_a_call() -> None:
    engine = FakeEngine()
    # An hour's debounce: only an answer that skips it can come back before the bound.
    completer = await completer_for(engine, disabled_languages=("Markdown", "python"),
                                    debounce_mode="fixed", debounce_ms=3_600_000)
    outcome = await asyncio.wait_for(completer.complete(snap(SOURCE), len(SOURCE)), 60)
    assert outcome.text == "" and "disabledLanguages" in (outcome.reason or "")
    assert engine.prompts == []
    assert completer.telemetry.counters["disabled_language"] == 1
    store = DocumentStore()  # another language still gets its completion
    store.open("file:///w/calc.js", "javascript", 1, "function add(a, b) {\n  return ")
    js = store.snapshot("file:///w/calc.js")
    completer.settings = Settings(disabled_languages=("python",), debounce_mode="off",
                                  deadline_ms=0).request
    other = await completer.complete(js, len(js.data))
    assert other.source == "engine" and len(engine.prompts) == 1


async def test_fake_engine_request_whose_document_closes_is_no_engine_error() -> None:
    # A request still waiting when its document closes gets no answer, for that reason: an
    # engine error would send whoever reads the log looking for a fault in the engine.
    engine = FakeEngine(reply=" a + b + c + d + e\n", step_s=0.05)
    completer = await completer_for(engine)
    first = asyncio.ensure_future(completer.complete(snap(SOURCE), len(SOURCE)))
    await engine.streamed(2)
    completer.forget(URI)
    outcome = await first
    assert outcome.text == "" and outcome.reason == "the document closed"
    engine.down = True  # a failing engine still says so
    failed = await completer.complete(snap(SOURCE + "a"), len(SOURCE) + 1)
    assert failed.text == "" and failed.reason == "engine error"


async def test_fake_engine_request_replaced_by_a_newer_one_says_so() -> None:
    # A client that does not cancel the request a newer one replaces (the new prompt
    # cannot join its generation) gets the reason, not an engine error.
    engine = FakeEngine(reply=" a + b + c + d + e\n", step_s=0.05)
    completer = await completer_for(engine)
    first = asyncio.ensure_future(completer.complete(snap(SOURCE), len(SOURCE)))
    await engine.streamed(2)
    other = "def sub(a, b):\n    return "
    second = await completer.complete(snap(other), len(other))
    outcome = await first
    assert outcome.text == "" and "newer request" in outcome.reason
    assert second.text == "a + b + c + d + e" and len(engine.prompts) == 2


async def test_fake_engine_request_joined_to_a_generation_its_document_closed_asks_nothing(
) -> None:
    # Its document is closed: asking the engine afresh would be a call nobody reads.
    engine = FakeEngine(reply=" a + b + c + d + e\n", step_s=0.05)
    completer = await completer_for(engine, typing_through=False)
    first = asyncio.ensure_future(completer.complete(snap(SOURCE), len(SOURCE)))
    await engine.streamed(2)
    joined = asyncio.Event()
    count = completer.telemetry.count

    def counting(name: str, n: int = 1) -> None:
        count(name, n)
        if name == "flights_joined":
            joined.set()

    completer.telemetry.count = counting  # type: ignore[method-assign]
    typed = SOURCE + "a"
    second = asyncio.ensure_future(completer.complete(snap(typed), len(typed)))
    await joined.wait()
    completer.forget(URI)
    for outcome in await asyncio.gather(first, second):
        assert outcome.text == "" and outcome.reason == "the document closed"
    assert len(engine.prompts) == 1


async def test_fake_engine_a_keystroke_cancelled_in_its_debounce_built_no_context() -> None:
    """Debounce first: the request the next keystroke cancels while it waits has paid
    for no context (the context is built after the wait)."""
    engine = FakeEngine(reply=" b)\n")
    completer = await completer_for(engine, debounce_mode="fixed", debounce_ms=5000)
    built: list[int] = []
    build = completer.context_builder
    completer.context_builder = lambda *a, **k: built.append(1) or build(*a, **k)
    waiting = asyncio.Event()
    delay_ms = completer.debouncer.delay_ms

    def noted_delay(*args: object, **kwargs: object) -> float:
        waiting.set()
        return delay_ms(*args, **kwargs)  # type: ignore[arg-type]

    completer.debouncer.delay_ms = noted_delay  # type: ignore[method-assign]
    line = "def add(a, b):\n    total = f(a,"
    task = asyncio.ensure_future(completer.complete(snap(line), len(line)))
    await waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert built == [] and engine.prompts == []
