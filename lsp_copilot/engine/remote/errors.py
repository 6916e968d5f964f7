"""What can go wrong with a remote deployment, in words a user can act on (never the key).

Kept apart from the HTTP code so that the engine manager can tell these failures apart
without loading httpx.
"""

from __future__ import annotations


class RemoteError(RuntimeError):
    """What went wrong with the deployment, in words a user can act on (never the key)."""


class PriorityRejected(RemoteError):
    """An older vLLM without priority scheduling refuses ``priority``: resend without."""


class RemoteRetryable(RemoteError):
    """A failure before any token arrived that another attempt may not have."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
