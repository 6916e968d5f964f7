#!/usr/bin/env python3
"""Regenerate docs/configuration.md from the server's own settings (lsp_copilot/config.py)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lsp_copilot.config_doc import DOC_PATH, configuration_markdown  # noqa: E402

if __name__ == "__main__":
    target = ROOT / DOC_PATH
    target.write_text(configuration_markdown(), encoding="utf-8")
    print(f"wrote {target}")
