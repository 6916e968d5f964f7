"""Acceptance: what became of each suggestion shown, kept across restarts and compared.

``tracker`` links the editor's feedback (and the typing that follows) to the suggestion it
is about; ``store`` keeps one row per outcome in SQLite (kinds and timings, never code);
``experiment`` splits suggestions between two configurations; ``report`` turns the rows
into rates with confidence intervals for ``lsp-copilot stats``.
"""
