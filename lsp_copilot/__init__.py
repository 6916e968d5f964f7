"""lsp-copilot: Copilot-style completions from a model you run yourself."""

__version__ = "0.1.0"
