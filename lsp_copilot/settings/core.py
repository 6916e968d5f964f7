"""Typed settings: every setting has a default, a one-line doc and a check.

Settings arrive from the editor (``initializationOptions`` and
``workspace/didChangeConfiguration``) as untyped JSON, in one spelling: camelCase names,
flat or in an ``lspCopilot`` object (as the VS Code, Neovim and Emacs clients send them).
A bad value must never take the server down: it is reported to the user and replaced by
its default. The fields are declared by group (settings/general.py, engine.py, ...).
``Settings`` joins the groups for the wire format (one flat namespace of names); the rest
of the server receives one group at a time (``settings.engine``, ``settings.completion``,
...), through the server's SettingsHub (settings/hub.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from lsp_copilot.settings.completion import CompletionSettings
from lsp_copilot.settings.context import ContextSettings
from lsp_copilot.settings.engine import EngineSettings
from lsp_copilot.settings.general import GeneralSettings
from lsp_copilot.settings.layers import EngineSetup, RequestSettings
from lsp_copilot.settings.logs_and_records import RecordsSettings
from lsp_copilot.settings.privacy import PrivacySettings
from lsp_copilot.settings.remote import RemoteSettings
from lsp_copilot.settings.supervision import SupervisionSettings

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

G = TypeVar("G", bound="DataclassInstance")
"""A group of settings (one of GROUPS)."""

SECTION = "lspCopilot"
"""The object editors put the settings in (VS Code's configuration section)."""


@dataclass(frozen=True)
class Settings(
    RecordsSettings,
    PrivacySettings,
    SupervisionSettings,
    RemoteSettings,
    CompletionSettings,
    ContextSettings,
    EngineSettings,
    GeneralSettings,
):
    """All user-facing settings (docs/configuration.md is generated from their docs).

    The groups are listed last to first: a dataclass takes its bases' fields from the end
    of this list, so the fields come in the order general, engine, context, ... records.
    Each group is also a value of its own (``settings.completion``): what a layer takes.
    """

    def group(self, kind: type[G]) -> G:
        """The value of the group ``kind`` (one of GROUPS) in these settings."""
        return kind(**{f.name: getattr(self, f.name) for f in dataclasses.fields(kind)})

    @cached_property
    def general(self) -> GeneralSettings:
        return self.group(GeneralSettings)

    @cached_property
    def engine(self) -> EngineSettings:
        return self.group(EngineSettings)

    @cached_property
    def context(self) -> ContextSettings:
        return self.group(ContextSettings)

    @cached_property
    def completion(self) -> CompletionSettings:
        return self.group(CompletionSettings)

    @cached_property
    def remote(self) -> RemoteSettings:
        return self.group(RemoteSettings)

    @cached_property
    def supervision(self) -> SupervisionSettings:
        return self.group(SupervisionSettings)

    @cached_property
    def privacy(self) -> PrivacySettings:
        return self.group(PrivacySettings)

    @cached_property
    def records(self) -> RecordsSettings:
        return self.group(RecordsSettings)

    @cached_property
    def engine_setup(self) -> EngineSetup:
        return EngineSetup(self.engine, self.remote, self.supervision, self.max_queue)

    @cached_property
    def request(self) -> RequestSettings:
        return RequestSettings(self.general, self.engine, self.context, self.completion,
                               self.privacy)

    def engine_key(self, device: str | None = None) -> tuple[Any, ...]:
        """What decides whether a running engine must be restarted after a change
        (maxQueue too on CUDA while maxNumSeqs is null: there it sizes the batch; on the
        CPU it does not, and a reload costs the user half a minute)."""
        queue = self.max_queue if self.max_num_seqs is None and device != "cpu" else None
        return (*(getattr(self, name) for name in sorted(ENGINE_FIELDS)), queue)


GROUPS: tuple[type, ...] = tuple(
    base for base in reversed(Settings.__mro__[1:]) if dataclasses.is_dataclass(base))
"""The groups of settings, in the order their fields come (docs/configuration.md)."""

ENGINE_FIELDS = frozenset(
    f.name for f in dataclasses.fields(Settings) if f.metadata["restarts_engine"])
"""Settings that only take effect when the engine is (re)started (``restarts_engine``)."""


def camel(name: str) -> str:
    """A setting's name on the wire (camelCase) from its field name."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _fields_by_wire_name() -> dict[str, dataclasses.Field[Any]]:
    return {camel(f.name): f for f in dataclasses.fields(Settings)}


def restarts_engine(key: str) -> bool:
    """Whether the setting spelled ``key`` on the wire restarts the engine."""
    f = _fields_by_wire_name().get(key)
    return f is not None and f.name in ENGINE_FIELDS


def setting_docs() -> list[tuple[str, Any, str]]:
    """(name, default, doc) for every setting, in declaration order."""
    return [(f.name, f.default, f.metadata["doc"]) for f in dataclasses.fields(Settings)]


_OLD_SECTIONS = ("lsp-copilot", "lsp_copilot")


def _intended_names(key: str, value: Any, known: Mapping[str, Any]) -> list[str]:
    """The wire names an old spelling meant: snake_case, dotted (``engine.backend``) and
    nested (``{"engine": {"remote": {"url": ...}}}``) keys, read as the camelCase name
    their parts spell, with a leading section or ``engine.`` before ``remote`` left out."""
    if isinstance(value, Mapping):
        return [name for sub, inner in value.items() for name in
                _intended_names(f"{key}.{sub}", inner, known)]
    parts = [part for part in key.split(".") if part not in (SECTION, *_OLD_SECTIONS)]
    if parts[:2] == ["engine", "remote"]:
        parts = parts[1:]
    words = [word for part in parts for word in part.split("_") if word]
    name = "".join(w[:1].upper() + w[1:] if i else w for i, w in enumerate(words))
    return [name] if name in known else []


def _unknown(key: str, value: Any, known: Mapping[str, Any]) -> str:
    """The message for a key that is no setting, naming the right spelling if it was one."""
    if key in _OLD_SECTIONS and isinstance(value, Mapping):
        return f"settings under {key!r} ignored: put them under {SECTION!r}"
    meant = _intended_names(key, value, known)
    if meant:
        names = ", ".join(repr(name) for name in dict.fromkeys(meant))
        return f"setting {key!r} ignored: spell it {names} (camelCase, one flat name)"
    return f"unknown setting {key!r} ignored"


def _hashable(value: Any) -> Any:
    """JSON lists and objects as tuples, so that settings stay hashable (engine_key)."""
    if isinstance(value, Mapping):
        return tuple(sorted((k, tuple(v) if isinstance(v, list) else v)
                            for k, v in value.items()))
    return tuple(value) if isinstance(value, list) else value


def parse_settings(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Merge editor JSON into ``base``; return the settings and one message per bad value
    or unknown name (the value is then the default, or ``base``'s for a name)."""
    base = base or Settings()
    errors: list[str] = []
    if raw is None:
        return base, errors
    if isinstance(raw, Mapping) and isinstance(raw.get(SECTION), Mapping):
        raw = raw[SECTION]
    if not isinstance(raw, Mapping):
        return base, [f"settings must be a JSON object, got {type(raw).__name__}; using defaults"]
    known = _fields_by_wire_name()
    values: dict[str, Any] = {}
    for key, value in raw.items():
        f = known.get(str(key))
        if f is None:
            errors.append(_unknown(str(key), value, known))
            continue
        if isinstance(f.default, float) and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        problem = f.metadata["check"](value)
        if problem:
            shown = "<hidden>" if f.metadata["redact"] else repr(value)
            errors.append(f"setting {key!r} = {shown} {problem}; using the default {f.default!r}")
            values[f.name] = f.default
        else:
            values[f.name] = _hashable(value)
    return dataclasses.replace(base, **values), errors
