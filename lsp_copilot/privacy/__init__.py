"""Files that look like secrets are never sent to the model, cached, indexed or logged.

The default rules match names (``.env``, keys, credential files) and content (private-key
blocks, cloud keys, tokens); users add their own name patterns, content patterns and
folders through settings (``secretFilePatterns``, ``secretContentPatterns``,
``excludedFolders``), compiled once into a :class:`Privacy`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from urllib.parse import unquote, urlparse

SECRET_NAMES = (
    ".env", ".env.*", "*.env", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.ppk", ".netrc", "_netrc", ".pgpass",
    ".pypirc", ".npmrc", ".git-credentials", "credentials", "credentials.*",
    "*credentials*.json", "secrets.*", "*.secret", "*.secrets", ".htpasswd", "*.kdbx",
)

SECRET_CONTENT = re.compile(
    rb"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
    rb"|\bAKIA[0-9A-Z]{16}\b"  # AWS access key id
    rb"|\bgh[pousr]_[A-Za-z0-9]{36,}\b"  # GitHub tokens
    rb"|\bxox[baprs]-[A-Za-z0-9-]{10,}"  # Slack tokens
    rb"|\bsk-[A-Za-z0-9_-]{32,}"  # OpenAI-style API keys
    rb"|\bAIza[0-9A-Za-z_-]{35}\b"  # Google API keys
    rb"|\bglpat-[A-Za-z0-9_-]{20,}"  # GitLab tokens
)

# Literals every SECRET_CONTENT match contains: checking them first (memchr-fast) spares
# the regex scan, 20+ ms on a 170 KB file, on every keystroke of every clean file.
SECRET_MARKERS = (b"PRIVATE KEY", b"AKIA", b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_",
                  b"xox", b"sk-", b"AIza", b"glpat-")


def _path(uri: str) -> str:
    return unquote(urlparse(uri).path) if "://" in uri else uri


class Privacy:
    """The secret rules in force: the defaults plus the user's extra patterns."""

    def __init__(
        self,
        file_patterns: Iterable[str] = (),
        content_patterns: Iterable[str] = (),
        excluded_folders: Iterable[str] = (),
    ) -> None:
        self.file_patterns = SECRET_NAMES + tuple(file_patterns)
        extra = [p.encode() for p in content_patterns]
        self.extra_content = re.compile(b"|".join(extra)) if extra else None
        # Folder names ("secrets") match any path component; paths ("/srv/keys", "a/b")
        # match that folder and below.
        self.excluded_folders = tuple(f.rstrip("/") for f in excluded_folders if f.strip("/"))

    def reason(self, uri: str, data: bytes) -> str | None:
        """Why this document must stay private, or None."""
        path = _path(uri)
        posix = PurePosixPath(path)
        name = posix.name.lower()
        for pattern in self.file_patterns:
            if "/" not in pattern:
                hit = fnmatch.fnmatchcase(name, pattern.lower())
            else:  # a path glob: anchored at / when absolute, else at any folder
                hit = fnmatch.fnmatchcase(path, pattern if pattern.startswith("/") else
                                          "*/" + pattern)
            if hit:
                return f"file name matches {pattern!r}"
        for folder in self.excluded_folders:
            if "/" in folder:
                if path.startswith(folder + "/") or f"/{folder}/" in path:
                    return f"in excluded folder {folder!r}"
            elif folder in posix.parts[:-1]:
                return f"in excluded folder {folder!r}"
        if (any(marker in data for marker in SECRET_MARKERS)
                and SECRET_CONTENT.search(data) is not None):
            return "content looks like a credential (private key or token)"
        if self.extra_content is not None and self.extra_content.search(data) is not None:
            return "content matches secretContentPatterns"
        return None


DEFAULT = Privacy()


def secret_reason(uri: str, data: bytes) -> str | None:
    """Why this document must stay private under the default rules, or None."""
    return DEFAULT.reason(uri, data)


def check_patterns(value: object) -> str | None:
    """Settings validator: a list of regular expressions that compile."""
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        return "expected a list of strings"
    for pattern in value:
        try:
            re.compile(pattern.encode())
        except re.error as exc:
            return f"{pattern!r} is not a regular expression: {exc}"
    return None
