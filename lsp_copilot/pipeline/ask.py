"""One completion request as one value: what it asks (``Ask``), built once, and what it
got before the checks (``Raw``). The completer's stages take the ``Ask`` and return an
``Outcome`` (an answer, or why there is none) or pass the request on."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lsp_copilot.context.result import Context
from lsp_copilot.documents.store import Snapshot
from lsp_copilot.engine.base import Engine
from lsp_copilot.language.trigger import Mode
from lsp_copilot.pipeline.trace import Trace
from lsp_copilot.postprocess.checks import Candidate, PostProcessor
from lsp_copilot.postprocess.cursor_text import Cursor
from lsp_copilot.postprocess.safety import Finding
from lsp_copilot.prompts.templates import Template
from lsp_copilot.settings.completion import CompletionSettings
from lsp_copilot.settings.layers import RequestSettings

if TYPE_CHECKING:
    from lsp_copilot.pipeline.alternatives import Alternatives


@dataclass
class Spent:
    """Where a request's time goes: the server's own work, and waiting (debounce, the
    engine), which the server time leaves out."""

    started: float = field(default_factory=time.perf_counter)
    waited_ms: float = 0.0

    def since_start_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000

    def own_ms(self) -> float:
        return max(0.0, self.since_start_ms() - self.waited_ms)


@dataclass(frozen=True)
class Spot:
    """Where the request stands before anything is asked of an engine: the `experiment`
    arm ("" without one) and its settings, the mode, the text around the cursor."""

    snapshot: Snapshot
    offset: int
    explicit: bool
    prefetch: bool
    arm: str
    settings: RequestSettings
    mode: Mode
    cursor: Cursor

    @property
    def typing(self) -> bool:
        """A keystroke's request: debounced, shared, cut at the deadline."""
        return not (self.prefetch or self.explicit)


@dataclass(frozen=True)
class Ask:
    """Everything one request needs, decided once: the engine and route, the prompt's
    template and context, the checks (``post``), the cache key and the token limit; the
    trace and the time spent go along."""

    spot: Spot
    route: str
    engine: Engine
    template: Template
    context: Context
    post: PostProcessor
    key: str
    max_tokens: int
    trace: Trace
    spent: Spent
    context_ms: float  # the server's own work until the ask was built
    debounced: bool = True  # a typing request waited for the next keystroke already

    @property
    def completion(self) -> CompletionSettings:
        return self.spot.settings.completion

    @property
    def uri(self) -> str:
        return self.spot.snapshot.uri

    @property
    def several(self) -> bool:
        """An explicit request that offers alternatives (maxSuggestions)."""
        return self.spot.explicit and self.completion.max_suggestions > 1


@dataclass(frozen=True)
class Raw:
    """An answer before the checks, and where it came from: the cache, a shared
    generation (already through the checks: ``checked``) or the engine; ``truncated``:
    the generation ended at its token limit."""

    text: str
    source: str  # cache | merged | engine
    truncated: bool = False
    ruled: bool = False  # the stream stopped where this request's stop rule said
    checked: Candidate | None = None
    alternatives: Alternatives | None = None


@dataclass(kw_only=True)
class Outcome:
    """A finished completion; ``reason`` says why ``text`` is empty when it is. Built with
    keywords only: a dozen fields in a row are easy to misplace."""

    text: str
    mode: Mode
    timings_ms: dict[str, float] = field(default_factory=dict)
    reason: str | None = None
    context: Context | None = None
    source: str = "engine"  # engine | cache | typed_through | merged | none
    raw: str = ""  # the model's text before post-processing (for `bench quality`)
    safety: tuple[Finding, ...] = ()  # findings shown with a warning (`safety`)
    warnings: tuple[str, ...] = ()  # messages the editor has not shown for them yet
    route: str | None = None  # "main" or the model of the route that answered
    template: str = ""  # the prompt family used (acceptance is broken down by it)
    arm: str = ""  # the `experiment` arm whose settings answered ("" without one)
    id: str = ""  # the suggestion's id in feedback (set when it is offered to the editor)
    alternatives: list[str] = field(default_factory=list)  # explicit requests' other items
    alternative_ids: list[str] = field(default_factory=list)  # their ids in feedback
    # Per item (text, then alternatives): the characters right of the cursor it takes over
    # (closers the editor inserted that it writes again, ``brackets.covered``).
    replaces: tuple[int, ...] = ()


def no_suggestion(mode: Mode, reason: str, context: Context | None = None) -> Outcome:
    """No suggestion, for ``reason``."""
    return Outcome(text="", mode=mode, reason=reason, context=context, source="none")
