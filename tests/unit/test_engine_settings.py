"""Engine settings: how each maps to vLLM, and which combinations are refused before start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_copilot.engine.manager import explain_failure
from lsp_copilot.engine.validate import (
    EngineConfigError,
    check_engine,
    engine_problems,
    settings_problems,
)
from lsp_copilot.engine.vllm import engine_args, speculative_config
from lsp_copilot.settings.core import Settings, parse_settings


def _model(folder: Path, vocab: int = 49152, hidden: int = 576, heads: int = 9) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(
        {"vocab_size": vocab, "hidden_size": hidden, "num_attention_heads": heads}))
    return str(folder)


def _problems(settings: Settings, model: str = "", device: str = "cpu", **kw: object) -> str:
    found = engine_problems(settings, model, device, flags=kw.get("flags", lambda: {"avx512f"}),
                            nodes=kw.get("nodes", lambda: 1),  # type: ignore[arg-type]
                            gpus=kw.get("gpus", lambda: 1))  # type: ignore[arg-type]
    return " | ".join(found)


# -- mapping ------------------------------------------------------------------------------

def test_editor_settings_reach_engine_args() -> None:
    s, errors = parse_settings({"lspCopilot": {
        "kvCacheDtype": "fp8", "maxNumSeqs": 4, "maxNumBatchedTokens": 4096,
        "enableChunkedPrefill": False, "blockSize": 64, "gpuMemoryUtilization": 0.7,
        "tensorParallelSize": 2, "dataParallelSize": 3, "quantization": "awq"}})
    assert errors == []
    args = engine_args(s, "/m", "cuda", max_queue=s.max_queue)
    assert (args["kv_cache_dtype"], args["max_num_seqs"], args["max_num_batched_tokens"],
            args["enable_chunked_prefill"], args["block_size"], args["gpu_memory_utilization"],
            args["tensor_parallel_size"], args["data_parallel_size"], args["quantization"]) == (
        "fp8", 4, 4096, False, 64, 0.7, 2, 3, "awq")


def test_null_settings_keep_vllm_defaults() -> None:
    args = engine_args(Settings(), "/m", "cpu", max_queue=8)
    for name in ("max_num_seqs", "max_num_batched_tokens", "enable_chunked_prefill"):
        assert name not in args
    assert args["block_size"] == 32  # CPU: finer prefix-cache hits than vLLM's 128
    assert "block_size" not in engine_args(Settings(), "/m", "cuda", max_queue=8)


def test_ngram_is_the_default_with_its_lookup_window() -> None:
    assert speculative_config(Settings()) == {
        "method": "ngram", "num_speculative_tokens": Settings().speculative_tokens,
        "prompt_lookup_min": Settings().prompt_lookup_min,
        "prompt_lookup_max": Settings().prompt_lookup_max}
    s = parse_settings({"promptLookupMin": 3, "promptLookupMax": 5, "speculativeTokens": 6})[0]
    assert speculative_config(s) == {"method": "ngram", "num_speculative_tokens": 6,
                                     "prompt_lookup_min": 3, "prompt_lookup_max": 5}


def test_each_method_gets_only_its_own_parameters() -> None:
    assert speculative_config(Settings(speculative_method="none")) is None
    assert engine_args(Settings(speculative_method="none"), "/m", "cpu", max_queue=8)[
        "speculative_config"] is None
    suffix = speculative_config(Settings(speculative_method="suffix", suffix_max_tree_depth=16,
                                         suffix_max_spec_factor=2.0, suffix_min_token_prob=0.2))
    assert suffix == {"method": "suffix", "num_speculative_tokens": 4,
                      "suffix_decoding_max_tree_depth": 16,
                      "suffix_decoding_max_spec_factor": 2.0,
                      "suffix_decoding_min_token_prob": 0.2}
    for method in ("draft_model", "eagle", "eagle3"):
        config = speculative_config(Settings(speculative_method=method,
                                             speculative_model=" /draft "))
        assert config == {"method": method, "num_speculative_tokens": 4, "model": "/draft"}
    assert speculative_config(Settings(speculative_method="mtp")) == {
        "method": "mtp", "num_speculative_tokens": 4}


def test_unknown_method_is_replaced_by_default() -> None:
    s, errors = parse_settings({"speculativeMethod": "medusa"})
    assert s.speculative_method == "ngram" and "speculativeMethod" in errors[0]


def test_engine_settings_restart_the_engine() -> None:
    a = Settings()
    for raw in ({"maxNumSeqs": 2}, {"kvCacheDtype": "fp8"}, {"speculativeModel": "/d"},
                {"promptLookupMax": 8}, {"enableChunkedPrefill": True}):
        assert parse_settings(raw, a)[0].engine_key() != a.engine_key(), raw
    assert parse_settings({"warmUp": False}, a)[0].engine_key() == a.engine_key()


# -- validation ---------------------------------------------------------------------------

def test_valid_defaults_have_no_problems(tmp_path: Path) -> None:
    assert _problems(Settings(), _model(tmp_path / "m")) == ""
    check_engine(Settings(speculative_method="none", max_num_seqs=2), "org/model", "cpu")


@pytest.mark.parametrize("method", ["draft_model", "eagle", "eagle3"])
def test_model_based_methods_need_a_model_path(method: str) -> None:
    problems = settings_problems(Settings(speculative_method=method))
    assert len(problems) == 1 and "speculativeModel" in problems[0] and method in problems[0]
    assert settings_problems(Settings(speculative_method=method, speculative_model="org/x")) == []


def test_draft_model_with_another_vocabulary_is_refused(tmp_path: Path) -> None:
    target = _model(tmp_path / "target", vocab=49152)
    same = _model(tmp_path / "same", vocab=49152)
    other = _model(tmp_path / "other", vocab=32000)
    ok = Settings(speculative_method="draft_model", speculative_model=same)
    assert _problems(ok, target) == ""
    bad = Settings(speculative_method="draft_model", speculative_model=other)
    text = _problems(bad, target)
    assert "32000" in text and "49152" in text and "vocabulary" in text


def test_draft_model_that_does_not_exist(tmp_path: Path) -> None:
    s = Settings(speculative_method="draft_model", speculative_model=str(tmp_path / "nope"))
    assert "neither an existing folder" in _problems(s, _model(tmp_path / "m"))
    (tmp_path / "empty").mkdir()
    s = Settings(speculative_method="eagle", speculative_model=str(tmp_path / "empty"))
    assert "config.json" in _problems(s, _model(tmp_path / "m"))


def test_parallelism_beyond_the_machine(tmp_path: Path) -> None:
    m = _model(tmp_path / "m")
    assert "NUMA" in _problems(Settings(tensor_parallel_size=2), m)
    assert "NUMA" in _problems(Settings(data_parallel_size=2), m)
    assert _problems(Settings(tensor_parallel_size=2), m, nodes=lambda: 2) == ""
    assert "1 is visible" in _problems(Settings(tensor_parallel_size=2), m, "cuda")
    assert _problems(Settings(tensor_parallel_size=2, data_parallel_size=2), m, "cuda",
                     gpus=lambda: 4) == ""


def test_fp8_kv_cache_needs_avx512_or_amx_on_cpu(tmp_path: Path) -> None:
    m = _model(tmp_path / "m")
    s = Settings(kv_cache_dtype="fp8")
    assert "AVX-512" in _problems(s, m, flags=lambda: {"avx2"})
    assert _problems(s, m, flags=lambda: {"amx_tile"}) == ""
    assert _problems(s, m, "cuda", flags=lambda: set()) == ""  # not a CPU matter there
    odd = _model(tmp_path / "odd", hidden=9 * 48)  # head size 48
    assert "divisible by 32" in _problems(s, odd)


def test_lookup_window_and_batch_size_combinations() -> None:
    problems = settings_problems(Settings(prompt_lookup_min=5, prompt_lookup_max=3))
    assert len(problems) == 1 and "promptLookupMin" in problems[0]
    problems = settings_problems(Settings(enable_chunked_prefill=False,
                                          max_num_batched_tokens=512, max_model_len=2048))
    assert len(problems) == 1 and "maxNumBatchedTokens" in problems[0]
    assert settings_problems(Settings(enable_chunked_prefill=True,
                                      max_num_batched_tokens=512)) == []


def test_suffix_needs_arctic_inference(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "arctic_inference" else real(name, *a))
    problems = settings_problems(Settings(speculative_method="suffix"))
    assert len(problems) == 1 and "arctic-inference" in problems[0]


def test_problems_reach_the_user_as_one_clear_message(tmp_path: Path) -> None:
    s = Settings(speculative_method="eagle", prompt_lookup_min=9)  # lookup: ngram only
    with pytest.raises(EngineConfigError) as info:
        check_engine(s, _model(tmp_path / "m"), "cpu")
    message = explain_failure(info.value)
    assert message.startswith("invalid engine settings: ") and "speculativeModel" in message
    assert "Traceback" not in message and "promptLookupMin" not in message
