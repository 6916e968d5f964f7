"""Engine settings from the editor, through the real protocol: a non-default vLLM
configuration loads and completes; a combination that cannot work is refused before
vLLM starts, with a message that names the setting."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_copilot.models.folders import default_model_dir
from tests.support.lsp import (
    fixture_uri,
    initialize,
    inline,
    open_doc,
    settled,
    stats,
    wait_for_engine,
)

SERVER = [sys.executable, "-m", "lsp_copilot", "serve"]

# The default model drafts for itself: the same vocabulary, the only second model here.
CUSTOM = {"speculativeMethod": "draft_model", "speculativeModel": str(default_model_dir()),
          "speculativeTokens": 3, "maxNumSeqs": 2, "enableChunkedPrefill": True,
          "routes": {}}  # one engine: these are the main engine's settings


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def custom_client(lsp_client: LanguageClient, tmp_path):  # type: ignore[no-untyped-def]
    await initialize(lsp_client, "neovim", {**CUSTOM, "cacheDir": str(tmp_path), "warmUp": False})
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def invalid_client(lsp_client: LanguageClient):  # type: ignore[no-untyped-def]
    await initialize(lsp_client, "neovim",
                     # 64: more GPUs (or NUMA nodes) than any test machine has
                     {"speculativeMethod": "eagle", "tensorParallelSize": 64})
    yield
    await lsp_client.shutdown_session()


@pytest.mark.engine
async def test_non_default_engine_settings_load_and_complete(
    custom_client: LanguageClient,
) -> None:
    s = await wait_for_engine(custom_client)
    assert s["engine_state"] == "ready", s["engine_error"]
    assert s["engine"]["speculative"] == "draft_model"
    uri = fixture_uri("e2e_custom_engine.py")
    source = "".join(f"def area_{i}(w, h):\n    return w * h * {i}\n\n\n" for i in range(8))
    open_doc(custom_client, uri, source + "def area_8(w, h):\n    return ")
    await inline(custom_client, uri, source.count("\n") + 1, len("    return "))
    after = await settled(custom_client)
    assert after["engine_requests"] == 1 and after["generated_tokens"] > 0, after
    # The draft model proposed tokens, and the target (the same weights) accepted some. An
    # answer the server cut short brings the engine's counters a moment after it.
    deadline = time.monotonic() + 30
    while after["spec_accepted_tokens"] == 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        after = await stats(custom_client)
    assert 0 < after["spec_accepted_tokens"] <= after["spec_draft_tokens"], after


async def test_invalid_combination_is_refused_before_the_engine_starts(
    invalid_client: LanguageClient,
) -> None:
    s = await wait_for_engine(invalid_client, timeout=120)
    assert s["engine_state"] == "failed"
    error = s["engine_error"]
    assert error.startswith("invalid engine settings") and "speculativeModel" in error
    assert "tensorParallelSize" in error and "Traceback" not in error
    texts = [m.message for m in invalid_client.messages]
    # Told twice: as a settings warning when they arrive, and why the engine did not start.
    assert any(m.type == types.MessageType.Warning and "speculativeModel" in m.message
               for m in invalid_client.messages), texts
    assert any("could not start" in t and "tensorParallelSize" in t for t in texts), texts
