"""Files that look like secrets are never sent to the model, cached or logged."""

from __future__ import annotations

import fnmatch
import re
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


def _name(uri: str) -> str:
    path = unquote(urlparse(uri).path) if "://" in uri else uri
    return PurePosixPath(path).name


def secret_reason(uri: str, data: bytes) -> str | None:
    """Why this document must stay private, or None."""
    name = _name(uri).lower()
    for pattern in SECRET_NAMES:
        if fnmatch.fnmatchcase(name, pattern):
            return f"file name matches {pattern!r}"
    match = SECRET_CONTENT.search(data)
    if match is not None:
        return "content looks like a credential (private key or token)"
    return None
