"""The round-to-nearest exporter (models/quantize.py) on small random tensors: the packed
layouts are the ones vLLM's loaders read, and they round-trip to within rounding error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from lsp_copilot.engine.validate import settings_problems
from lsp_copilot.engine.vllm import engine_args
from lsp_copilot.models import prepare, resolve
from lsp_copilot.models.folders import MANIFEST_NAME, ModelError, model_dir, verify_prepared
from lsp_copilot.models.prepare import prepare_model
from lsp_copilot.models.presets import Preset
from lsp_copilot.models.quantize import (
    INT4_GROUP,
    dequantize_int4,
    export_folder,
    folder_quantization,
    folder_suffix,
    pack_int4_gptq,
    quantize_int4_groups,
    quantize_int8_rows,
    quantize_state,
    unpack_int4_gptq,
)
from lsp_copilot.settings.core import Settings
from tests.support.models import tiny_preset, write_tiny_gguf


def _weights(out_features: int, in_features: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(out_features, in_features, generator=gen) * 0.05).to(torch.bfloat16)


def test_int4_pack_round_trips_and_keeps_gptq_bit_order() -> None:
    gen = torch.Generator().manual_seed(1)
    q = torch.randint(-8, 8, (64, 96), generator=gen, dtype=torch.int8)
    packed = pack_int4_gptq(q)
    assert packed.dtype == torch.int32 and packed.shape == (96 // 8, 64)
    assert torch.equal(unpack_int4_gptq(packed), q)
    # GPTQ: input channel 8r+i of output n sits in bits 4i..4i+3 of qweight[r, n], plus 8.
    word = packed.to(torch.int64) & 0xFFFFFFFF
    for r, n, i in [(0, 0, 0), (3, 17, 5), (11, 63, 7)]:
        assert (int(word[r, n]) >> (4 * i)) & 0xF == int(q[n, 8 * r + i]) + 8


def test_int4_groups_round_trip_within_half_a_step() -> None:
    w = _weights(64, 128)
    q, scales = quantize_int4_groups(w, 32)
    assert scales.shape == (128 // 32, 64) and scales.dtype == torch.float16
    assert int(q.min()) >= -8 and int(q.max()) <= 7
    restored = dequantize_int4(unpack_int4_gptq(pack_int4_gptq(q)), scales)
    step = scales.t().to(torch.float32).repeat_interleave(32, dim=1)
    error = (restored - w.to(torch.float32)).abs()
    assert bool((error <= step / 2 + 1e-6).all()), "a weight was clipped or rounded twice"
    # Each group uses its range: its largest magnitude lands on level 7 or -8.
    top = q.reshape(64, 4, 32).to(torch.int32)
    assert bool(((top.amax(dim=2) == 7) | (top.amin(dim=2) == -8)).all())


def test_int8_rows_round_trip_within_half_a_step() -> None:
    w = _weights(48, 80, seed=2)
    q, scale = quantize_int8_rows(w)
    assert q.dtype == torch.int8 and scale.shape == (48, 1)
    assert int(q.abs().max()) <= 127
    error = (q.to(torch.float32) * scale - w.to(torch.float32)).abs()
    assert bool((error <= scale / 2 + 1e-6).all())


def _state(tied: bool = False) -> dict[str, torch.Tensor]:
    state = {
        "model.embed_tokens.weight": _weights(96, 64),
        "model.layers.0.self_attn.q_proj.weight": _weights(64, 64, 1),
        "model.layers.0.self_attn.q_proj.bias": torch.zeros(64, dtype=torch.bfloat16),
        "model.layers.0.mlp.down_proj.weight": _weights(64, 128, 2),
        "model.layers.0.mlp.odd_proj.weight": _weights(64, 48, 3),  # 48: not for int4
        "model.layers.0.input_layernorm.weight": torch.ones(64, dtype=torch.bfloat16),
        "model.norm.weight": torch.ones(64, dtype=torch.bfloat16),
    }
    if not tied:
        state["lm_head.weight"] = _weights(96, 64, 4)
    return state


def test_int8_state_is_compressed_tensors_w8a8() -> None:
    tensors, config = quantize_state(_state(), "int8")
    assert config["quant_method"] == "compressed-tensors"
    group = config["config_groups"]["group_0"]
    assert group["weights"]["strategy"] == "channel" and group["weights"]["num_bits"] == 8
    assert group["input_activations"]["dynamic"] is True
    assert "lm_head" in group["targets"] and config["ignore"] == []
    for name in ("model.layers.0.self_attn.q_proj", "model.layers.0.mlp.odd_proj", "lm_head"):
        assert tensors[f"{name}.weight"].dtype == torch.int8
        assert tensors[f"{name}.weight_scale"].shape == (tensors[f"{name}.weight"].shape[0], 1)
    for kept in ("model.embed_tokens.weight", "model.norm.weight",
                 "model.layers.0.self_attn.q_proj.bias"):
        assert tensors[kept].dtype == torch.bfloat16


def test_int8_state_of_a_tied_model_leaves_the_head_alone() -> None:
    tensors, config = quantize_state(_state(tied=True), "int8", lm_head=False)
    assert config["ignore"] == ["lm_head"] and "lm_head" not in config["config_groups"][
        "group_0"]["targets"]
    assert "lm_head.weight" not in tensors


def test_int4_state_is_gptq_and_skips_shapes_the_kernel_refuses() -> None:
    tensors, config = quantize_state(_state(), "int4")
    assert config == {"quant_method": "gptq", "bits": 4, "group_size": INT4_GROUP,
                      "desc_act": False, "sym": True, "lm_head": True,
                      "checkpoint_format": "gptq"}
    down = "model.layers.0.mlp.down_proj."
    assert tensors[down + "qweight"].shape == (128 // 8, 64)
    assert tensors[down + "scales"].shape == (128 // INT4_GROUP, 64)
    assert tensors[down + "qzeros"].shape == (128 // INT4_GROUP, 64 // 8)
    assert down + "weight" not in tensors
    assert tensors["lm_head.qweight"].shape == (64 // 8, 96)
    assert tensors["model.layers.0.mlp.odd_proj.weight"].dtype == torch.bfloat16
    restored = dequantize_int4(unpack_int4_gptq(tensors[down + "qweight"]),
                               tensors[down + "scales"])
    original = _state()[down + "weight"].to(torch.float32)
    assert float((restored - original).norm() / original.norm()) < 0.15


def test_a_model_with_nothing_to_quantize_is_refused() -> None:
    small = {"model.layers.0.mlp.up_proj.weight": _weights(16, 16)}
    with pytest.raises(ModelError, match="shape"):
        quantize_state(small, "int4")


def test_unknown_weights_are_refused() -> None:
    with pytest.raises(ModelError, match="int8"):
        folder_suffix("fp4")
    assert folder_suffix("bf16") == "" and folder_suffix("int8") == "-int8"


def test_export_folder_writes_a_loadable_quantized_folder(tmp_path: Path) -> None:
    src, out = tmp_path / "bf16", tmp_path / "int8"
    src.mkdir()
    out.mkdir()
    save_file(_state(), str(src / "model.safetensors"))
    (src / "config.json").write_text(json.dumps({"model_type": "qwen2",
                                                 "tie_word_embeddings": False}))
    (src / "tokenizer.json").write_text("{}")
    (src / MANIFEST_NAME).write_text("{}")
    export_folder(src, out, "int8", log=lambda _m: None)
    config = json.loads((out / "config.json").read_text())
    assert config["quantization_config"]["quant_method"] == "compressed-tensors"
    assert config["model_type"] == "qwen2"
    assert (out / "tokenizer.json").is_file()
    assert not (out / MANIFEST_NAME).exists(), "the bf16 manifest describes other files"
    assert load_file(str(out / "model.safetensors"))["lm_head.weight"].dtype == torch.int8
    assert folder_quantization(out) == "compressed-tensors"
    assert folder_quantization(src) is None


# ------------------------------------------------------- prepared beside the bf16 folder


@pytest.fixture(scope="module")
def tiny_source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Preset, Path]:
    """The tiny preset and its GGUF file as a local source (no pip, no network)."""
    wheels = tmp_path_factory.mktemp("wheels")
    tiny = tiny_preset(wheels)
    gguf = write_tiny_gguf(tmp_path_factory.mktemp("gguf") / tiny.gguf_filename)
    return tiny, gguf


def test_int8_is_prepared_beside_the_bf16_folder_and_loaded_with_its_method(
    tiny_source: tuple[Preset, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tiny, gguf = tiny_source
    monkeypatch.setenv("LSP_COPILOT_CACHE_DIR", str(tmp_path))
    made = prepare_model(tiny, source=gguf, weights="int8", log=lambda _m: None)
    assert made == model_dir(tiny, "int8") and made.name == f"{tiny.folder}-int8"
    verify_prepared(model_dir(tiny))  # the bf16 folder it was re-packed from
    verify_prepared(made)
    manifest = json.loads((made / MANIFEST_NAME).read_text())
    assert manifest["weights"] == "int8"
    assert manifest["source"]["from_folder"] == tiny.folder
    assert manifest["source"]["origin"]["kind"] == "gguf"
    assert folder_quantization(made) == "compressed-tensors"
    # The server's path: the preset name and the `weights` setting give this folder ...
    monkeypatch.setattr(resolve, "ensure_model", prepare.ensure_model)
    assert resolve.resolve_model(tiny.name, weights="int8") == (str(made), tiny.name)
    # ... and vLLM is told the folder's method, unless the user set another one.
    args = engine_args(Settings(weights="int8"), str(made), "cpu", max_queue=8)
    assert args["quantization"] == "compressed-tensors"
    assert engine_args(Settings(), str(model_dir(tiny)), "cpu", max_queue=8)["quantization"] is None
    # A damaged int8 folder names the command that rebuilds that folder, not the bf16 one.
    (made / "tokenizer.json").unlink()
    with pytest.raises(ModelError, match=r"model prepare smollm2-135m --weights int8 --force"):
        verify_prepared(made)


def test_weights_and_an_explicit_quantization_are_refused_together() -> None:
    problems = settings_problems(Settings(weights="int8", quantization="fp8"))
    assert any("`weights`" in p and "`quantization`" in p for p in problems)
    assert settings_problems(Settings(weights="int8")) == []
