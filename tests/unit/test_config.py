from lsp_copilot.config import Settings, parse_settings, setting_docs


def test_defaults_and_docs_for_every_setting() -> None:
    docs = setting_docs()
    assert len(docs) == len(Settings.__dataclass_fields__)
    assert all(doc for _, _, doc in docs)


def test_camel_case_nested_and_flat() -> None:
    s, errors = parse_settings({"lspCopilot": {"maxPromptTokens": 512, "model": "/m"}})
    assert (s.max_prompt_tokens, s.model, errors) == (512, "/m", [])
    s, errors = parse_settings({"max_prompt_tokens": 256})
    assert s.max_prompt_tokens == 256 and not errors


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
    from lsp_copilot.cache import CompletionCache
    from lsp_copilot.cli import main

    cache = CompletionCache(tmp_path / "ws1")
    cache.put("k", "v")
    cache.close()
    assert main(["cache", "clear", "--dir", str(tmp_path)]) == 0
    assert CompletionCache(tmp_path / "ws1").get("k") is None


def test_configuration_doc_is_current() -> None:
    """docs/configuration.md is generated: regenerate it with scripts/gen-docs.py."""
    from pathlib import Path

    from lsp_copilot.config import setting_docs
    from lsp_copilot.config_doc import DOC_PATH, configuration_markdown

    doc = (Path(__file__).resolve().parents[2] / DOC_PATH).read_text()
    assert doc == configuration_markdown(), "run: python scripts/gen-docs.py"
    for name, _, text in setting_docs():  # every setting, with its one-line doc
        assert text in doc, name


def test_readme_is_a_short_guide() -> None:
    """The README is the user's guide; references live in docs/."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert (root / "README.md").stat().st_size <= 16 * 1024
