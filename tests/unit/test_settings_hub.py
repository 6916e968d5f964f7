"""Settings by group: the hub calls a group's subscribers when that group changed, and
only then; the wire names stay one flat camelCase namespace over the groups."""

from __future__ import annotations

import dataclasses

import pytest

from lsp_copilot.settings.completion import CompletionSettings
from lsp_copilot.settings.context import ContextSettings
from lsp_copilot.settings.core import GROUPS, Settings, camel, parse_settings
from lsp_copilot.settings.engine import EngineSettings
from lsp_copilot.settings.hub import SettingsHub
from lsp_copilot.settings.privacy import PrivacySettings


def test_a_callback_fires_for_its_groups_change_and_not_for_another() -> None:
    hub = SettingsHub()
    seen: list[tuple[str, object]] = []
    start = hub.on_change(CompletionSettings, lambda g: seen.append(("completion", g)))
    hub.on_change(EngineSettings, lambda g: seen.append(("engine", g)))
    assert start == CompletionSettings() and seen == []
    new, errors = parse_settings({"lspCopilot": {"deadlineMs": 600}}, hub.settings)
    assert not errors
    assert hub.update(new) == [CompletionSettings]
    assert seen == [("completion", dataclasses.replace(CompletionSettings(), deadline_ms=600))]
    seen.clear()
    assert hub.update(parse_settings({"model": "/m"}, hub.settings)[0]) == [EngineSettings]
    assert [name for name, _ in seen] == ["engine"] and hub.get(EngineSettings).model == "/m"
    seen.clear()
    assert hub.update(parse_settings({"model": "/m", "deadlineMs": 600}, hub.settings)[0]) == []
    assert seen == []  # the same values again: nothing changed, nobody is called


def test_one_change_reaches_every_subscriber_of_the_group_in_order() -> None:
    hub = SettingsHub()
    calls: list[int] = []
    hub.on_change(PrivacySettings, lambda g: calls.append(1))
    hub.on_change(PrivacySettings, lambda g: calls.append(2))
    hub.on_change(ContextSettings, lambda g: calls.append(3))
    hub.update(parse_settings({"safety": "warn"})[0])
    assert calls == [1, 2]


def test_only_groups_can_be_subscribed_to() -> None:
    with pytest.raises(ValueError):
        SettingsHub().on_change(Settings, lambda s: None)


def test_every_wire_key_round_trips_through_its_group() -> None:
    """Each camelCase key belongs to exactly one group, and a value sent under it comes
    back unchanged from that group (and from the flat settings the wire format uses)."""
    owners = {camel(f.name): g for g in GROUPS for f in dataclasses.fields(g)}
    assert len(owners) == len(dataclasses.fields(Settings)) == 87
    assert len(GROUPS) == 8
    samples = {"maxTokensSingleLine": 12, "template": "codellama", "model": "/m",
               "remoteUrl": "https://x", "breakerFailures": 7, "safety": "warn",
               "logLevel": "debug", "disabledLanguages": ["markdown"]}
    settings, errors = parse_settings({"lspCopilot": samples})
    assert errors == []
    names = {camel(f.name): f.name for f in dataclasses.fields(Settings)}
    for key, value in samples.items():
        group: object = settings.group(owners[key])
        expected = tuple(value) if isinstance(value, list) else value
        assert getattr(group, names[key]) == getattr(settings, names[key]) == expected, key
    assert settings.completion.max_tokens_single_line == 12
    assert settings.context.template == "codellama" and settings.engine.model == "/m"
    assert settings.general.disabled_languages == ("markdown",)
    assert settings.remote.remote_url == "https://x" and settings.records.log_level == "debug"
    assert settings.supervision.breaker_failures == 7 and settings.privacy.safety == "warn"


def test_the_servers_parts_follow_their_groups_through_the_hub() -> None:
    """No getter, no assignment: a settings change reaches the pipeline, the main engine's
    supervision and the document store through their subscriptions."""
    from lsp_copilot.server.app import create_server

    server = create_server()
    engine_before = server.main_engine.settings.engine
    settings, errors = parse_settings({"lspCopilot": {
        "deadlineMs": 900, "requestTimeoutMs": 1234, "maxDocumentBytes": 5000,
        "template": "codellama"}})
    assert errors == []
    server.hub.update(settings)
    assert server.completer.settings.completion.deadline_ms == 900
    assert server.completer.settings.context.template == "codellama"
    assert server.main_engine.deadline_s() == 1.234
    assert server.main_engine.settings.engine is engine_before  # supervision only
    assert server.store.max_parse_bytes == 5000
