"""Logging policy: logs go to stderr and never contain the user's code unless asked for."""

from __future__ import annotations

import logging
import os

SOURCE_TEXT_LOGGERS = ("pygls", "pygls.protocol", "pygls.feature_manager", "pygls.server")
"""pygls logs every message body (didOpen text, completions) at DEBUG and INFO."""


def source_text_logging(enabled: bool) -> None:
    """Let pygls log message bodies only when the user asks (``logSourceText`` or
    LSP_COPILOT_LOG_SOURCE_TEXT=1); they then follow ``--log-level``."""
    enabled = enabled or os.environ.get("LSP_COPILOT_LOG_SOURCE_TEXT") == "1"
    for name in SOURCE_TEXT_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if enabled else logging.WARNING)
