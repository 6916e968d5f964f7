"""Every name lsp-copilot adds to LSP, in one place: editors, scripts and benchmarks rely on
them, so they never change (docs/protocol.md describes each)."""

from __future__ import annotations

STATS = "lspCopilot/stats"
"""Request: counters, timings, engine and routes (lspCopilot/stats)."""

DID_SHOW = "lspCopilot/didShow"
DID_ACCEPT = "lspCopilot/didAccept"
DID_REJECT = "lspCopilot/didReject"
"""Notifications: the client showed, accepted (possibly in part) or dismissed a suggestion."""

ACCEPTED_CHARS = "acceptedChars"
"""didAccept's param for a partial accept: how much of ``text`` was taken (absent: all)."""

ACCEPT_COMMAND = "lspCopilot.didAccept"
"""Command each inline item carries, run by clients when the user accepts it."""

RESTART_COMMAND = "lspCopilot.restartEngine"
"""Command: forget past engine failures and load the engine again."""
