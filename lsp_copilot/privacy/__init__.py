"""Files withheld whole: never sent to the model, cached, indexed or logged.

Secrets inside ordinary files are redacted, not withheld (``redact.py``): the file keeps
its completions. A file is withheld only where redaction cannot make it safe: by name,
files that are made of credentials (``.env``, keys, credential stores), whatever their
values look like; by content, a private-key block (many lines of base64 that no line
scanner can tell from data); and what the user excludes: ``secretFilePatterns``,
``excludedFolders`` and a repository's ``.lspcopilotignore`` (``ignore.py``). The rules
are compiled once into a :class:`Privacy`; ``secretContentPatterns`` are redacted.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from urllib.parse import unquote, urlparse

from lsp_copilot.privacy.ignore import RepoIgnores

SECRET_NAMES = (
    ".env", ".env.*", "*.env", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.ppk", ".netrc", "_netrc", ".pgpass",
    ".pypirc", ".npmrc", ".git-credentials", "credentials", "credentials.*",
    "*credentials*.json", "secrets.*", "*.secret", "*.secrets", ".htpasswd", "*.kdbx",
    ".envrc", "*.tfstate", "*.tfstate.*", "*.tfvars", "*.tfvars.json", ".terraformrc",
    "terraform.rc", ".vault-token", ".my.cnf", ".mylogin.cnf", ".s3cfg", ".boto",
    ".dockercfg", "kubeconfig", "kubeconfig.yaml", "kubeconfig.yml", "*.kubeconfig",
    # Path-shaped: the file name alone (config, hosts.yml, auth.json) says nothing.
    ".kube/config", ".docker/config.json", "containers/auth.json", ".aws/config",
    ".config/gh/hosts.yml", ".config/hub", ".composer/auth.json", "composer/auth.json",
    ".azure/accessTokens.json", ".azure/msal_token_cache.json",
    ".config/gcloud/legacy_credentials/*", ".m2/settings-security.xml",
)
"""Credential files by name (case-insensitive). A pattern with a ``/`` matches the end of
the path, at any depth (``.kube/config`` matches ``/home/u/.kube/config``, not
``src/config``); one without matches the file name."""

SECRET_CONTENT = re.compile(rb"-----BEGIN (?:(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
                            rb"|OpenVPN Static key V1)-----")
"""A private-key block (or an OpenVPN static key): its body lines are plain base64 or hex,
so only the whole file is safe."""

# The literals SECRET_CONTENT's matches contain: checking them first (memchr-fast) spares
# the regex scan on every keystroke of every clean file.
SECRET_MARKERS = (b"PRIVATE KEY", b"OpenVPN Static key")


def _path(uri: str) -> str:
    return unquote(urlparse(uri).path) if "://" in uri else uri


class Privacy:
    """The secret rules in force: the defaults plus the user's extra patterns."""

    def __init__(
        self,
        file_patterns: Iterable[str] = (),
        content_patterns: Iterable[str] = (),
        excluded_folders: Iterable[str] = (),
        ignores: RepoIgnores | None = None,
    ) -> None:
        self.file_patterns = SECRET_NAMES + tuple(file_patterns)
        # (pattern, what it is matched against: "name", "path" anchored at /, "tail")
        self._globs = tuple(
            (p, p.lower(), "name" if "/" not in p else "path" if p.startswith("/") else "tail")
            for p in self.file_patterns)
        self.content_patterns = tuple(content_patterns)  # redacted (redact.Redactor)
        # The workspace roots' `.lspcopilotignore` files (the server's, kept across settings).
        self.ignores = ignores
        # Folder names ("secrets") match any path component; paths ("/srv/keys", "a/b")
        # match that folder and below.
        folders = [f.rstrip("/") for f in excluded_folders if f.strip("/")]
        # An absolute folder also by its resolved path (documents are checked both ways).
        folders += [os.path.realpath(f) for f in folders if f.startswith("/")]
        self.excluded_folders = tuple(dict.fromkeys(folders))

    def reason(self, uri: str, data: bytes) -> str | None:
        """Why this document must stay private, or None. The path is checked as given, as
        the link it may be (its folder resolved) and as what it resolves to: a workspace
        opened through a link, a link to an ignored file or an ignored link are held to
        the rules of each. (Called once per document version: the completer caches it.)"""
        path = _path(uri)
        for candidate in spellings(path):
            why = self._path_reason(candidate)
            if why is not None:
                return why
        if (any(marker in data for marker in SECRET_MARKERS)
                and SECRET_CONTENT.search(data) is not None):
            return "content holds a private key"
        return None

    def _path_reason(self, path: str) -> str | None:
        posix = PurePosixPath(path)
        name = posix.name.lower()
        lowered = path.lower()
        for pattern, glob, kind in self._globs:
            if kind == "name":
                hit = fnmatch.fnmatchcase(name, glob)
            elif kind == "path":  # a path glob: anchored at / when absolute...
                hit = fnmatch.fnmatchcase(lowered, glob)
            else:  # ... else ending the path at any depth
                hit = (fnmatch.fnmatchcase(lowered, "*/" + glob)
                       or fnmatch.fnmatchcase(lowered, glob))
            if hit:
                return f"file name matches {pattern!r}"
        for folder in self.excluded_folders:
            if "/" in folder:
                if path.startswith(folder + "/") or f"/{folder}/" in path:
                    return f"in excluded folder {folder!r}"
            elif folder in posix.parts[:-1]:
                return f"in excluded folder {folder!r}"
        return self.ignores.reason(path) if self.ignores is not None else None


def spellings(path: str) -> tuple[str, ...]:
    """``path`` as given, with its folder resolved (the link itself, if it is one, in the
    resolved workspace's terms) and fully resolved (the link's target); a path that does
    not exist (an unsaved buffer) resolves as far as its folders do. Relative paths and
    other schemes' paths are checked as given."""
    if not path.startswith("/"):
        return (path,)
    folder, name = os.path.split(path)
    if name in ("", ".", ".."):
        link = os.path.realpath(path)
    else:
        link = os.path.join(os.path.realpath(folder), name)
    real = os.path.realpath(link) if os.path.islink(link) else link
    return tuple(dict.fromkeys((path, link, real)))


DEFAULT = Privacy()  # (no ignore files: those come with a server's workspace roots)


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
