"""Privacy and safety settings: what never leaves the machine or reaches the logs, and
what a suggestion may not add."""

from __future__ import annotations

from dataclasses import dataclass

from lsp_copilot.settings.checks import IS_BOOL, REGEX_LIST, STR_LIST, one_of, setting


@dataclass(frozen=True)
class PrivacySettings:
    """Privacy and safety: private files, log contents and the safety scan."""

    safety: str = setting(
        "block", "Scan suggestions for dangerous calls and secrets they would add "
        "(grammars/<language>/safety.scm): off; warn (shown, with a warning); block (cut "
        "before the finding or dropped, for the clear cases; the rest warned about).",
        one_of("off", "warn", "block"),
    )
    secret_file_patterns: tuple[str, ...] = setting(
        (), "Extra file-name globs of private files (never sent, cached or indexed); a glob "
        "with a / matches the whole path.", STR_LIST
    )
    secret_content_patterns: tuple[str, ...] = setting(
        (), "Extra regular expressions of secrets: text that matches one is redacted from "
        "prompts (replaced by <redacted:custom>).",
        REGEX_LIST
    )
    excluded_folders: tuple[str, ...] = setting(
        (), "Folders whose files stay private: a name matches anywhere in the path, a path "
        "matches that folder (a repository's .lspcopilotignore adds its own).", STR_LIST
    )
    log_source_text: bool = setting(
        False, "Let debug logs include message bodies and the answers no check let through "
        "(source text); off, logs never contain your code.", IS_BOOL
    )
