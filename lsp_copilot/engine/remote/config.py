"""The remote backend's settings, checked once: where the deployment is, how long to wait,
how to trust it (TLS) and how to prove who we are (the API key).

Security (issue 7): TLS certificates are always verified (a CA bundle may be added, never
switched off), and the API key is read from an environment variable whose *name* is a
setting, so the key never sits in settings files, logs, messages or exceptions.
"""

from __future__ import annotations

import getpass
import hashlib
import ipaddress
import os
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from lsp_copilot.engine.remote.errors import RemoteError
from lsp_copilot.settings.remote import RemoteSettings


@dataclass(frozen=True)
class RemoteConfig:
    """The remote backend's settings, checked and normalized once."""

    base_url: str  # without a trailing /v1
    model: str
    api_key_env: str
    connect_timeout_s: float
    first_token_timeout_s: float
    total_timeout_s: float
    retries: int
    backoff_s: float
    ca_bundle: str
    routing_header: str
    tokenizer: str
    basic_auth: tuple[str, str] | None = None  # user:password taken out of remoteUrl

    @classmethod
    def from_settings(cls, settings: RemoteSettings) -> RemoteConfig:
        url = settings.remote_url.strip().rstrip("/")
        if not url:
            raise RemoteError(
                "engineBackend is \"remote\" but remoteUrl is empty: set it to your vLLM "
                "deployment, e.g. https://vllm.example.com"
            )
        if url.endswith("/v1"):
            url = url[: -len("/v1")]
        url, basic_auth = split_userinfo(url)
        return cls(
            base_url=url,
            basic_auth=basic_auth,
            model=settings.remote_model,
            api_key_env=settings.remote_api_key_env,
            connect_timeout_s=settings.remote_connect_timeout_ms / 1000,
            first_token_timeout_s=settings.remote_first_token_timeout_ms / 1000,
            total_timeout_s=settings.remote_timeout_ms / 1000,
            retries=settings.remote_retries,
            backoff_s=settings.remote_backoff_ms / 1000,
            ca_bundle=settings.remote_ca_bundle,
            routing_header=settings.remote_routing_header,
            tokenizer=settings.remote_tokenizer,
        )

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).hostname or ""

    @property
    def is_loopback(self) -> bool:
        host = self.host
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def api_key(self) -> str | None:
        """The key from the environment only; a named but unset variable is an error."""
        if not self.api_key_env:
            return None
        value = os.environ.get(self.api_key_env, "")
        return value or None

    def ssl_context(self) -> ssl.SSLContext | bool:
        """Verification is always on; a CA bundle adds trust, it never removes checks."""
        if not self.ca_bundle:
            return True  # httpx: certifi's CA bundle, hostname checked
        path = Path(self.ca_bundle).expanduser()
        if not path.is_file():
            raise RemoteError(f"remoteCaBundle {self.ca_bundle!r} is not a file")
        try:
            return ssl.create_default_context(cafile=str(path))
        except (ssl.SSLError, OSError) as exc:
            raise RemoteError(f"remoteCaBundle {self.ca_bundle!r} is not a PEM CA bundle: "
                              f"{exc}") from exc


def routing_key() -> str:
    """A stable, anonymous id for this user on this machine.

    Sent in ``remoteRoutingHeader`` so that a session-affinity router (production-stack
    ``--routing-logic session``, llm-d's session scorer, vllm-router's consistent hash)
    keeps one user's requests on one replica, where their prefix cache is.
    """
    try:
        user = getpass.getuser()
    except Exception:
        user = str(os.getuid()) if hasattr(os, "getuid") else "user"
    digest = hashlib.sha256(f"lsp-copilot:{user}@{socket.gethostname()}".encode())
    return digest.hexdigest()[:16]


def split_userinfo(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without ``user:password@``, and the two (sent as basic auth): the URL then
    goes into logs and messages (httpx logs every request's) with no credential in it."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=host)), (unquote(user), unquote(password))


def shown_url(url: str) -> str:
    """``url`` as it may be shown: any ``user:password@`` left out."""
    return split_userinfo(url)[0]
