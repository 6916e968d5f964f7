from lsp_copilot.settings.core import Settings, parse_settings, setting_docs


def test_defaults_and_docs_for_every_setting() -> None:
    docs = setting_docs()
    assert len(docs) == len(Settings.__dataclass_fields__)
    assert all(doc for _, _, doc in docs)


def test_camel_case_under_the_section_and_flat() -> None:
    s, errors = parse_settings({"lspCopilot": {"maxPromptTokens": 512, "model": "/m"}})
    assert (s.max_prompt_tokens, s.model, errors) == (512, "/m", [])
    s, errors = parse_settings({"maxPromptTokens": 256})
    assert s.max_prompt_tokens == 256 and not errors


def test_old_spellings_are_ignored_with_the_right_one_named() -> None:
    base = Settings(max_prompt_tokens=999)
    for raw, right in (
        ({"max_prompt_tokens": 256}, "maxPromptTokens"),
        ({"lspCopilot": {"engine": {"backend": "remote"}}}, "engineBackend"),
        ({"engine.backend": "remote"}, "engineBackend"),
        ({"engine": {"remote": {"url": "https://x"}}}, "remoteUrl"),
        ({"remote.apiKeyEnv": "TEAM_KEY"}, "remoteApiKeyEnv"),
        ({"lspCopilot.remoteRetries": 4}, "remoteRetries"),
    ):
        s, errors = parse_settings(raw, base)
        assert s == base, raw
        assert len(errors) == 1 and f"spell it {right!r}" in errors[0], (raw, errors)
    for section in ("lsp-copilot", "lsp_copilot"):
        s, errors = parse_settings({section: {"maxPromptTokens": 256}}, base)
        assert s == base and errors == [
            f"settings under {section!r} ignored: put them under 'lspCopilot'"]


def test_restarting_the_engine_is_a_flag_of_the_field() -> None:
    import dataclasses

    from lsp_copilot.settings.arms import experiment_arms
    from lsp_copilot.settings.core import ENGINE_FIELDS, restarts_engine

    flagged = {f.name for f in dataclasses.fields(Settings) if f.metadata["restarts_engine"]}
    assert flagged == ENGINE_FIELDS and "engine_niceness" in flagged
    assert {"model", "engine_backend", "remote_url"} <= flagged
    assert not {"temperature", "routes", "template", "max_queue"} & flagged
    assert restarts_engine("engineNiceness") and not restarts_engine("engine_niceness")
    a = Settings()
    assert parse_settings({"engineNiceness": 0}, a)[0].engine_key() != a.engine_key()
    _, problems = experiment_arms(parse_settings(
        {"experiment": {"a": {}, "b": {"engineNiceness": 0, "deadlineMs": 600}}})[0])
    assert problems == ["experiment arm 'b': 'engineNiceness' refused: it is read once for "
                        "the whole server, so it cannot differ between arms (an arm may set "
                        "model, routes and the per-request settings docs/acceptance.md lists)"]


def test_the_template_setting_accepts_the_prompt_families() -> None:
    """Settings cannot import the prompts package (it sits above them): the names the
    setting accepts are listed twice, and this keeps the lists equal."""
    from lsp_copilot.prompts.templates import TEMPLATE_NAMES as DEFINED
    from lsp_copilot.settings.context import TEMPLATE_NAMES

    assert TEMPLATE_NAMES == DEFINED


def test_bad_values_are_reported_and_replaced_by_default() -> None:
    base = Settings(max_prompt_tokens=999)
    s, errors = parse_settings(
        {"maxPromptTokens": "lots", "temperature": 9, "speculativeMethod": "magic", "nope": 1},
        base,
    )
    assert s.max_prompt_tokens == Settings().max_prompt_tokens
    assert s.temperature == Settings().temperature
    assert s.speculative_method == "ngram"
    assert len(errors) == 4
    assert any("maxPromptTokens" in e and "integer" in e for e in errors)
    assert any("unknown setting 'nope'" in e for e in errors)


def test_not_an_object() -> None:
    s, errors = parse_settings(["x"])
    assert s == Settings() and errors


def test_engine_key_changes_only_for_engine_settings() -> None:
    a = Settings()
    assert parse_settings({"temperature": 0.5}, a)[0].engine_key() == a.engine_key()
    assert parse_settings({"blockSize": 64}, a)[0].engine_key() != a.engine_key()
    _, errors = parse_settings({"blockSize": 33}, a)
    assert errors


def test_cache_clear_command(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from lsp_copilot.cli.main import main
    from lsp_copilot.pipeline.completion_cache import CompletionCache, workspace_folder

    folder = workspace_folder(tmp_path, "/work/project")
    cache = CompletionCache(folder)
    cache.put("k", "v")
    cache.close()
    (tmp_path / "notes").mkdir()  # not a cache: stays
    assert main(["cache", "clear", "--dir", str(tmp_path)]) == 0
    assert CompletionCache(folder).get("k") is None
    assert (tmp_path / "notes").is_dir()


def test_cache_clear_refuses_a_folder_that_holds_no_cache(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``--dir ~/.cache/lsp-copilot`` (logs, models) or any other folder: nothing goes."""
    import pytest

    from lsp_copilot.cli.main import main

    for name in ("logs", "models", "0123456789abcdef"):  # the last: a name alone is not enough
        (tmp_path / name).mkdir()
        (tmp_path / name / "keep.txt").write_text("x")
    with pytest.raises(SystemExit, match="holds no completion cache"):
        main(["cache", "clear", "--dir", str(tmp_path)])
    assert all((tmp_path / n / "keep.txt").exists() for n in ("logs", "models",
                                                                "0123456789abcdef"))


def test_configuration_doc_is_current() -> None:
    """docs/configuration.md is generated: regenerate it with scripts/gen-docs.py."""
    from pathlib import Path

    from lsp_copilot.settings.core import setting_docs
    from lsp_copilot.settings.docgen import DOC_PATH, configuration_markdown

    doc = (Path(__file__).resolve().parents[2] / DOC_PATH).read_text()
    assert doc == configuration_markdown(), "run: python scripts/gen-docs.py"
    for name, _, text in setting_docs():  # every setting, with its one-line doc
        assert text in doc, name


def test_readme_is_a_short_guide() -> None:
    """The README is the user's guide; references live in docs/."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert (root / "README.md").stat().st_size <= 16 * 1024


def test_vscode_settings_are_current() -> None:
    """editors/vscode/package.json's settings are generated from the server's table:
    regenerate them with scripts/gen-docs.py."""
    import json
    from pathlib import Path

    from lsp_copilot.settings.core import camel, setting_docs
    from lsp_copilot.settings.docgen import PACKAGE_PATH, package_json, vscode_configuration

    text = (Path(__file__).resolve().parents[2] / PACKAGE_PATH).read_text()
    assert text == package_json(text), "run: python scripts/gen-docs.py"
    properties = json.loads(text)["contributes"]["configuration"]["properties"]
    for name, _, _ in setting_docs():  # every server setting is reachable from VS Code
        assert f"lspCopilot.{camel(name)}" in properties, name
    assert vscode_configuration()["properties"] == properties


def test_every_setting_declares_a_json_schema_its_default_fits() -> None:
    """The schema VS Code validates with agrees with the server's own check."""
    import dataclasses

    from lsp_copilot.settings.checks import json_schema
    from lsp_copilot.settings.docgen import _json_default

    python_types = {"string": str, "boolean": bool, "integer": int, "number": (int, float),
                    "array": list, "object": dict, "null": type(None)}
    for f in dataclasses.fields(Settings):
        schema = json_schema(f.metadata["check"])
        kinds = schema.get("type")
        assert kinds, f.name
        kinds = kinds if isinstance(kinds, list) else [kinds]
        default = _json_default(f.default)
        assert any(isinstance(default, python_types[k]) for k in kinds), (f.name, default)
        if "enum" in schema:
            assert default in schema["enum"], f.name
        if "minimum" in schema and default is not None:
            assert schema["minimum"] <= default <= schema["maximum"], f.name
