"""Secrets through the real protocol and the real engine: a file that holds secrets still
gets a completion, its prompt had them replaced by placeholders, and none of them is in
the suggestion or in the completion cache on disk."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.support.lsp import fixture_uri, inline, open_doc, stats

pytestmark = pytest.mark.engine

SECRETS = ("Tr0ub4dor&3x", "correct-horse-battery-staple",
           "ghp_R8x2Lq9Zt4Vn7Bm3Kc6Yw1Pd5Hs0Jf2Ga8Ue")
SOURCE = ('import math\n\n'
          f'DATABASE_URL = "postgres://shop:{SECRETS[0]}@db.internal:5432/shop"\n'
          f'ADMIN_PASSWORD = "{SECRETS[1]}"\n'
          f'GITHUB_TOKEN = "{SECRETS[2]}"\n\n\n'
          'def circle_area(radius):\n'
          '    """The area of a circle of this radius."""\n'
          '    return ')


async def test_a_file_with_secrets_is_completed_from_a_redacted_prompt(
    engine_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory,
) -> None:
    uri = fixture_uri("e2e_secrets.py")
    open_doc(engine_client, uri, SOURCE)
    before = await stats(engine_client)
    result = await inline(engine_client, uri, 9, len("    return "),
                          types.InlineCompletionTriggerKind.Invoked)
    after = await stats(engine_client)
    assert result.items, "no completion in a file that holds secrets"
    assert "radius" in result.items[0].insert_text, result.items[0].insert_text
    # The three values were replaced in the prompt the engine got (the window holds them).
    assert after["secrets_redacted"] >= before["secrets_redacted"] + 3
    assert after["secret_skipped"] == before["secret_skipped"]  # completed, not withheld
    assert not any(s in item.insert_text for item in result.items for s in SECRETS)
    # The session's completion cache (the shared server's cacheDir) holds none of them.
    caches = list(Path(tmp_path_factory.getbasetemp()).glob("completion-cache*"))
    assert caches
    stored = b"".join(p.read_bytes() for c in caches for p in c.rglob("*") if p.is_file())
    assert not any(s.encode() in stored for s in SECRETS)
