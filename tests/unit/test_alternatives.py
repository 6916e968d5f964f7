"""Several suggestions for an explicit request, and partial accepts (feedback).

A FAKE engine whose reply depends on the sampling seed checks the logic: which requests
go out, when, and what comes back. tests/e2e/test_suggestions.py checks the same through
the real engine.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from lsp_copilot.acceptance.store import OutcomeStore
from lsp_copilot.acceptance.tracker import Tracker
from lsp_copilot.documents.store import DocumentStore
from lsp_copilot.engine.base import EngineRequest, TokenChoice
from lsp_copilot.pipeline.alternatives import (
    BRANCH_DEPTH,
    HEADER_DEPTH,
    SECOND_ROUND,
    SPARE_BRANCHES,
    Branch,
    alternative_requests,
    branch_request,
    branches,
    distinct,
    led_by,
)
from lsp_copilot.prompts.encoder import PromptEncoder
from lsp_copilot.server.handlers import feedback
from lsp_copilot.settings.core import Settings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.telemetry import Telemetry
from tests.support.fakes import BranchingEngine, SeededEngine
from tests.support.models import smollm2_like_folder
from tests.support.pipeline import URI, completer_for, snap

SOURCE = "def add(a, b):\n    return "


def test_distinct_keeps_order_drops_repeats_and_blanks() -> None:
    assert distinct(["a + b", "", "a + b  ", "b + a", "  ", "a - b"], 3) == [
        "a + b", "b + a", "a - b"]
    assert distinct(["x", "y", "z"], 2) == ["x", "y"]


def test_alternative_requests_are_sampled_with_seeds_at_a_lower_priority() -> None:
    base = EngineRequest(request_id="r", prompt="p", max_tokens=8, priority=0)
    alts = alternative_requests(base, 2, 0.8)
    assert [(a.seed, a.temperature, a.priority) for a in alts] == [(1, 0.8, 2), (2, 0.8, 2)]
    assert len({a.request_id for a in alts}) == 2 and base.seed is None


def _choice(token_id: int, text: str, logprob: float) -> TokenChoice:
    return TokenChoice(token_id, text, logprob)


def test_branches_leave_the_greedy_path_where_the_model_hesitates() -> None:
    """The likeliest departures over the first positions, by joint probability: here the
    second token's runner-up beats the first token's."""
    positions = [
        (_choice(1, ' "', -0.01), _choice(2, ' blue', -3.0)),
        (_choice(3, "blue", -0.7), _choice(4, "green", -0.9), _choice(5, "yellow", -2.5)),
        (_choice(6, '",', -0.01), _choice(7, '"]', -4.0)),
    ]
    request = EngineRequest(request_id="r", prompt="p", max_tokens=8)
    found = branches(positions, request, 3)
    assert [(b.token_ids, b.text) for b in found] == [
        ((1, 4), ' "green'), ((1, 5), ' "yellow'), ((2,), ' blue')]
    assert found[0].logprob == -0.01 + -0.9


def test_branches_skip_respellings_stop_tokens_and_what_follows_the_end() -> None:
    positions = [
        # "os" + ".system" spells the greedy " os.system" another way once stripped.
        (_choice(1, " os", -0.1), _choice(2, "os", -0.5), _choice(3, " run", -1.0),
         _choice(9, "<eos>", -1.5), _choice(4, "\ufffd", -2.0)),
        (_choice(5, ".system\n", -0.1), _choice(6, ".popen", -0.3)),
        (_choice(7, "x", -0.1), _choice(8, "y", -0.2)),  # after the line ended: no branch
    ]
    request = EngineRequest(request_id="r", prompt="p", max_tokens=8, stop=("\n",),
                            stop_token_ids=(9,))
    assert [b.text for b in branches(positions, request, 5)] == [" os.popen", " run"]


def test_a_branch_request_continues_from_the_branch_greedily() -> None:
    seen: list[str] = []

    def stop_at(text: str) -> int | None:
        seen.append(text)
        return text.find(";") if ";" in text else None

    request = EngineRequest(request_id="r", prompt="p", max_tokens=8, temperature=0.5,
                            prompt_token_ids=(10, 11), stop_at=stop_at)
    branch = branch_request(request, Branch((1, 4), ' "green', -1.0), 2)
    assert branch.prompt_token_ids == (10, 11, 1, 4) and branch.prompt == 'p "green'
    assert branch.max_tokens == 6 and branch.temperature == 0.0 and branch.seed is None
    assert branch.request_id == "r-alt2" and branch.priority == 2
    assert branch.stop_at is not None and branch.stop_at('", "blue"];') == len('", "blue"]')
    assert seen == [' "green", "blue"];']  # the rule saw the whole text


async def test_explicit_request_alternatives_branch_greedily_from_listed_tokens() -> None:
    engine = BranchingEngine({"": " a + b\n", " b": " + a\n", " max": "(a, b)\n",
                              " a -": " b\n"}, (
        (_choice(1, " a", -0.1), _choice(2, " b", -1.0), _choice(3, " max", -2.0)),
        (_choice(4, " +", -0.1), _choice(5, " -", -3.0))))
    completer = await completer_for(engine)
    outcome = await completer.complete(snap(SOURCE), len(SOURCE), explicit=True)
    assert outcome.text == "a + b" and outcome.alternatives == ["b + a", "max(a, b)"]
    first, listing, *rest = engine.requests
    # Two alternatives wanted, SPARE_BRANCHES more continued: the likeliest usable win.
    assert listing.token_choices == 2 + SPARE_BRANCHES + 1
    assert listing.max_tokens == BRANCH_DEPTH
    assert sorted(r.prompt[len(first.prompt):] for r in rest) == [" a -", " b", " max"]
    assert all(r.temperature == 0.0 and r.seed is None for r in engine.requests)


async def test_explicit_request_answers_distinct_alternatives() -> None:
    engine = SeededEngine({None: " a + b\n", 1: " b + a\n", 2: " a + b\n"})
    completer = await completer_for(engine)
    outcome = await completer.complete(snap(SOURCE), len(SOURCE), explicit=True)
    assert outcome.text == "a + b" and outcome.alternatives == ["b + a"]  # seed 2 repeats
    assert [r.seed for r in engine.requests] == [None, 1, 2, 3]  # (3 repeats too)
    assert engine.requests[0].temperature == 0.0
    # The alternatives came once the first generation had text (its prompt prefilled).
    assert engine.greedy_text_when[0] == "" and all(engine.greedy_text_when[1:])
    assert completer.telemetry.counters["alternatives"] == 1
    assert completer.telemetry.counters["engine_requests"] == 4


async def test_alternatives_are_post_processed_like_the_first() -> None:
    # An alternative that repeats the line above once cleaned up, one that only differs
    # by trailing blanks, and one that is a fragment (an open call) are all left out.
    engine = SeededEngine({None: " a + b\n", 1: " a + b   \n", 2: " max(a,\n"})
    completer = await completer_for(engine)
    outcome = await completer.complete(snap(SOURCE), len(SOURCE), explicit=True)
    assert outcome.text == "a + b" and outcome.alternatives == []


async def test_automatic_requests_and_max_suggestions_1_get_one() -> None:
    engine = SeededEngine({None: " a + b\n", 1: " b + a\n", 2: " a - b\n"})
    completer = await completer_for(engine)
    auto = await completer.complete(snap(SOURCE), len(SOURCE))
    assert auto.text == "a + b" and auto.alternatives == [] and len(engine.requests) == 1
    one = await completer_for(engine, max_suggestions=1, cache=False)
    outcome = await one.complete(snap(SOURCE + " "), len(SOURCE) + 1, explicit=True)
    assert outcome.alternatives == [] and len(engine.requests) == 2


async def test_cancelling_the_request_cancels_its_alternatives() -> None:
    engine = SeededEngine({None: " a + b\n", 1: " b" + " + b" * 40 + "\n",
                           2: " a" + " - a" * 40 + "\n"}, step_s=0.02)
    completer = await completer_for(engine)
    task = asyncio.ensure_future(completer.complete(snap(SOURCE), len(SOURCE), explicit=True))
    await engine.three_started.wait()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert engine.aborted >= 2  # both alternatives aborted, not left running


async def test_typing_through_follows_the_suggestion_the_user_took() -> None:
    engine = SeededEngine({None: " a + b\n", 1: " a * b\n", 2: " a + b\n"})
    completer = await completer_for(engine)
    outcome = await completer.complete(snap(SOURCE), len(SOURCE), explicit=True)
    assert outcome.alternatives == ["a * b"]
    completer.prefer(URI, "a * b")  # didAccept of part of the second item
    typed = SOURCE + "a "
    rest = await completer.complete(snap(typed), len(typed))
    assert rest.source == "typed_through" and rest.text == "* b"


def _server(encoding: str = "utf-16") -> Any:
    preferred: list[tuple[str, str]] = []
    return SimpleNamespace(
        encoding=encoding, telemetry=Telemetry(), hub=SettingsHub(Settings(prefetch=False)),
        acceptance=Tracker(OutcomeStore(max_rows=0)),  # records nothing here
        completer=SimpleNamespace(prefer=lambda uri, text: preferred.append((uri, text))),
        preferred=preferred)


def test_did_accept_counts_partial_and_whole_accepts() -> None:
    ls = _server()
    at = {"uri": URI, "position": {"line": 1, "character": 11}}
    feedback.did_accept(ls, {**at, "text": "total(values)\n", "acceptedChars": 5})
    feedback.did_accept(ls, {**at, "text": "(values)\n", "acceptedChars": 9})  # all of it
    feedback.did_accept(ls, {**at, "text": "a + b"})  # no acceptedChars: the whole text
    counters = ls.telemetry.counters
    assert counters["partial_accepts"] == 1 and counters["accepted"] == 2
    assert counters["accepted_chars"] == 5 + 9 + 5
    assert ls.preferred == [(URI, "total(values)\n")]


def test_accepted_chars_are_counted_in_the_position_encoding() -> None:
    text = "naïve = '😀' + x"
    for encoding, units, chars in (("utf-16", 11, 10), ("utf-8", 14, 10), ("utf-16", 10, 9)):
        ls = _server(encoding)
        feedback.did_accept(ls, {"uri": URI, "position": {"line": 0, "character": 0},
                                 "text": text, "acceptedChars": units})
        assert ls.telemetry.counters["accepted_chars"] == chars, encoding
    ls = _server()
    feedback.accept_command(ls, [{"uri": URI, "position": {"line": 0, "character": 0},
                                  "text": "abc", "acceptedChars": 2}])
    assert ls.telemetry.counters["partial_accepts"] == 1


async def test_an_alternative_still_running_long_after_the_first_is_left_out(
    monkeypatch: Any,
) -> None:
    """The user waits for the first suggestion, not for the slowest sample: past the wait
    (ALTERNATIVES_WAIT_FACTOR times as long as the first took, at least
    ALTERNATIVES_MIN_WAIT_S) a sample is aborted
    and the answer has the others."""
    from lsp_copilot.pipeline import alternatives

    monkeypatch.setattr(alternatives, "ALTERNATIVES_MIN_WAIT_S", 0.2)
    slow = " a" + "".join(f" - a{i}" for i in range(300)) + "\n"  # no loop: it runs on
    engine = SeededEngine({None: " a + b\n", 1: " b + a\n", 2: slow})
    completer = await completer_for(engine)
    outcome = await completer.complete(snap(SOURCE), len(SOURCE), explicit=True)
    assert outcome.text == "a + b" and outcome.alternatives == ["b + a"]
    assert engine.aborted == 1  # the slow one, aborted before the answer went out


async def test_an_alternative_the_safety_check_would_cut_is_not_offered() -> None:
    """Alternatives pass the same safety check as the first suggestion (default: block)."""
    source = "import os\n\n\ndef run(cmd):\n    return "
    engine = SeededEngine({None: " cmd.strip()\n", 1: " os.system(cmd)\n", 2: " len(cmd)\n"})
    completer = await completer_for(engine)
    store = DocumentStore()
    store.open(URI, "python", 1, source)
    outcome = await completer.complete(store.snapshot(URI), len(source), explicit=True)
    assert outcome.text == "cmd.strip()" and outcome.alternatives == ["len(cmd)"]


async def test_a_spare_branch_stands_in_for_one_that_gives_nothing_new() -> None:
    """SPARE_BRANCHES: one more than the alternatives wanted is continued; the first
    usable ones by rank are offered."""
    assert SPARE_BRANCHES >= 1
    engine = SeededEngine({None: " a + b\n", 1: " a + b\n", 2: " b + a\n", 3: " a - b\n"})
    completer = await completer_for(engine)
    outcome = await completer.complete(snap(SOURCE), len(SOURCE), explicit=True)
    assert outcome.text == "a + b" and outcome.alternatives == ["b + a", "a - b"]


async def test_items_keep_rank_order_when_a_likelier_one_finishes_last() -> None:
    """The same prompt gives the same items, whichever the engine finishes first."""
    engine = SeededEngine({None: " a + b\n", 1: " sum([a, b], start=0) + 0 * a\n",
                           2: " a - b\n", 3: " a * b\n"})
    completer = await completer_for(engine)
    outcome = await completer.complete(snap(SOURCE), len(SOURCE), explicit=True)
    assert outcome.alternatives == ["sum([a, b], start=0) + 0 * a", "a - b"]


async def test_the_answer_does_not_wait_for_a_spare_once_the_likeliest_are_there() -> None:
    engine = SeededEngine({None: " a + b\n", 1: " b + a\n", 2: " a - b\n",
                           3: " a" + " * b" * 100 + "\n"})
    completer = await completer_for(engine)
    outcome = await completer.complete(snap(SOURCE), len(SOURCE), explicit=True)
    assert outcome.alternatives == ["b + a", "a - b"]
    assert engine.aborted == 1  # the spare (2 s to its end): cut, not waited for


async def test_an_alternative_whole_as_it_stands_leads_a_header_alone() -> None:
    """The first answer is only the header the user is typing (accepting it leaves the
    block open); an alternative that completes the line whole is offered first."""
    source = "class Disk:\n    def area(self"
    engine = SeededEngine({None: ", r):\n", 1: ", r): return 3.14 * r * r\n"})
    completer = await completer_for(engine)
    outcome = await completer.complete(snap(source), len(source), explicit=True)
    assert outcome.text == ", r): return 3.14 * r * r" and outcome.alternatives == [", r):"]
    # At a typing pause the header alone is still the one answer.
    typing = await completer_for(SeededEngine({None: ", r):\n"}))
    assert (await typing.complete(snap(source), len(source))).text == ", r):"


def test_branches_that_complete_a_header_come_first_where_only_one_fits() -> None:
    positions = [
        (_choice(1, " x", -0.1), _choice(2, " y", -1.0)),
        (_choice(3, ")", -0.1), _choice(4, " >", -0.5)),
        (_choice(5, " return", -0.1), _choice(6, " {", -3.0)),
    ]
    request = EngineRequest(request_id="r", prompt="p", max_tokens=8)
    assert [b.text for b in branches(positions, request, 2)] == [" x >", " y"]
    header = [b.text for b in branches(positions, request, 2,
                                       header=lambda t: t.endswith("{"))]
    assert header == [" x) {", " x >"]


async def test_where_a_body_waits_the_alternatives_look_for_its_header() -> None:
    """The model writes a statement where the body below needs a header (dropped); the
    listing covers the line, and the branch that ends the header is offered."""
    source = "def f(x):\n    if\n        return 1\n    return 2\n"
    offset = source.index("if") + 2
    engine = BranchingEngine({"": " x: return 0\n", " x >": " 0: return 0\n",
                              " x <": " 0: return 0\n", " y": " = 1\n", " z": " = 2\n",
                              " x:\n": "\n"}, (
        (_choice(1, " x", -0.1), _choice(2, " y", -1.0), _choice(3, " z", -1.1)),
        (_choice(4, ":", -0.1), _choice(5, " >", -0.5), _choice(6, " <", -0.6)),
        (_choice(7, " return", -0.1), _choice(8, "\n", -3.0))))
    completer = await completer_for(engine)
    outcome = await completer.complete(snap(source), offset, explicit=True)
    assert outcome.text.strip() == "x:"
    listing = next(r for r in engine.requests if r.token_choices)
    assert listing.max_tokens == min(HEADER_DEPTH, engine.requests[0].max_tokens)


async def test_when_nothing_is_usable_a_second_round_of_branches_runs() -> None:
    """The first answer and the first round's branches are all fragments: the next
    likeliest departures are continued, and one of them is the answer."""
    engine = BranchingEngine({"": " max(a,\n", " b": " * (a,\n", " min": "(a,\n",
                              " max(b": ", \n", " a": " + b\n", " abs": "(a,\n",
                              " max(a": ",\n"}, (
        (_choice(1, " max", -0.1), _choice(2, " b", -1.0), _choice(3, " min", -1.1),
         _choice(4, " a", -2.0), _choice(5, " abs", -2.5)),
        (_choice(6, "(a", -0.1), _choice(7, "(b", -0.5))))
    completer = await completer_for(engine)
    outcome = await completer.complete(snap(SOURCE), len(SOURCE), explicit=True)
    assert outcome.text == "a + b"
    heads = [r.prompt[len(engine.requests[0].prompt):] for r in engine.requests[2:]]
    assert len(heads) == 2 + SPARE_BRANCHES + SECOND_ROUND - 1  # (one branch too few)
    assert sorted(heads[:3]) == [" b", " max(b", " min"] and sorted(heads[3:]) == [" a", " abs"]


def test_the_lead_goes_first_unless_the_first_answer_begins_with_it() -> None:
    lead = Branch((7,), " (", 0.0)
    found = [Branch((1,), " try", -1.4), Branch((7,), " (", -6.3), Branch((2,), " await", -2.1)]
    assert [b.text for b in led_by(lead, " try {", found)] == [" (", " try", " await"]
    assert led_by(lead, " (x) {", found) == found  # the model went that way itself
    assert led_by(None, " try {", found) == found


async def test_an_explicit_request_continues_the_required_token_first(tmp_path: Path) -> None:
    """The model writes the condition without its `(` and lists no `(` among its
    runners-up: the branch that begins with the `(` the grammar requires is continued,
    and it is the answer."""
    source = "function f(v: number): number {\n  if \n    return 1;\n  }\n  return 0;\n}\n"
    offset = source.index("if ") + len("if ")
    engine = BranchingEngine({"": " v > 0) {\n", " (": "v > 0) {\n", " return": " 1;\n",
                              " v <": " 0) {\n"}, (
        (_choice(1, " v", -0.1), _choice(2, " return", -1.0)),
        (_choice(3, " >", -0.1), _choice(4, " <", -1.5))))
    engine.encoder = PromptEncoder.for_model(str(smollm2_like_folder(tmp_path)))
    completer = await completer_for(engine)
    store = DocumentStore()
    store.open(URI, "typescript", 1, source)
    outcome = await completer.complete(store.snapshot(URI), offset, explicit=True)
    assert outcome.text == "(v > 0) {"
    heads = [r.prompt[len(engine.requests[0].prompt):] for r in engine.requests[2:]]
    assert heads[0] == " ("  # before the model's own departures
    assert engine.requests[2].prompt_token_ids[-len(engine.encoder.text_ids(" (")):] == \
        engine.encoder.text_ids(" (")
