"""Small local stand-ins for the model files unit tests need: no network, no prepared cache.

The real 93 MB wheel and its conversion stay covered by `make demo` and
`scripts/check-user-install.sh`; these fixtures take the same code paths in well under a
second of I/O (the conversion itself still runs transformers on a 50 KB GGUF).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import sysconfig
import zipfile
from pathlib import Path

from lsp_copilot.models.presets import Preset, SourceWheel, preset

# SmolLM2's added tokens, in its order (ids 0-16): no fill-in-the-middle token among them.
SMOLLM2_SPECIAL = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<reponame>", "<file_sep>",
    "<filename>", "<gh_stars>", "<issue_start>", "<issue_comment>", "<issue_closed>",
    "<jupyter_start>", "<jupyter_text>", "<jupyter_code>", "<jupyter_output>",
    "<jupyter_script>", "<empty_output>",
]  # fmt: skip

TINY_VOCAB = 2 + 256 + 2  # two control tokens, the 256 byte symbols, two merges
TINY_CONTEXT = 1024


def smollm2_like_folder(root: Path) -> Path:
    """A model folder with a tokenizer built like SmolLM2's (byte-level BPE with regex
    pre-tokenization, the same 17 control tokens, no BOS), its merges learnt from a few
    standard-library modules so that real code splits into multi-character tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts = [(stdlib / n).read_text("utf-8") for n in ("heapq.py", "textwrap.py", "bisect.py")]
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=2000, special_tokens=SMOLLM2_SPECIAL, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    folder = root / "SmolLM2-like"
    folder.mkdir()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "model_max_length": 8192,
        "pad_token": "<|im_end|>", "tokenizer_class": "PreTrainedTokenizerFast",
        "unk_token": "<|endoftext|>"}))
    (folder / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "bos_token_id": 1,
        "eos_token_id": 2, "vocab_size": tok.get_vocab_size()}))
    return folder


def _byte_symbols() -> list[str]:
    """GPT-2's printable stand-ins for the 256 bytes, in byte order."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
            *range(ord("®"), ord("ÿ") + 1)]
    extra = iter(range(256, 512))
    return [chr(b if b in keep else next(extra)) for b in range(256)]


def write_tiny_gguf(path: Path) -> Path:
    """A one-layer llama GGUF (f32, hidden size 16) with a GPT-2 style tokenizer whose
    `<|im_end|>` is EOS and `<|endoftext|>` ends text, as in SmolLM2's: about 50 KB."""
    import gguf
    import numpy as np

    tokens = ["<|endoftext|>", "<|im_end|>", *_byte_symbols(), "Ġr", "Ġre"]
    assert len(tokens) == TINY_VOCAB
    dim, ffn, heads = 16, 32, 2
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny")
    w.add_context_length(TINY_CONTEXT)
    w.add_embedding_length(dim)
    w.add_block_count(1)
    w.add_feed_forward_length(ffn)
    w.add_head_count(heads)
    w.add_head_count_kv(heads)
    w.add_rope_dimension_count(dim // heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(len(tokens))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([3, 3] + [1] * (len(tokens) - 2))
    w.add_token_merges(["Ġ r", "Ġr e"])
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    rng = np.random.default_rng(0)
    shapes = {"token_embd.weight": (len(tokens), dim), "output.weight": (len(tokens), dim),
              "blk.0.attn_q.weight": (dim, dim), "blk.0.attn_k.weight": (dim, dim),
              "blk.0.attn_v.weight": (dim, dim), "blk.0.attn_output.weight": (dim, dim),
              "blk.0.ffn_gate.weight": (ffn, dim), "blk.0.ffn_up.weight": (ffn, dim),
              "blk.0.ffn_down.weight": (dim, ffn)}
    for name, shape in shapes.items():
        w.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float32))
    for name in ("output_norm.weight", "blk.0.attn_norm.weight", "blk.0.ffn_norm.weight"):
        w.add_tensor(name, np.ones(dim, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def write_wheel(folder: Path, name: str, version: str, member: str, data: bytes) -> Path:
    """A minimal valid wheel (pip can `download` it from a find-links folder)."""
    dist = f"{name.replace('-', '_')}-{version}"
    files = {
        member: data,
        f"{dist}.dist-info/METADATA":
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}.dist-info/WHEEL":
            b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = [f"{n},sha256={_b64_sha(d)},{len(d)}" for n, d in files.items()]
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    out = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as zf:
        for n, d in files.items():
            zf.writestr(n, d)
    return out


def _b64_sha(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def tiny_preset(wheels_dir: Path) -> Preset:
    """The smollm2-135m preset (same name and folder) pinned to a tiny wheel written into
    ``wheels_dir``: prepare, ensure and resolve take their real paths with it."""
    gguf_file = write_tiny_gguf(wheels_dir / "tiny.gguf")
    data = gguf_file.read_bytes()
    gguf_file.unlink()
    wheel = SourceWheel("lsp-copilot-tiny-model", "1.0", "",
                        "lsp_copilot_tiny_model/Tiny.gguf")
    path = write_wheel(wheels_dir, wheel.name, wheel.version, wheel.member, data)
    wheel = dataclasses.replace(wheel, sha256=hashlib.sha256(path.read_bytes()).hexdigest())
    return dataclasses.replace(
        preset("smollm2-135m"), wheels=(wheel,), gguf_filename="Tiny.gguf",
        gguf_sha256=hashlib.sha256(data).hexdigest(), gguf_bytes=len(data),
        folder_bytes=100_000, context=TINY_CONTEXT)
