"""Through the real protocol (stdio) and the real engine (vLLM on this machine's device,
SmolLM2-135M)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from lsp_copilot.engine.defaults import CODE_MODEL_TYPES
from lsp_copilot.engine.device import cpu_class, cpu_flags
from tests.support.lsp import (
    ON_CUDA,
    edit_doc,
    engine_core_pids,
    engines_frozen,
    expected_device,
    fixture_uri,
    inline,
    open_doc,
    parses_with,
    send_raw,
    settled,
    stats,
    wait_stat,
)

pytestmark = pytest.mark.engine

PY_SOURCE = '''import os


def read_lines(path):
    """Return the lines of the file at path."""
    with open(path) as handle:
        return handle.read().splitlines()


def count_words(text):
    words = text.split()
'''


async def test_capabilities_and_engine_info(engine_client: LanguageClient) -> None:
    caps = engine_client.init_result.capabilities  # type: ignore[attr-defined]
    assert caps.inline_completion_provider is not None
    assert caps.completion_provider is not None
    sync = caps.text_document_sync
    assert sync.change == types.TextDocumentSyncKind.Incremental
    assert caps.position_encoding == "utf-16"  # VS Code offers only UTF-16
    s = await stats(engine_client)
    engine = s["engine"]
    assert engine["backend"] == "vllm"
    assert engine["device"] == expected_device()
    assert engine["prefix_caching"] is True
    assert engine["speculative"] == "ngram"
    # Loading was reported as work-done progress that began and ended.
    kinds = [
        getattr(v, "kind", None)
        for reports in engine_client.progress_reports.values()
        for v in reports
    ]
    assert "begin" in kinds and "end" in kinds


async def test_engine_processes_run_at_a_lower_cpu_priority(
    engine_client: LanguageClient,
) -> None:
    """engineNiceness (5): every thread of the EngineCore and its workers (of the shared
    engine's host, when it runs its EngineCore itself) gives way to the server's event
    loop, which stays at the editor's priority."""
    import os

    import psutil

    server = psutil.Process(engine_client._server.pid)  # type: ignore[union-attr]
    cores = [psutil.Process(pid) for pid in engine_core_pids(server.pid)]
    workers = [c for p in cores for c in p.children(recursive=True)
               if c.cmdline()[:1] == ["VLLM::Worker"]]
    engine = [*cores, *workers]
    assert len(engine) >= 1
    for proc in engine:
        for thread in proc.threads():
            assert os.getpriority(os.PRIO_PROCESS, thread.id) >= 5, (proc.cmdline(), thread)
    assert os.getpriority(os.PRIO_PROCESS, server.pid) == os.getpriority(os.PRIO_PROCESS, 0)


async def test_incremental_edits_then_inline_and_item(engine_client: LanguageClient) -> None:
    uri = fixture_uri("e2e_words.py")
    open_doc(engine_client, uri, PY_SOURCE)
    # Type "    return len(" after `words = text.split()` (line 10), keystroke by keystroke.
    edit_doc(engine_client, uri, 2, 10, len("    words = text.split()"), "\n")
    typed = "    return len("
    for i, ch in enumerate(typed):
        edit_doc(engine_client, uri, 3 + i, 11, i, ch)
    before = await stats(engine_client)
    result = await inline(engine_client, uri, 11, len(typed))
    assert result is not None and result.items, "expected a suggestion"
    text = result.items[0].insert_text
    assert isinstance(text, str) and text.strip(), text
    assert "\n" not in text  # single-line mode: the rest of the line only
    after = await settled(engine_client)
    assert after["requests"] == before["requests"] + 1
    assert after["engine_requests"] == before["engine_requests"] + 1
    assert after["prompt_tokens"] > before["prompt_tokens"]
    assert after["generated_tokens"] > before["generated_tokens"]
    assert after["latency_ms"]["p50"] > 0

    items = await engine_client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(11, len(typed)),
        )
    )
    assert items is not None
    entries = items.items if isinstance(items, types.CompletionList) else items
    assert len(entries) == 1
    edit = entries[0].text_edit
    assert isinstance(edit, types.TextEdit) and edit.new_text.strip()
    # The item's edit starts at the word before the cursor ("len" has "(" after it: none).
    assert edit.range.end == types.Position(11, len(typed))


async def test_shared_prefix_hits_prefix_cache(engine_client: LanguageClient) -> None:
    body = "".join(f"def handler_{i}(event):\n    return event.get('{i}')\n\n" for i in range(20))
    line = body.count("\n")
    before = await stats(engine_client)
    # One document, as when the user goes on typing: another file's prompt has its own
    # context layers (its path, its snippets) before the window.
    for name, tail in (("e2e_cache.py", "def handler_20(event):\n    return "),
                       ("e2e_cache.py", "def handler_21(event):\n    return ")):
        open_doc(engine_client, fixture_uri(name), body + tail)
        await inline(engine_client, fixture_uri(name), line + 1, len("    return "))
    after = await settled(engine_client)
    assert after["engine_requests"] == before["engine_requests"] + 2
    # The second prompt shares ~all but its last line with the first: vLLM reuses it.
    assert after["cached_prompt_tokens"] - before["cached_prompt_tokens"] >= 100
    # n-gram speculation has proposed drafts by now (the prompts repeat themselves).
    assert after["spec_draft_tokens"] > 0
    assert 0 <= after["spec_accepted_tokens"] <= after["spec_draft_tokens"]


async def test_cancel_request_aborts_engine(engine_client: LanguageClient) -> None:
    uri = fixture_uri("e2e_cancel.py")
    open_doc(engine_client, uri, "class Inventory:\n    def __init__(self):\n")
    before = await stats(engine_client)
    msg_id = "cancel-me-1"
    params = types.InlineCompletionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(2, 0),
        context=types.InlineCompletionContext(
            trigger_kind=types.InlineCompletionTriggerKind.Invoked
        ),
    )
    # The engine generates nothing until the cancel is answered: it comes mid-generation
    # however fast the engine is.
    with engines_frozen(engine_client):
        fut = asyncio.ensure_future(  # pytest-lsp's send_request_async is a coroutine
            engine_client.protocol.send_request_async(
                types.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id=msg_id
            )
        )
        await wait_stat(engine_client, "engine_requests", before["engine_requests"] + 1)
        engine_client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        with pytest.raises(JsonRpcException) as err:
            await fut
    assert err.value.code == types.LSPErrorCodes.RequestCancelled
    # Aborted once the merge window passes with no request reusing the generation.
    after = await wait_stat(engine_client, "engine_aborted", before["engine_aborted"] + 1)
    assert after["cancelled"] == before["cancelled"] + 1


async def test_newer_request_aborts_a_generation_it_cannot_use(
    engine_client: LanguageClient,
) -> None:
    uri = fixture_uri("e2e_supersede.py")
    open_doc(engine_client, uri, "class Queue:\n    def __init__(self):\n")
    before = await stats(engine_client)
    # The engine generates nothing until the newer request has gone to it: the first
    # generation is still running when it comes, however fast the engine is.
    with engines_frozen(engine_client):
        first = asyncio.ensure_future(inline(engine_client, uri, 2, 0))
        await wait_stat(engine_client, "engine_requests", before["engine_requests"] + 1)
        # An edit above the cursor: the old prompt is useless now.
        edit_doc(engine_client, uri, 2, 0, 0, "import collections\n")
        pending = asyncio.ensure_future(inline(engine_client, uri, 3, 0))
        await wait_stat(engine_client, "engine_requests", before["engine_requests"] + 2)
    second = await pending
    first_result = await first
    assert first_result is not None and not first_result.items
    assert second is not None
    after = await stats(engine_client)
    assert after["engine_aborted"] == before["engine_aborted"] + 1
    assert after["superseded"] == before["superseded"] + 1


async def test_same_position_request_merges_into_the_generation(
    engine_client: LanguageClient,
) -> None:
    uri = fixture_uri("e2e_merge.py")
    open_doc(engine_client, uri, "class Stack:\n    def __init__(self):\n")
    before = await stats(engine_client)
    # The engine generates nothing until the second request has joined the first one's
    # generation: it is still running when the second comes, however fast the engine is.
    with engines_frozen(engine_client):
        first = asyncio.ensure_future(inline(engine_client, uri, 2, 0))
        await wait_stat(engine_client, "engine_requests", before["engine_requests"] + 1)
        pending = asyncio.ensure_future(inline(engine_client, uri, 2, 0))
        await wait_stat(engine_client, "flights_joined", before["flights_joined"] + 1)
    second = await pending
    await first
    after = await stats(engine_client)
    assert after["merged"] == before["merged"] + 1
    assert after["engine_requests"] == before["engine_requests"] + 1  # one call for both
    assert second is not None


async def test_an_answer_at_the_line_end_writes_the_next_line_for_enter(
    engine_client: LanguageClient,
) -> None:
    """The answer comes when its line is whole and the generation goes on with the next
    line: the pause at the end of the typed line and the request after Enter (with the
    editor's indentation) are answered from it, with no engine call of their own."""
    uri = fixture_uri("e2e_next_line.py")
    typed = "    total = a +"
    open_doc(engine_client, uri, "def add(a, b):\n" + typed)
    before = await stats(engine_client)
    shown = await inline(engine_client, uri, 1, len(typed))
    assert shown is not None and shown.items
    answer = shown.items[0].insert_text
    assert isinstance(answer, str) and answer.strip() and "\n" not in answer
    # Its counts come when the generation has written the next line too.
    await wait_stat(engine_client, "generated_tokens", before["generated_tokens"] + 1)
    edit_doc(engine_client, uri, 2, 1, len(typed), answer)  # the user types it
    typed += answer
    pause = await inline(engine_client, uri, 1, len(typed))
    assert pause is not None and pause.items
    following = pause.items[0].insert_text
    assert isinstance(following, str) and following.startswith("\n    ") and following.strip()
    assert parses_with("def add(a, b):\n" + typed + "\n", 1, len(typed), following)
    edit_doc(engine_client, uri, 3, 1, len(typed), "\n    ")  # Enter: the editor indents
    enter = await inline(engine_client, uri, 2, 4)
    assert enter is not None and enter.items
    assert enter.items[0].insert_text == following[len("\n    "):]
    after = await stats(engine_client)
    assert after["engine_requests"] == before["engine_requests"] + 1


async def test_typing_through_needs_no_engine_call(engine_client: LanguageClient) -> None:
    uri = fixture_uri("e2e_typing.py")
    open_doc(engine_client, uri, "def add(a, b):\n    return ")
    col = len("    return ")
    shown = await inline(engine_client, uri, 1, col)
    assert shown is not None and shown.items
    text = shown.items[0].insert_text
    assert isinstance(text, str) and len(text) >= 2
    before = await stats(engine_client)
    edit_doc(engine_client, uri, 2, 1, col, text[0])  # the user types the suggestion's start
    result = await inline(engine_client, uri, 1, col + 1)
    assert result is not None and result.items and result.items[0].insert_text == text[1:]
    after = await stats(engine_client)
    assert after["typed_through"] == before["typed_through"] + 1
    assert after["engine_requests"] == before["engine_requests"]


async def test_secret_files_never_reach_the_engine(engine_client: LanguageClient) -> None:
    before = await stats(engine_client)
    open_doc(engine_client, fixture_uri(".env"), "API_TOKEN=", language="dotenv")
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow==\n-----END RSA PRIVATE KEY-----\n"
    open_doc(engine_client, fixture_uri("e2e_keys.py"),
             f'PEM = """{key}"""\ndef load():\n    return ')
    for name, line, col in ((".env", 0, 10), ("e2e_keys.py", 5, 11)):
        result = await inline(engine_client, fixture_uri(name), line, col)
        assert result is not None and not result.items
    after = await stats(engine_client)
    assert after["secret_skipped"] == before["secret_skipped"] + 2
    assert after["engine_requests"] == before["engine_requests"]


async def test_user_secret_patterns_keep_files_private(engine_client: LanguageClient) -> None:
    uri = fixture_uri("e2e_vault/settings_prod.py")
    open_doc(engine_client, uri, "def connect():\n    return ")
    engine_client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"lspCopilot": {"excludedFolders": ["e2e_vault"]}}))
    before = await stats(engine_client)
    result = await inline(engine_client, uri, 1, 11)
    after = await stats(engine_client)
    assert result is not None and not result.items
    assert after["secret_skipped"] == before["secret_skipped"] + 1
    assert after["engine_requests"] == before["engine_requests"]
    engine_client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"lspCopilot": {"excludedFolders": []}}))
    await inline(engine_client, uri, 1, 11)  # the rule is gone: the engine is asked again
    assert (await stats(engine_client))["secret_skipped"] == after["secret_skipped"]


async def test_out_of_sync_document_waits_for_full_text(engine_client: LanguageClient) -> None:
    uri = fixture_uri("e2e_sync.py")
    open_doc(engine_client, uri, "def add(a, b):\n    return ")
    edit_doc(engine_client, uri, 5, 1, 11, "a")
    edit_doc(engine_client, uri, 3, 1, 12, " +")  # the version goes backwards: not applied
    before = await stats(engine_client)
    result = await inline(engine_client, uri, 1, 12)
    after = await stats(engine_client)
    assert result is not None and not result.items
    assert after["out_of_sync"] == before["out_of_sync"] + 1
    assert any("out of sync" in m.message for m in engine_client.messages)
    engine_client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=6),
        content_changes=[types.TextDocumentContentChangeWholeDocument(
            text="def add(a, b):\n    return a +")]))
    await inline(engine_client, uri, 1, 14)  # resynchronized: answered normally again
    assert (await stats(engine_client))["out_of_sync"] == after["out_of_sync"]
    # A completion past the end of our (resynced) text is a clear error, not silence.
    with pytest.raises(JsonRpcException, match="past the end"):
        await inline(engine_client, uri, 5, 0)


async def test_overload_answers_empty_and_recovers(engine_client: LanguageClient) -> None:
    engine_client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspCopilot": {"maxQueue": 1}})
    )
    before = await stats(engine_client)
    uris = [fixture_uri(f"e2e_load_{i}.py") for i in range(4)]
    for i, uri in enumerate(uris):
        open_doc(engine_client, uri, f"class Model{i}:\n    def __init__(self):\n")
    results = await asyncio.gather(*(inline(engine_client, u, 2, 0) for u in uris))
    after = await stats(engine_client)
    assert after["overloaded"] >= before["overloaded"] + 1
    assert all(r is not None for r in results)  # every request was answered
    engine_client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspCopilot": {"maxQueue": 8}})
    )
    open_doc(engine_client, fixture_uri("e2e_after_load.py"), "def mul(a, b):\n    return ")
    result = await inline(engine_client, fixture_uri("e2e_after_load.py"), 1, len("    return "))
    assert result is not None and result.items


async def test_bad_input_keeps_server_answering(engine_client: LanguageClient) -> None:
    uri = fixture_uri("e2e_bad.py")
    open_doc(engine_client, uri, "def add(a, b):\n    return ")
    # A position past the end: a clear InvalidParams error naming the position.
    with pytest.raises(JsonRpcException) as err:
        await inline(engine_client, uri, 50, 0)
    assert err.value.code == types.ErrorCodes.InvalidParams
    assert "50" in str(err.value)
    # An unknown document.
    with pytest.raises(JsonRpcException) as err:
        await inline(engine_client, fixture_uri("never_opened.py"), 0, 0)
    assert "never_opened" in str(err.value)
    # Params that do not deserialize: pygls alone would never answer this one.
    with pytest.raises(JsonRpcException) as err:
        await send_raw(
            engine_client, "bad-params-1", types.TEXT_DOCUMENT_INLINE_COMPLETION,
            {"textDocument": {"uri": uri}, "position": {"line": "zero", "character": 0},
             "context": {"triggerKind": 1}},
        )
    assert err.value.code == types.ErrorCodes.InvalidParams
    assert "line" in str(err.value)
    # A 10 MB document is tracked but never sent to the model: an empty answer.
    big = fixture_uri("e2e_big.py")
    open_doc(engine_client, big, "x = 1\n" * (10_000_000 // 6))
    result = await inline(engine_client, big, 5, 0)
    assert result is not None and not result.items
    # Binary content: empty answer too.
    binary = fixture_uri("e2e_binary.bin")
    open_doc(engine_client, binary, "\x00\x01\x02ELF\x00" * 100, language="plaintext")
    result = await inline(engine_client, binary, 0, 3)
    assert result is not None and not result.items
    # A malformed setting is reported and replaced by its default; nothing breaks.
    engine_client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspCopilot": {"maxPromptTokens": "lots"}})
    )
    # And after all that, a real completion still comes back.
    result = await inline(engine_client, uri, 1, len("    return "))
    assert result is not None and result.items and result.items[0].insert_text.strip()
    warnings = [m.message for m in engine_client.messages]
    assert any("maxPromptTokens" in m for m in warnings), warnings
    assert any("e2e_big.py" in m for m in warnings), warnings


async def test_accept_prefetches_the_next_suggestion(engine_client: LanguageClient) -> None:
    uri = fixture_uri("e2e_prefetch.py")
    open_doc(engine_client, uri, "def scale(values, factor):\n    result = ")
    col = len("    result = ")
    shown = await inline(engine_client, uri, 1, col)
    assert shown is not None and shown.items
    text = shown.items[0].insert_text
    assert isinstance(text, str) and text and "\n" not in text
    before = await stats(engine_client)
    # The user accepts: the editor inserts the text and the client reports it.
    edit_doc(engine_client, uri, 2, 1, col, text + "\n    ")
    engine_client.protocol.notify("lspCopilot/didAccept", {
        "uri": uri, "position": {"line": 1, "character": col}, "text": text + "\n    "})
    after = await wait_stat(engine_client, "prefetched", before["prefetched"] + 1)
    assert after["accepted"] == before["accepted"] + 1
    # The prefetch makes a call, or joins the generation that wrote the accepted text and
    # went on with the next line.
    prefetched = await settled(engine_client)
    calls = prefetched["engine_requests"] - before["engine_requests"]
    joined = prefetched["flights_joined"] - before["flights_joined"]
    assert calls + joined >= 1 and calls <= 1
    # The next request at the end of the accepted text is served by that prefetch.
    await inline(engine_client, uri, 2, 4)
    final = await stats(engine_client)
    assert final["engine_requests"] == prefetched["engine_requests"]
    assert final["cache_hits"] + final["merged"] + final["typed_through"] > (
        before["cache_hits"] + before["merged"] + before["typed_through"])


async def test_explicit_request_answers_whole_and_uncut(engine_client: LanguageClient) -> None:
    """triggerKind Invoked through the real engine: counted, never debounced or cut by the
    deadline (a 1 ms deadline here), and the answer leaves the file parsing."""
    uri = fixture_uri("explicit_whole.py")
    text = ("import math\n\n\ndef circle_area(radius):\n"
            '    """Area of a circle of the given radius."""\n    return \n')
    open_doc(engine_client, uri, text)
    engine_client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspCopilot": {"deadlineMs": 1}}))
    before = await stats(engine_client)
    result = await inline(engine_client, uri, 5, 11, types.InlineCompletionTriggerKind.Invoked)
    after = await stats(engine_client)
    assert after["explicit_requests"] == before.get("explicit_requests", 0) + 1
    assert result.items, "an explicit request at `return ` gets an answer"
    answer = result.items[0].insert_text
    assert answer.strip() and parses_with(text, 5, 11, answer), answer
    assert after.get("deadline_answers", 0) == before.get("deadline_answers", 0)
    engine_client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"lspCopilot": {"deadlineMs": 300}}))


async def test_automatic_answers_are_never_fragments(engine_client: LanguageClient) -> None:
    """Automatic requests at positions where a fragment is the easy answer: whatever comes
    back, inserted, leaves the file parsing (or nothing comes)."""
    uri = fixture_uri("whole_auto.py")
    text = ("class Store:\n    def __init__(self):\n        self.items = {}\n\n"
            "    def put(self, key, value):\n        self.\n")
    open_doc(engine_client, uri, text)
    result = await inline(engine_client, uri, 5, 13)
    for item in result.items:
        assert parses_with(text, 5, 13, item.insert_text), item.insert_text


async def test_typing_and_explicit_requests_take_their_routes(
    engine_client: LanguageClient,
) -> None:
    """The default on a CPU, by its class: where the CPU carries it (AVX-512 with VNNI, or
    AMX) the code model answers typing too, else typing goes to the small model's engine;
    a request the user asks for goes to the code model (the main engine). Stats say the
    CPU's class, the choice, and which route answered."""
    s = await stats(engine_client)
    routes = s["routes"]
    if ON_CUDA:  # one code model answers everything
        assert {r["route"] for r in routes.values()} == {"main"}
        return
    flags = cpu_flags()
    assert s["cpu"]["cpu_class"] == cpu_class(flags), s["cpu"]
    typing = "main" if cpu_class(flags) in CODE_MODEL_TYPES else "smollm2-135m"
    assert s["cpu"]["typing"] == typing, s["cpu"]
    assert routes["singleLine"]["route"] == routes["multiLine"]["route"] == typing
    assert routes["singleLine"]["state"] == "ready" and routes["explicit"]["route"] == "main"
    assert routes["explicit"]["model"] == "qwen2.5-coder-0.5b"
    if typing == "main":  # the code model in int8, as the default weights say there
        assert s["engine"]["quantization"] is not None, s["engine"]
    uri = fixture_uri("routes.py")
    text = "def double(x):\n    return \n"
    open_doc(engine_client, uri, text)
    await inline(engine_client, uri, 1, 11)
    await inline(engine_client, uri, 1, 11, types.InlineCompletionTriggerKind.Invoked)
    after = (await stats(engine_client))["routes"]

    def grew(kind: str, route: str) -> int:
        def count(stats: dict[str, Any]) -> int:
            return sum(a["requests"] for a in stats[kind]["answered"] if a["route"] == route)
        return count(after) - count(routes)

    assert grew("singleLine", typing) == 1, (routes, after)
    if typing != "main":
        assert grew("singleLine", "main") == 0, (routes, after)
    assert grew("explicit", "main") == 1, (routes, after)
