"""`lspCopilot/stats`: every counter a user might ask about."""

from __future__ import annotations

from typing import Any

from lsp_copilot.server.state import CopilotServer


def stats(ls: CopilotServer, params: Any) -> dict[str, Any]:
    return ls.stats()
