"""The settings each layer takes, made of whole groups: what one completion request
reads (the pipeline) and what starting and supervising an engine reads (the engine
layer). ``Settings.request`` and ``Settings.engine_setup`` build them."""

from __future__ import annotations

from dataclasses import dataclass, field

from lsp_copilot.settings.completion import CompletionSettings
from lsp_copilot.settings.context import ContextSettings
from lsp_copilot.settings.engine import EngineSettings
from lsp_copilot.settings.general import GeneralSettings
from lsp_copilot.settings.privacy import PrivacySettings
from lsp_copilot.settings.remote import RemoteSettings
from lsp_copilot.settings.supervision import SupervisionSettings


@dataclass(frozen=True)
class RequestSettings:
    """The groups one completion request reads (what the pipeline takes): an `experiment`
    arm has its own; the engine group only for its model, routes and maxModelLen."""

    general: GeneralSettings = field(default_factory=GeneralSettings)
    engine: EngineSettings = field(default_factory=EngineSettings)
    context: ContextSettings = field(default_factory=ContextSettings)
    completion: CompletionSettings = field(default_factory=CompletionSettings)
    privacy: PrivacySettings = field(default_factory=PrivacySettings)


@dataclass(frozen=True)
class EngineSetup:
    """What starting and supervising an engine reads (what the engine layer takes): the
    engine, remote backend and supervision groups, and maxQueue (on CUDA it sizes the
    batch while maxNumSeqs is null)."""

    engine: EngineSettings = field(default_factory=EngineSettings)
    remote: RemoteSettings = field(default_factory=RemoteSettings)
    supervision: SupervisionSettings = field(default_factory=SupervisionSettings)
    max_queue: int = CompletionSettings.max_queue
