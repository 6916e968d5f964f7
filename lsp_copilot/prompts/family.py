"""Family detection: which template (``templates.py``) a model's prompts take.

The model folder's tokenizer decides which formats are possible at all, its config.json
tells apart families that share tokens; a hub id or a folder without tokenizer files
goes by its name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lsp_copilot.prompts.templates import DEFAULT_TEMPLATE, TEMPLATES


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


_MARKERS = frozenset(name for t in TEMPLATES.values() for s in t.specials() for name in s.names)


def tokenizer_tokens(folder: Path) -> set[str]:
    """Added and special tokens of the model's tokenizer (tokenizer.json,
    tokenizer_config.json, special_tokens_map.json), plus the family markers found in
    its vocabulary (CodeLlama keeps ``▁<PRE>`` there)."""
    tokens: set[str] = set()
    tok = _read_json(folder / "tokenizer.json")
    for added in tok.get("added_tokens") or []:
        if isinstance(added, dict) and isinstance(added.get("content"), str):
            tokens.add(added["content"])
    vocab = (tok.get("model") or {}).get("vocab")
    if isinstance(vocab, dict):
        tokens.update(m for m in _MARKERS if m in vocab)
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        cfg = _read_json(folder / name)
        decoder = cfg.get("added_tokens_decoder")
        if isinstance(decoder, dict):
            tokens.update(v["content"] for v in decoder.values()
                          if isinstance(v, dict) and isinstance(v.get("content"), str))
        for extra in cfg.get("additional_special_tokens") or []:
            content = extra.get("content") if isinstance(extra, dict) else extra
            if isinstance(content, str):
                tokens.add(content)
    return tokens


def family_from_name(name: str) -> str:
    """For a hub id or a folder without tokenizer files: the family its name says."""
    n = name.lower()
    if "qwen" in n and "coder" in n:
        return "qwen2.5-coder"
    if "starcoder2" in n:
        return "starcoder2"
    if "starcoder" in n or "santacoder" in n:
        return "starcoder-fim"
    if "deepseek" in n and "coder" in n:
        return "deepseek-coder"
    if "codellama" in n or "code-llama" in n:
        return "codellama"
    if "codestral" in n:
        return "codestral"
    if "mellum" in n:
        return "mellum"
    return DEFAULT_TEMPLATE


def family_from(config: dict[str, Any], tokens: set[str]) -> str:
    """The family that a model's config.json and tokenizer tokens say.

    The tokenizer decides which format is possible at all (a template whose control
    tokens the vocabulary lacks would be split into ordinary text); the config tells
    apart families that share tokens (StarCoder-style tokens: StarCoder2, Mellum).
    """
    model_type = str(config.get("model_type") or "").lower()
    archs = " ".join(str(a) for a in config.get("architectures") or []).lower()
    name = str(config.get("_name_or_path") or "").lower()

    def has(*names: str) -> bool:
        return all(n in tokens for n in names)

    if has("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|file_sep|>"):
        return "qwen2.5-coder"
    if has("<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"):
        return "deepseek-coder"
    if has("[SUFFIX]", "[PREFIX]"):
        # Every Mistral v3 tokenizer has them; only Codestral was trained to use them.
        return "codestral" if not name or "codestral" in name else DEFAULT_TEMPLATE
    if (has("▁<PRE>", "▁<SUF>", "▁<MID>") or has("<PRE>", "<SUF>", "<MID>")):
        return "codellama"
    if has("<fim_prefix>", "<fim_suffix>", "<fim_middle>"):
        if model_type == "starcoder2" or "starcoder2" in archs:
            return "starcoder2"
        if "mellum" in name or model_type == "llama":
            return "mellum"  # Llama architecture with StarCoder-style tokens
        return "starcoder2" if has("<file_sep>") else "starcoder-fim"
    return DEFAULT_TEMPLATE


def detect_family(model: str) -> str:
    """The template family of a model folder (or, for a hub id, of its name)."""
    folder = Path(model).expanduser()
    if not folder.is_dir():
        return family_from_name(model)
    config = _read_json(folder / "config.json")
    tokens = tokenizer_tokens(folder)
    if not tokens:
        return family_from_name(str(config.get("_name_or_path") or model))
    return family_from(config, tokens)
