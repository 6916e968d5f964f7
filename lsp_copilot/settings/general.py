"""General settings: whether, and for which documents, the server completes at all."""

from __future__ import annotations

from dataclasses import dataclass

from lsp_copilot.settings.checks import IS_BOOL, STR_LIST, int_range, setting


@dataclass(frozen=True)
class GeneralSettings:
    """General: on or off, per language and document size."""

    enable: bool = setting(
        True, "Answer completion requests at all (when false the engine is not loaded).",
        IS_BOOL
    )
    disabled_languages: tuple[str, ...] = setting(
        (), "Language ids (as the editor names them: markdown, plaintext, ...) that get no "
        "completions: answered empty at once, with no engine call.", STR_LIST
    )
    max_document_bytes: int = setting(
        2_000_000, "Larger documents are tracked but never parsed or sent to the model.",
        int_range(1_000, 1_000_000_000)
    )

    def language_enabled(self, language_id: str) -> bool:
        """Whether documents of this LSP language id get completions (case ignored)."""
        lowered = language_id.lower()
        return not any(lowered == off.lower() for off in self.disabled_languages)
