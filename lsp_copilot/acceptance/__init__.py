"""Acceptance: what became of each suggestion shown, kept across restarts and compared.

``tracker`` links the editor's feedback (and the edits that follow: typing through, a
partial accept read from an insertion) to the suggestion it is about; ``store`` keeps one
row per outcome in SQLite (kinds and timings, never code); ``experiment`` splits lines
between two configurations; ``report`` turns the rows into rates with confidence intervals
for ``lsp-copilot stats`` and ``plot`` draws them over time.
"""
