#!/usr/bin/env python3
"""Regenerate docs/configuration.md and the VS Code extension's settings
(editors/vscode/package.json) from the server's own settings (lsp_copilot/settings/)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lsp_copilot.settings.docgen import (  # noqa: E402
    DOC_PATH,
    PACKAGE_PATH,
    configuration_markdown,
    package_json,
)

if __name__ == "__main__":
    target = ROOT / DOC_PATH
    target.write_text(configuration_markdown(), encoding="utf-8")
    print(f"wrote {target}")
    package = ROOT / PACKAGE_PATH
    package.write_text(package_json(package.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {package}")
