"""Models lsp-copilot can prepare by name: presets pinned to PyPI wheels."""
