"""Warm-up logic with a FAKE engine that records prompts (the real engine: tests/e2e).

What matters is that the warm-up prefills exactly the start of the prompt the first
completion will send, at the lowest priority, and gets out of the way of real requests.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

from lsp_copilot.documents.store import DocumentStore, Snapshot
from lsp_copilot.engine.manager import EngineManager
from lsp_copilot.pipeline.completer import Completer
from lsp_copilot.pipeline.warmup import PRIORITY, Warmer, chunks
from lsp_copilot.settings.core import Settings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.telemetry import Telemetry
from tests.support.fakes import FakeEngine
from tests.support.models import smollm2_like_folder
from tests.support.poll import until

URI = "file:///w/shapes.py"


def _recording(delay_s: float = 0.0) -> FakeEngine:
    """Answers "x" after ``delay_s`` (a prefill); records every request."""
    return FakeEngine(reply="x\n", delay_s=delay_s)


def _source() -> str:
    # Real code of a realistic size: a module of this repository.
    path = Path(__file__).resolve().parents[2] / "lsp_copilot" / "pipeline" / "completer.py"
    return path.read_text()


async def _setup(engine: FakeEngine, **settings: object) -> tuple[Completer, Warmer,
                                                                       Telemetry]:
    manager = EngineManager(factory=lambda s, report: engine)
    assert (await manager.start(Settings().engine_setup)).ok
    s = Settings(debounce_mode="off", cache=False, **settings)  # type: ignore[arg-type]
    telemetry = Telemetry()
    completer = Completer(manager, telemetry, SettingsHub(s))
    return completer, Warmer(completer, telemetry, SettingsHub(s)), telemetry


def _store(text: str, uri: str = URI) -> DocumentStore:
    store = DocumentStore()
    store.open(uri, "python", 1, text)
    return store


def _snap(store: DocumentStore, uri: str = URI) -> Snapshot:
    return store.snapshot(uri)


def test_chunks_are_growing_prefixes_cut_at_line_ends() -> None:
    prompt = "".join(f"line {i} = {i * 7}\n" for i in range(200)) + "tail"
    parts = chunks(prompt, lambda t: len(t) // 3, size=100)
    assert parts[-1] == prompt and len(parts) > 3
    for a, b in itertools.pairwise(parts):
        assert b.startswith(a) and a.endswith("\n")
        assert len(b) // 3 - len(a) // 3 + 3 >= 100  # about a chunk apart
    assert chunks("short\n", len) == ["short\n"]


async def test_fake_engine_warm_up_prefills_the_first_completions_prompt() -> None:
    engine = _recording()
    completer, warmer, telemetry = await _setup(engine)
    store = _store(_source())
    warmer.opened(_snap(store))
    assert warmer.running
    await until(lambda: not warmer.running)
    warm = list(engine.requests)
    assert warm and all(r.priority == PRIORITY and r.max_tokens == 1 for r in warm)
    assert telemetry.counters["warmed_up"] == 1
    # The user appends a line at the end and asks for a completion there.
    text = _source()
    store.change(URI, 2, [(None, text + "def helper(")], "utf-16")
    snap = _snap(store)
    await completer.complete(snap, len(snap.data))
    real = engine.requests[-1]
    assert real.priority < PRIORITY
    assert real.prompt.startswith(warm[-1].prompt)
    assert len(warm[-1].prompt) > 0.9 * len(real.prompt)
    # One source of ids, the Completer's, for warm-ups and completions alike.
    ids = [r.request_id for r in engine.requests]
    assert ids == [f"lsp-copilot-warm-{n}" for n in range(1, len(warm) + 1)] + [
        f"lsp-copilot-{len(warm) + 1}"]
    other, _, _ = await _setup(_recording())  # another server's Completer: its own ids
    assert other.request_ids.new() == "lsp-copilot-1"


async def test_fake_engine_real_request_cancels_the_warm_up() -> None:
    engine = _recording(0.2)
    _, warmer, telemetry = await _setup(engine)
    store = _store(_source())
    warmer.opened(_snap(store))
    await until(lambda: engine.requests)  # a prefill in flight (0.2 s long)
    assert warmer.running
    warmer.cancel()  # what the completion handler does first
    await asyncio.wait_for(engine.aborts.wait(), 5)
    await until(lambda: not warmer.running)
    assert engine.aborted == 1
    assert telemetry.counters["warm_up_aborted"] == 1 and telemetry.counters["warmed_up"] == 0


async def test_fake_engine_no_warm_up_when_busy_disabled_or_secret() -> None:
    engine = _recording()
    completer, warmer, telemetry = await _setup(engine, warm_up=False)
    warmer.opened(_snap(_store(_source())))
    assert not warmer.running
    completer, warmer, telemetry = await _setup(engine)
    secret = DocumentStore()
    secret.open("file:///w/.env", "dotenv", 1, "API_KEY=abc\n")
    warmer.opened(secret.snapshot("file:///w/.env"))
    assert not warmer.running
    # Busy: a real generation is in flight when the warm-up would start.
    slow = _recording(0.3)
    completer, warmer, telemetry = await _setup(slow)
    store = _store(_source())
    real = asyncio.ensure_future(completer.complete(_snap(store), len(_source())))
    await until(lambda: slow.requests)  # the user's generation is in flight
    warmer.opened(_snap(store))
    await until(lambda: not warmer.running)  # it looked, and left the engine alone
    assert telemetry.counters["warmed_up"] == 0
    await real
    assert all(r.priority != PRIORITY for r in slow.requests)


async def test_fake_engine_with_token_ids_warms_exact_id_prefixes(tmp_path: Path) -> None:
    """With the model's tokenizer the Completer sends token ids: the warm-up's chunks must
    be exact prefixes of those ids, a whole number of cache blocks apart (a real BPE
    tokenizer built in tmp_path, not a prepared model)."""
    from lsp_copilot.prompts.encoder import PromptEncoder
    from lsp_copilot.tokens import TokenCounters

    model = str(smollm2_like_folder(tmp_path))
    engine = _recording()
    engine.encoder = PromptEncoder.for_model(model)  # type: ignore[attr-defined]
    engine.counter = TokenCounters().for_model(model)  # type: ignore[assignment]
    assert engine.encoder is not None  # type: ignore[attr-defined]
    completer, warmer, _ = await _setup(engine)
    # Another document than the other tests': the context engine memoizes a line's base
    # prompt per document, and they counted tokens differently.
    uri = "file:///w/shapes_ids.py"
    store = _store(_source(), uri)
    assert await warmer.prefill(engine, _snap(store, uri))
    warm = [r.prompt_token_ids for r in engine.requests]
    assert all(ids for ids in warm) and len(warm) > 1
    for a, b in itertools.pairwise(warm):
        assert a is not None and b is not None and b[:len(a)] == a and len(a) % 256 == 0
    store.change(uri, 2, [(None, _source() + "def helper(")], "utf-16")
    snap = _snap(store, uri)
    await completer.complete(snap, len(snap.data))
    real = engine.requests[-1].prompt_token_ids
    last = warm[-1]
    assert real is not None and last is not None
    # All of the warmed ids but the last token or two (merges at the join) are shared.
    shared = next((i for i, (x, y) in enumerate(zip(real, last, strict=False)) if x != y),
                  min(len(real), len(last)))
    assert shared >= len(last) - 2 and len(last) > 0.9 * len(real)


async def test_fake_engine_no_warm_up_for_a_disabled_language() -> None:
    engine = _recording()
    _, warmer, _ = await _setup(engine, disabled_languages=("python",))
    warmer.opened(_snap(_store(_source())))
    assert not warmer.running and engine.requests == []


async def test_fake_engine_warm_up_on_a_routed_engine_renders_the_completers_prompt() -> None:
    """Typing goes to another route's engine: the `template` setting names the main model's
    family, so the warm-up, like the Completer, renders that engine's own family."""
    from lsp_copilot.engine.base import EngineInfo
    from lsp_copilot.engine.routes import Routes

    main = _recording()
    main.info = EngineInfo("fake", "main-model", "cpu", True, None, "qwen2.5-coder")
    small = _recording()
    small.info = EngineInfo("fake", "smollm2-135m", "cpu", True, None, "prefix-only")
    manager = EngineManager(factory=lambda s, report: main)
    assert (await manager.start(Settings().engine_setup)).ok
    routes = Routes(manager, lambda: EngineManager(factory=lambda s, report: small))
    s = Settings(debounce_mode="off", cache=False, template="qwen2.5-coder")
    await routes.start(s.engine_setup, "cpu", lambda _: None)
    await routes.manager_for("singleLine").wait_ready()
    telemetry = Telemetry()
    completer = Completer(manager, telemetry, SettingsHub(s), routes=routes)
    warmer = Warmer(completer, telemetry, SettingsHub(s))
    uri = "file:///w/shapes_routed.py"
    store = _store(_source(), uri)
    warmer.opened(_snap(store, uri))
    await until(lambda: not warmer.running)
    assert telemetry.counters["warmed_up"] == 1 and main.requests == []
    warm = small.requests[-1].prompt
    store.change(uri, 2, [(None, _source() + "def helper(")], "utf-16")
    snap = _snap(store, uri)
    await completer.complete(snap, len(snap.data))
    real = small.requests[-1].prompt
    assert "<|fim_prefix|>" not in real + warm
    assert real.startswith(warm) and len(warm) > 0.9 * len(real)
    await routes.shutdown()
