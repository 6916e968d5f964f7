"""A GGUF file turned into a plain Hugging Face folder (bf16 safetensors + tokenizer.json).

vLLM on CPU cannot run GGUF files, so the presets' GGUF files are dequantized once with
transformers into a folder vLLM loads as is. Heavy imports (torch, transformers) happen
inside the functions: the server must start fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lsp_copilot.models.folders import (
    PREPARE_COMMAND,
    REPAIR_COMMAND,
    REQUIRED_FILES,
    ModelError,
    installed_version,
)
from lsp_copilot.models.source import Log


def _import_conversion_libs() -> tuple[Any, Any, Any]:
    """torch + transformers, with an actionable error instead of an import traceback."""
    try:
        import gguf  # noqa: F401  (transformers needs it to read GGUF; fail early and clearly)
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except Exception as exc:  # ImportError, or a broken CUDA torchvision (RuntimeError)
        text = f"{type(exc).__name__}: {exc}"
        if "torchvision" in text or "LlamaConfig" in text:
            fix = (
                "a CUDA build of torchvision breaks transformers on CPU: run "
                "`pip uninstall -y torchvision torchaudio torchcodec` (text models need none)"
            )
        else:
            fix = "run `pip install 'lsp-copilot[cpu]'` (or `[gpu]`) for gguf and accelerate"
        raise ModelError(
            f"cannot convert the model ({text}); {fix}, then `{PREPARE_COMMAND}`"
        ) from exc
    return torch, AutoTokenizer, AutoModelForCausalLM


def convert_gguf(gguf: Path, out: Path, context: int, log: Log) -> None:
    """Dequantize the GGUF into a bf16 Hugging Face folder that vLLM loads as is."""
    torch, auto_tokenizer, auto_model = _import_conversion_libs()
    src_dir, name = str(gguf.parent), gguf.name
    log("reading tokenizer and weights from the GGUF file")
    try:
        tokenizer = auto_tokenizer.from_pretrained(src_dir, gguf_file=name)
        quantized = auto_model.from_pretrained(src_dir, gguf_file=name)
    except Exception as exc:
        raise ModelError(
            f"transformers could not read {name} ({type(exc).__name__}: {exc}); "
            f"update transformers/gguf (`pip install -U transformers gguf accelerate`), "
            f"then `{PREPARE_COMMAND}`"
        ) from exc
    config = quantized.config
    # save_pretrained refuses GGUF-quantized models; the weights are already dequantized.
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.dtype = torch.bfloat16  # vLLM reads `dtype` (transformers 5) / `torch_dtype` (4.x)
    if "torch_dtype" in config.__dict__:
        config.torch_dtype = torch.bfloat16
    ctx = getattr(config, "max_position_embeddings", None)
    if not isinstance(ctx, int) or not 512 <= ctx <= 1_048_576:
        log(f"max_position_embeddings {ctx!r} is implausible; using {context}")
        config.max_position_embeddings = context
    state = quantized.state_dict()
    model = type(quantized)(config).to(torch.bfloat16)
    result = model.load_state_dict(state, strict=True)
    if getattr(result, "missing_keys", None) or getattr(result, "unexpected_keys", None):
        raise ModelError(f"converted weights do not fit the model ({result}); {PREPARE_COMMAND}")
    del quantized, state

    # The instruct GGUF ends turns with <|im_end|> (eos) but ends plain text with
    # <|endoftext|>; completions are plain text, so stop on both (vLLM reads this list).
    gen = model.generation_config
    eos = [config.eos_token_id] if isinstance(config.eos_token_id, int) else []
    endoftext = tokenizer.get_vocab().get("<|endoftext|>")
    if isinstance(endoftext, int) and endoftext not in eos:
        eos.append(endoftext)
    if eos:
        gen.eos_token_id = eos if len(eos) > 1 else eos[0]

    ctx = config.max_position_embeddings
    log(f"writing bf16 safetensors ({config.vocab_size} tokens, context {ctx})")
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    _tidy_tokenizer_config(out / "tokenizer_config.json", config.max_position_embeddings)

    for needed in REQUIRED_FILES:
        if not (out / needed).is_file():
            raise ModelError(
                f"the conversion did not write {needed} (transformers "
                f"{installed_version('transformers')}); update transformers and run "
                f"`{PREPARE_COMMAND}`"
            )
    # The tokenizer vLLM will load must tokenize exactly as the GGUF one did.
    from tokenizers import Tokenizer

    probe = "def hello():\n    return 'héllo' + <|endoftext|>"
    saved = Tokenizer.from_file(str(out / "tokenizer.json")).encode(probe, add_special_tokens=False)
    original = tokenizer(probe, add_special_tokens=False)["input_ids"]
    if list(saved.ids) != list(original):
        raise ModelError(f"the saved tokenizer differs from the GGUF one; {REPAIR_COMMAND}")


def _tidy_tokenizer_config(path: Path, context: int) -> None:
    """Make tokenizer_config.json portable and honest about the context length."""
    if not path.is_file():
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    data["model_max_length"] = context  # was 1e30: "unlimited" is false for this model
    # transformers 5 writes its own class name; PreTrainedTokenizerFast loads on 4.x and 5.x.
    data["tokenizer_class"] = "PreTrainedTokenizerFast"
    for transient in ("is_local", "local_files_only"):
        data.pop(transient, None)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
