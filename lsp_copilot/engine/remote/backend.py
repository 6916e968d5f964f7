"""The remote engine: a shared vLLM deployment, through its OpenAI-compatible API.

A team runs one `vllm serve` (tensor/data parallel, prefix caching) and every editor's
server streams from its ``/v1/completions``. The prompt is sent finished: vLLM rejects
``suffix``, and our template already renders fill-in-the-middle. Cancelling closes the
stream; vLLM aborts a request whose client went away. A request is tried again only
while no token has arrived (remote/transport.py says which failures are worth it).

The settings and their security rules are in remote/config.py, the HTTP details in
remote/transport.py, the token counting and prompt family in remote/tokenizer.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncGenerator, Callable
from typing import Any
from urllib.parse import urlsplit

import httpx

from lsp_copilot.engine.base import Engine, EngineInfo, EngineRequest, EngineResult
from lsp_copilot.engine.remote import transport
from lsp_copilot.engine.remote.config import RemoteConfig
from lsp_copilot.engine.remote.errors import PriorityRejected, RemoteError, RemoteRetryable
from lsp_copilot.engine.remote.tokenizer import calibrate, remote_family, tokenizer_file
from lsp_copilot.prompts.encoder import PromptEncoder
from lsp_copilot.settings.layers import EngineSetup
from lsp_copilot.tokens import HFTokenCounter, TokenCounter, TokenCounters

log = logging.getLogger(__name__)

MAX_BACKOFF_S = 2.0
"""No single wait longer than this: an editor wants an answer in well under a second."""


class RemoteEngine(Engine):
    """Streams completions from a vLLM deployment; retries only before the first token."""

    def __init__(self, config: RemoteConfig, model: str, counter: TokenCounter,
                 info: EngineInfo, encoder: PromptEncoder | None = None) -> None:
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
        self.encoder = encoder

    # -- loading -------------------------------------------------------------------------

    @classmethod
    def create(cls, settings: EngineSetup, report: Callable[[str], None],
               counters: TokenCounters) -> RemoteEngine:
        """Blocking, in the loading thread: one quick reachability check, no model load."""
        config = RemoteConfig.from_settings(settings.remote)
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
        with httpx.Client(**transport.client_args(config)) as client:
            model, root = transport.pick_model(transport.list_models(client, config), config)
            report(f"using {model} at {config.base_url}")
            tokenizer = tokenizer_file(config, model, root)
            counter: TokenCounter = (HFTokenCounter(tokenizer) if tokenizer is not None
                                     else calibrate(client, model, counters.fallback()))
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
        return cls(config, model, counter, info, encoder)

    # -- generation ----------------------------------------------------------------------

    def _async_client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(**transport.client_args(self.config))
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

    async def stream(self, request: EngineRequest) -> AsyncGenerator[EngineResult, None]:
        """Stream one completion; leaving early (or a cancel) closes the stream, and vLLM
        aborts. Attempts are retried while no token has come."""
        task = asyncio.current_task()
        if task is not None:
            self._tasks[request.request_id] = task
        try:
            loop = asyncio.get_running_loop()
            started = loop.time()
            deadline = started + self.config.total_timeout_s
            attempt = 0
            while True:
                try:
                    async for step in self._attempt(request, started, deadline):
                        yield step
                    return
                except PriorityRejected:
                    self._send_priority = False
                    continue
                except RemoteRetryable as exc:
                    attempt += 1
                    await self._before_retry(exc, attempt, deadline)
        except RemoteError:
            self._counters["remote_errors"] += 1
            raise
        finally:
            self._tasks.pop(request.request_id, None)

    async def _before_retry(self, exc: RemoteRetryable, attempt: int, deadline: float
                            ) -> None:
        """Wait before attempt ``attempt + 1``, or raise when none is left."""
        loop = asyncio.get_running_loop()
        if attempt > self.config.retries:
            raise RemoteError(f"{exc} (after {attempt} attempts)") from None
        delay = self.config.backoff_s * (2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
        if exc.retry_after is not None:
            delay = max(delay, exc.retry_after)
        delay = min(delay, MAX_BACKOFF_S)
        if loop.time() + delay >= deadline:
            raise RemoteError(f"{exc}; no time left to retry within remoteTimeoutMs "
                              f"({self.config.total_timeout_s * 1000:.0f} ms)") from None
        self._counters["remote_retries"] += 1
        log.info("remote attempt %d failed (%s); retrying in %.0f ms", attempt, exc,
                 delay * 1000)
        await self._sleep(delay)

    async def _attempt(
        self, request: EngineRequest, started: float, deadline: float
    ) -> AsyncGenerator[EngineResult, None]:
        """One HTTP request. Raises RemoteRetryable only while no token has arrived (and
        so before any step)."""
        loop = asyncio.get_running_loop()
        client = self._async_client()
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
            raise RemoteRetryable(transport.connect_message(exc, self.config)) from None
        except (httpx.TransportError, asyncio.TimeoutError) as exc:
            raise self._before_token(exc) from None
        stream = _Stream(started, loop.time)
        # Closing the response (also on cancel, or when the caller cuts) drops the
        # connection: vLLM aborts.
        try:
            if response.status_code != 200:
                raise await self._refusal(response, body, first_deadline)
            async for step in self._read(response, stream, deadline, first_deadline):
                yield step
        finally:
            await response.aclose()

    async def _refusal(self, response: httpx.Response, body: dict[str, Any],
                       first_deadline: float) -> RemoteError:
        """The error a non-200 answer stands for: retryable, a vLLM without priority
        scheduling (resent without), or final."""
        try:
            answer = await self._within(transport.read_capped(response.aiter_bytes()),
                                        first_deadline, "the error")
        except (httpx.TransportError, asyncio.TimeoutError) as exc:
            return self._before_token(exc)  # the answer broke off: as any failed request
        message = transport.describe_status(response.status_code, answer, self.config)
        if response.status_code in transport.RETRY_STATUS:
            return RemoteRetryable(message, transport.retry_after(response))
        if response.status_code == 400 and "priority" in body and (
                "priority" in message.lower()):
            return PriorityRejected(message)
        return RemoteError(message)

    async def _read(self, response: httpx.Response, stream: _Stream, deadline: float,
                    first_deadline: float) -> AsyncGenerator[EngineResult, None]:
        """The event stream's steps until [DONE] or its finish; the first token has its
        own deadline, a break before it is retryable."""
        lines = transport.bounded_lines(response.aiter_bytes())
        while True:
            try:
                line = await self._within(
                    transport.next_line(lines),
                    deadline if stream.got_token else first_deadline,
                    "the next token" if stream.got_token else "the first token")
            except StopAsyncIteration:
                if stream.result.finish_reason is None:  # no [DONE], no finish: cut off
                    broken = httpx.RemoteProtocolError("the stream ended early")
                    raise self._broken(broken, stream.got_token) from None
                return
            except (httpx.TransportError, asyncio.TimeoutError) as exc:
                raise self._broken(exc, stream.got_token) from None
            if transport.is_done(line):
                if stream.result.finish_reason is None:
                    stream.result.finish_reason = "stop"
                    yield stream.result
                return
            chunk = transport.parse_event(line)
            if chunk is not None and stream.take(chunk):
                yield stream.result

    def _broken(self, exc: BaseException, got_token: bool) -> RemoteError:
        """A failed stream's error: retryable only while no token has arrived."""
        return self._after_token(exc) if got_token else self._before_token(exc)

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
            raise RemoteError(transport.describe_status(response.status_code, response.content,
                                                        self.config))

    async def shutdown(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.aclose()


class _Stream:
    """What one attempt's stream has brought so far: the result (its text, the counts),
    whether a token came (a failure after one is not retried)."""

    def __init__(self, started: float, clock: Callable[[], float]) -> None:
        self.started = started
        self.clock = clock
        self.result = EngineResult()
        self.got_token = False

    def take(self, chunk: dict[str, Any]) -> bool:
        """Add one event's chunk; True when it is a step (text or the finish came)."""
        error = chunk.get("error")
        if error:
            why = error.get("message") if isinstance(error, dict) else error
            raise RemoteError(f"the vLLM server failed mid-stream: {why}")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            _count_usage(self.result, usage)
        result = self.result
        for choice in chunk.get("choices") or ():
            delta = choice.get("text") or ""
            if delta and not self.got_token:
                self.got_token = True
                result.first_token_ms = (self.clock() - self.started) * 1000
            result.text += delta
            if choice.get("finish_reason"):
                result.finish_reason = str(choice["finish_reason"])
        return "choices" in chunk and (self.got_token or result.finish_reason is not None)


def _count_usage(result: EngineResult, usage: dict[str, Any]) -> None:
    """Keep the token counts a chunk's ``usage`` reports (a later one replaces them)."""
    result.prompt_tokens = int(usage.get("prompt_tokens") or 0)
    result.generated_tokens = int(usage.get("completion_tokens") or 0)
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and details.get("cached_tokens") is not None:
        result.cached_prompt_tokens = int(details["cached_tokens"])
