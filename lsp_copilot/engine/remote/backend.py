"""The remote engine: a shared vLLM deployment, through its OpenAI-compatible API.

A team runs one `vllm serve` (tensor/data parallel, prefix caching) and every editor's
server streams from its ``/v1/completions``. The prompt is sent finished: vLLM rejects
``suffix``, and our template already renders fill-in-the-middle. Cancelling closes the
stream; vLLM aborts a request whose client went away.

Security (issue 7): TLS certificates are always verified (a CA bundle may be added, never
switched off), and the API key is read from an environment variable whose *name* is a
setting, so the key never sits in settings files, logs, messages or exceptions.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import hashlib
import ipaddress
import json
import logging
import math
import os
import random
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from lsp_copilot.engine.base import EngineInfo, EngineRequest, EngineResult
from lsp_copilot.prompts.templates import (
    DEFAULT_TEMPLATE,
    PromptEncoder,
    detect_family,
    family_from_name,
)
from lsp_copilot.settings.core import Settings
from lsp_copilot.tokens import HFTokenCounter, TokenCounter, fallback_counter

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
"""Worth another try (overload, a replica restarting, a gateway between replicas)."""

MAX_BACKOFF_S = 2.0
"""No single wait longer than this: an editor wants an answer in well under a second."""

CALIBRATION_SAMPLE = '''import os
from dataclasses import dataclass


@dataclass
class Point:
    """A point in the plane."""

    x: float = 0.0
    y: float = 0.0

    def distance(self, other: "Point") -> float:
        return ((self.x - other.x) ** 2 + (self.y - other.y) ** 2) ** 0.5


def read_points(path: str) -> list[Point]:
    with open(path, encoding="utf-8") as handle:
        return [Point(*map(float, line.split(","))) for line in handle if line.strip()]


if __name__ == "__main__":
    print(sum(p.x for p in read_points(os.environ.get("POINTS", "points.csv"))))
'''
"""Code whose token count, on the server and with cl100k, calibrates the fallback counter."""


class RemoteError(RuntimeError):
    """What went wrong with the deployment, in words a user can act on (never the key)."""


class PriorityRejected(RemoteError):
    """An older vLLM without priority scheduling refuses ``priority``: resend without."""


class RemoteRetryable(RemoteError):
    """A failure before any token arrived that another attempt may not have."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


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

    @classmethod
    def from_settings(cls, settings: Settings) -> RemoteConfig:
        url = settings.remote_url.strip().rstrip("/")
        if not url:
            raise RemoteError(
                "engineBackend is \"remote\" but remoteUrl is empty: set it to your vLLM "
                "deployment, e.g. https://vllm.example.com"
            )
        if url.endswith("/v1"):
            url = url[: -len("/v1")]
        return cls(
            base_url=url,
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


def _error_text(response_body: bytes) -> str:
    """The server's own message (OpenAI error shape), short."""
    try:
        data = json.loads(response_body)
    except ValueError:
        return response_body.decode("utf-8", "replace").strip()[:300]
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            return str(error.get("message") or error.get("detail") or error)[:300]
        return str(error)[:300]
    return str(data)[:300]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def describe_status(status: int, body: bytes, config: RemoteConfig) -> str:
    """A reason and a fix for a refused request (never the key itself)."""
    detail = _error_text(body)
    if status == 401:
        if config.api_key() is None:
            where = (f"set the environment variable {config.api_key_env} (remoteApiKeyEnv) "
                     "in the environment the editor starts the server from"
                     if config.api_key_env else "set remoteApiKeyEnv to the name of an "
                     "environment variable that holds it")
            return f"the vLLM server at {config.base_url} wants an API key: {where}"
        return (f"the vLLM server at {config.base_url} refused the API key from "
                f"${config.api_key_env} (401 Unauthorized): check its value")
    if status == 403:
        return f"the vLLM server at {config.base_url} denied access (403): {detail}"
    if status == 404:
        return (f"{config.base_url} answered 404 ({detail}): check remoteUrl (the server's "
                "root, without /v1/completions) and remoteModel")
    return f"the vLLM server at {config.base_url} answered {status}: {detail}"


class ScaledCounter:
    """cl100k counts scaled to the server's tokenizer, measured once at load.

    The budget counts tokens synchronously, many times per keystroke, on the event loop:
    a network round trip per count (vLLM's ``/tokenize``) would stall the server, so one
    ``/tokenize`` of a code sample calibrates a local counter instead. Rounding up keeps
    the prompt within the server's window when the ratio is a little off.
    """

    def __init__(self, base: TokenCounter, ratio: float, calibrated: bool) -> None:
        self._base = base
        self.ratio = ratio
        how = f"x{ratio:.2f} via /tokenize" if calibrated else "uncalibrated"
        self.name = f"{base.name} ({how})"

    def count(self, text: str) -> int:
        return math.ceil(self._base.count(text) * self.ratio)


class RemoteEngine:
    """Streams completions from a vLLM deployment; retries only before the first token."""

    def __init__(
        self, config: RemoteConfig, model: str, counter: TokenCounter, info: EngineInfo
    ) -> None:
        self.config = config
        self.model = model
        self.counter = counter
        self.info = info
        self._client: httpx.AsyncClient | None = None
        self._tasks: dict[str, asyncio.Task[Any]] = {}
        self._send_priority = True
        self._counters = {"remote_retries": 0, "remote_errors": 0, "remote_timeouts": 0}
        self._sleep: Callable[[float], Any] = asyncio.sleep  # tests shorten backoff
        # The server's tokenizer, when readable here: prompts then go as token ids, so a
        # control-token string in the user's code stays text (as with the embedded engine).
        self.encoder: PromptEncoder | None = None

    # -- loading -------------------------------------------------------------------------

    @classmethod
    def create(cls, settings: Settings, report: Callable[[str], None]) -> RemoteEngine:
        """Blocking, in the loading thread: one quick reachability check, no model load."""
        config = RemoteConfig.from_settings(settings)
        key = config.api_key()
        if config.api_key_env and key is None:
            log.info("no API key: $%s is not set", config.api_key_env)
        if urlsplit(config.base_url).scheme == "http" and not config.is_loopback:
            if key is not None:
                raise RemoteError(
                    f"refusing to send the API key in clear text to {config.host}: remoteUrl "
                    "must use https:// for a host other than this machine"
                )
            log.warning("REMOTE BACKEND WITHOUT TLS: code is sent unencrypted to %s; "
                        "use https://", config.host)
            report(f"WARNING: {config.host} over plain http, code travels unencrypted")
        report(f"connecting to {config.base_url}")
        with httpx.Client(**cls._client_args(config)) as client:
            models = cls._list_models(client, config)
            model, root = cls._pick_model(models, config)
            report(f"using {model} at {config.base_url}")
            tokenizer = cls._tokenizer_file(config, model, root)
            counter: TokenCounter = (HFTokenCounter(tokenizer) if tokenizer is not None
                                     else calibrate(client, model, fallback_counter()))
        encoder = PromptEncoder.for_model(str(tokenizer.parent)) if tokenizer else None
        info = EngineInfo(
            backend="remote",
            model=model,
            device=f"remote:{urlsplit(config.base_url).netloc}",
            prefix_caching=True,  # vLLM V1 caches prefixes unless started without it
            speculative=None,  # decided by the deployment, not visible through the API
            template=remote_family(tokenizer, root, model),
        )
        log.info("remote engine %s at %s; template %s; tokens counted with %s; prompts sent "
                 "as %s", model, config.base_url, info.template, counter.name,
                 "token ids" if encoder else "text")
        engine = cls(config, model, counter, info)
        engine.encoder = encoder
        return engine

    @staticmethod
    def _client_args(config: RemoteConfig) -> dict[str, Any]:
        headers = {"User-Agent": "lsp-copilot"}
        key = config.api_key()
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        if config.routing_header:
            headers[config.routing_header] = routing_key()
        return {
            "base_url": config.base_url,
            "headers": headers,
            "verify": config.ssl_context(),
            "timeout": httpx.Timeout(
                connect=config.connect_timeout_s,
                read=config.first_token_timeout_s,
                write=config.first_token_timeout_s,
                pool=config.connect_timeout_s,
            ),
            "follow_redirects": False,  # a redirect would carry the key somewhere else
        }

    @staticmethod
    def _list_models(client: httpx.Client, config: RemoteConfig) -> list[dict[str, Any]]:
        try:
            response = client.get("/v1/models")
        except httpx.ConnectError as exc:  # (retryable: the deployment may come up later)
            raise RemoteRetryable(_connect_message(exc, config)) from None
        except httpx.TimeoutException:
            raise RemoteRetryable(
                f"no answer from {config.base_url} within "
                f"{config.connect_timeout_s + config.first_token_timeout_s:.1f} s "
                "(remoteConnectTimeoutMs, remoteFirstTokenTimeoutMs)") from None
        except httpx.HTTPError as exc:
            raise RemoteError(f"cannot reach {config.base_url}: {type(exc).__name__}: "
                              f"{exc}") from None
        if response.status_code != 200:
            raise RemoteError(describe_status(response.status_code, response.content, config))
        try:
            data = response.json().get("data", [])
        except (ValueError, AttributeError):
            raise RemoteError(f"{config.base_url}/v1/models did not answer JSON: is remoteUrl "
                              "an OpenAI-compatible server?") from None
        return [m for m in data if isinstance(m, dict) and m.get("id")]

    @staticmethod
    def _pick_model(models: list[dict[str, Any]], config: RemoteConfig) -> tuple[str, str]:
        names = [str(m["id"]) for m in models]
        if not names:
            raise RemoteError(f"{config.base_url} serves no model")
        chosen = next((m for m in models if m["id"] == config.model), None) if (
            config.model) else models[0]
        if chosen is None:
            raise RemoteError(f"remoteModel {config.model!r} is not served at "
                              f"{config.base_url}; it serves: {', '.join(names)}")
        return str(chosen["id"]), str(chosen.get("root") or "")

    @staticmethod
    def _tokenizer_file(config: RemoteConfig, model: str, root: str) -> Path | None:
        """The server's own tokenizer.json, when this machine can read it.

        In order: the ``remoteTokenizer`` folder or file; the folder the server loaded the
        model from (``root`` in /v1/models), when this machine sees it (same host or a
        shared file system); the Hugging Face cache. None: count with calibrated cl100k
        and send text.
        """
        if config.tokenizer:
            path = Path(config.tokenizer).expanduser()
            file = path / "tokenizer.json" if path.is_dir() else path
            if not file.is_file():
                raise RemoteError(f"remoteTokenizer {config.tokenizer!r}: no tokenizer.json")
            return file
        if root and (Path(root) / "tokenizer.json").is_file():
            return Path(root) / "tokenizer.json"
        for repo in (root, model):
            if not repo:
                continue
            try:
                from huggingface_hub import try_to_load_from_cache

                cached = try_to_load_from_cache(repo, "tokenizer.json")
            except Exception:
                cached = None
            if isinstance(cached, str):
                return Path(cached)
        return None

    # -- generation ----------------------------------------------------------------------

    def _async_client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(**self._client_args(self.config))
        return self._client

    def _body(self, request: EngineRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            # vLLM takes a list of token ids as the prompt, as it takes text.
            "prompt": list(request.prompt_token_ids) if request.prompt_token_ids
            else request.prompt,
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "stream": True,
            # continuous usage: exact token counts even when we stop reading early.
            "stream_options": {"include_usage": True, "continuous_usage_stats": True},
        }
        if request.stop_token_ids:
            body["stop_token_ids"] = list(request.stop_token_ids)
        if request.seed is not None:
            body["seed"] = request.seed
        if request.priority and self._send_priority:
            body["priority"] = request.priority
        return body

    async def generate(self, request: EngineRequest) -> EngineResult:
        """Stream one completion; on cancel the stream is closed (vLLM then aborts)."""
        task = asyncio.current_task()
        if task is not None:
            self._tasks[request.request_id] = task
        try:
            return await self._generate(request)
        except asyncio.CancelledError:
            raise
        except RemoteError:
            self._counters["remote_errors"] += 1
            raise
        finally:
            self._tasks.pop(request.request_id, None)

    async def _generate(self, request: EngineRequest) -> EngineResult:
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + self.config.total_timeout_s
        attempt = 0
        while True:
            try:
                return await self._attempt(request, started, deadline)
            except PriorityRejected:
                self._send_priority = False
                continue
            except RemoteRetryable as exc:
                if attempt >= self.config.retries:
                    raise RemoteError(f"{exc} (after {attempt + 1} attempts)") from None
                delay = self.config.backoff_s * (2 ** attempt) * random.uniform(0.5, 1.0)
                if exc.retry_after is not None:
                    delay = max(delay, exc.retry_after)
                delay = min(delay, MAX_BACKOFF_S)
                if loop.time() + delay >= deadline:
                    raise RemoteError(f"{exc}; no time left to retry within remoteTimeoutMs "
                                      f"({self.config.total_timeout_s * 1000:.0f} ms)") from None
                attempt += 1
                self._counters["remote_retries"] += 1
                log.info("remote attempt %d failed (%s); retrying in %.0f ms", attempt, exc,
                         delay * 1000)
                await self._sleep(delay)

    async def _attempt(
        self, request: EngineRequest, started: float, deadline: float
    ) -> EngineResult:
        """One HTTP request. Raises RemoteRetryable only while no token has arrived."""
        loop = asyncio.get_running_loop()
        client = self._async_client()
        result = EngineResult()
        text = ""
        got_token = False
        first_deadline = min(deadline, loop.time() + self.config.first_token_timeout_s)
        body = self._body(request)
        http_request = client.build_request(
            "POST", "/v1/completions", json=body,
            headers={"X-Request-Id": request.request_id},
        )
        try:
            response = await self._within(client.send(http_request, stream=True),
                                          first_deadline, "the response")
        except httpx.ConnectError as exc:
            raise RemoteRetryable(_connect_message(exc, self.config)) from None
        except (httpx.TransportError, asyncio.TimeoutError) as exc:
            raise self._before_token(exc) from None
        # Closing the response (also on cancel) drops the connection: vLLM aborts.
        try:
            if response.status_code != 200:
                answer = await self._within(response.aread(), first_deadline, "the error")
                message = describe_status(response.status_code, answer, self.config)
                if response.status_code in RETRY_STATUS:
                    raise RemoteRetryable(message, _retry_after(response))
                if response.status_code == 400 and "priority" in body and (
                        "priority" in message.lower()):
                    raise PriorityRejected(message)
                raise RemoteError(message)
            lines = response.aiter_lines()
            while True:
                try:
                    line = await self._within(
                        anext_line(lines), deadline if got_token else first_deadline,
                        "the next token" if got_token else "the first token")
                except StopAsyncIteration:
                    if result.finish_reason is None:  # no [DONE], no finish: cut off
                        broken = httpx.RemoteProtocolError("the stream ended early")
                        raise (self._after_token(broken) if got_token
                               else self._before_token(broken)) from None
                    break
                except (httpx.TransportError, asyncio.TimeoutError) as exc:
                    if got_token:
                        raise self._after_token(exc) from None
                    raise self._before_token(exc) from None
                if _is_done(line):
                    break
                chunk = _parse_event(line)
                if chunk is None:
                    continue
                error = chunk.get("error")
                if error:
                    why = error.get("message") if isinstance(error, dict) else error
                    raise RemoteError(f"the vLLM server failed mid-stream: {why}")
                usage = chunk.get("usage")
                if isinstance(usage, dict):
                    result.prompt_tokens = int(usage.get("prompt_tokens") or 0)
                    result.generated_tokens = int(usage.get("completion_tokens") or 0)
                    details = usage.get("prompt_tokens_details")
                    if isinstance(details, dict) and details.get("cached_tokens") is not None:
                        result.cached_prompt_tokens = int(details["cached_tokens"])
                for choice in chunk.get("choices") or ():
                    delta = choice.get("text") or ""
                    if delta and not got_token:
                        got_token = True
                        result.first_token_ms = (loop.time() - started) * 1000
                    text += delta
                    if choice.get("finish_reason"):
                        result.finish_reason = str(choice["finish_reason"])
                if "choices" in chunk:
                    cut, why = request.cut(text, result.finish_reason is not None)
                    if cut is not None:
                        text = text[:cut]
                        result.stopped_early = result.finish_reason is None
                        result.finish_reason = why if why == "stop" else (
                            result.finish_reason or why)
                        break
        finally:
            await response.aclose()
        result.text = text
        return result

    async def _within(self, awaitable: Any, deadline: float, what: str) -> Any:
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise asyncio.TimeoutError(what)
        # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancel (an abort)
        # that arrives while the awaited line is completing, and the stream then runs on.
        try:
            async with asyncio.timeout(remaining):
                return await awaitable
        except TimeoutError:
            raise asyncio.TimeoutError(what) from None

    def _before_token(self, exc: BaseException) -> RemoteRetryable:
        if isinstance(exc, asyncio.TimeoutError | httpx.TimeoutException):
            self._counters["remote_timeouts"] += 1
            what = str(exc) if isinstance(exc, asyncio.TimeoutError) and str(exc) else (
                "an answer")
            return RemoteRetryable(f"timed out waiting for {what} from {self.config.base_url}")
        return RemoteRetryable(f"connection to {self.config.base_url} failed: "
                               f"{type(exc).__name__}: {exc}")

    def _after_token(self, exc: BaseException) -> RemoteError:
        if isinstance(exc, asyncio.TimeoutError | httpx.TimeoutException):
            self._counters["remote_timeouts"] += 1
            return RemoteError(f"the completion from {self.config.base_url} took longer than "
                               f"remoteTimeoutMs ({self.config.total_timeout_s * 1000:.0f} ms)")
        return RemoteError(f"the stream from {self.config.base_url} broke after tokens came "
                           f"(not retried): {type(exc).__name__}: {exc}")

    async def abort(self, request_id: str) -> None:
        """Cancel the request's stream; leaving it closes the connection, vLLM aborts."""
        task = self._tasks.get(request_id)
        if task is not None and not task.done():
            task.cancel()

    def stats(self) -> dict[str, int]:
        return dict(self._counters)

    async def warm_up(self) -> None:
        """Nothing to warm: the deployment is shared and already loaded."""

    async def check_health(self) -> None:
        """The supervisor's probe: vLLM's ``/health`` (200 alive, 503 engine dead); a server
        without it (404) is asked for ``/v1/models``, which also proves the key still works."""
        client = self._async_client()
        try:
            response = await client.get("/health")
            if response.status_code == 404:
                response = await client.get("/v1/models")
        except httpx.HTTPError as exc:
            raise RemoteError(f"{self.config.base_url} does not answer: "
                              f"{type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise RemoteError(describe_status(response.status_code, response.content,
                                              self.config))

    async def shutdown(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.aclose()


async def anext_line(lines: AsyncIterator[str]) -> str:
    return await lines.__anext__()


def _is_done(line: str) -> bool:
    return line.startswith("data:") and line[len("data:"):].strip() == "[DONE]"


def _parse_event(line: str) -> dict[str, Any] | None:
    """One server-sent event line: its JSON chunk, or None for anything else."""
    if not line.startswith("data:"):
        return None  # blank separators, comments (": ping"), event/id fields
    payload = line[len("data:"):].strip()
    try:
        value = json.loads(payload)
    except ValueError:
        log.warning("skipping an unreadable event from the server")
        return None
    return value if isinstance(value, dict) else None


def _connect_message(exc: BaseException, config: RemoteConfig) -> str:
    text = str(exc)
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return (f"the TLS certificate of {config.host} could not be verified ({text}). If "
                "your deployment uses a private CA, set remoteCaBundle to its PEM file; "
                "verification cannot be turned off")
    return (f"cannot connect to {config.base_url} ({type(exc).__name__}: {text or 'refused'}). "
            "Is the vLLM server running, and is remoteUrl right?")


def remote_family(tokenizer: Path | None, root: str, model: str) -> str:
    """The prompt family: from the tokenizer's folder when we have it, else from the names
    the server gives (the folder or hub id it loaded, then the served name)."""
    if tokenizer is not None:
        family = detect_family(str(tokenizer.parent))
        if family != DEFAULT_TEMPLATE:
            return family
    for name in (root, model):
        if name and (family := family_from_name(name)) != DEFAULT_TEMPLATE:
            return family
    return DEFAULT_TEMPLATE


def calibrate(client: httpx.Client, model: str, base: TokenCounter) -> ScaledCounter:
    """Ratio of the server's token count to ``base``'s on a code sample (one /tokenize)."""
    try:
        response = client.post("/tokenize", json={"model": model, "prompt": CALIBRATION_SAMPLE,
                                                  "add_special_tokens": False})
        remote = int(response.json()["count"]) if response.status_code == 200 else 0
    except Exception:
        remote = 0
    local = base.count(CALIBRATION_SAMPLE)
    if remote <= 0 or local <= 0:
        log.warning("the server has no /tokenize; counting prompt tokens with %s unscaled",
                    base.name)
        return ScaledCounter(base, 1.0, calibrated=False)
    return ScaledCounter(base, remote / local, calibrated=True)

