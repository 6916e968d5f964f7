"""Prompt templates per model family: the exact text and token ids the engine gets.

A template renders a context (the cursor window's prefix and suffix, the layers' header,
and the layers' blocks of other files) as *pieces*: plain text, and ``Special`` control
tokens. Joined, the pieces are the text prompt (cache key, audit); encoded by
``PromptEncoder``, they are the token ids sent to vLLM, where a control token is always
its one id and user code is encoded without special-token parsing: a file that contains
``<|file_sep|>`` or ``<fim_prefix>`` cannot inject a control token, and nothing
a template inserts is ever split into pieces.

Each family's format is taken from what its authors published (cited per template),
and ``tests/unit/test_prompts.py`` checks every template against that exact string.
The default model (SmolLM2-135M) has no fill-in-the-middle tokens: its family is
prefix-only. ``starcoder-fim`` (plain StarCoder/SantaCoder-style PSM) is kept for
models with those tokens and for ``bench prompt``.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


class Special(str):
    """A control token in a rendered prompt: its text, and how vocabularies spell it.

    A ``str``, so that joining the pieces gives the text prompt; ``names`` are the
    vocabulary entries tried for its id (SentencePiece models store ``▁<PRE>``).
    """

    names: tuple[str, ...]

    def __new__(cls, text: str, *names: str) -> Special:
        obj = super().__new__(cls, text)
        obj.names = names or (text,)
        return obj


Files = Sequence[tuple[str, str]]
"""(path, body) of the context's blocks, in prompt order; bodies are whole lines."""


@dataclass(frozen=True)
class Template:
    """A family's prompt format.

    ``order``: ``psm`` (prefix, suffix, middle), ``spm`` (suffix first) or ``none``
    (prefix-only). ``repo``: how other files are written when the context has blocks
    from them (``qwen``, ``starcoder2``, ``mellum``); ``none`` keeps the layers as a
    commented header in front of the prefix, as the prefix-only prompt does.
    """

    name: str
    fim: bool
    prefix_tok: str = ""
    suffix_tok: str = ""
    middle_tok: str = ""
    stop: tuple[str, ...] = ()
    order: str = "psm"
    repo: str = "none"
    repo_tok: str = ""
    file_tok: str = ""
    source: str = ""

    def specials(self) -> tuple[Special, ...]:
        toks = (self.prefix_tok, self.suffix_tok, self.middle_tok, self.repo_tok, self.file_tok)
        return tuple(t for t in toks if isinstance(t, Special))

    def pieces(self, prefix: str, suffix: str, header: str = "", files: Files = (),
               path: str = "", repo: str = "") -> tuple[str, ...]:
        """The prompt as text and ``Special`` pieces (join them for the text prompt)."""
        if not self.fim:
            return _keep(header, prefix)
        others = _other_files(files, path)
        if self.repo != "none" and others and path:
            own = "".join(body for p, body in files if p == path)
            return self._repo_pieces(prefix, suffix, others, own, path, repo)
        return self._fim_pieces(header + prefix, suffix)

    def cursor_index(self, pieces: Sequence[str]) -> int:
        """Where the cursor stands in the joined prompt: a typed character goes there.

        A prefix-only prompt ends at the cursor; a fill-in-the-middle prompt has the
        cursor where its prefix ends (before the suffix token, or before the middle token
        when the suffix comes first), so two keystrokes' prompts differ inside, not at
        the end."""
        prompt_len = sum(len(p) for p in pieces)
        if not self.fim:
            return prompt_len
        marker = self.middle_tok if self.order == "spm" else self.suffix_tok
        for i in range(len(pieces) - 1, -1, -1):
            if isinstance(pieces[i], Special) and pieces[i] == marker:
                return sum(len(p) for p in pieces[:i])
        return prompt_len

    def render(self, prefix: str, suffix: str, header: str = "", files: Files = (),
               path: str = "", repo: str = "") -> str:
        return "".join(self.pieces(prefix, suffix, header, files, path, repo))

    def _fim_pieces(self, prefix: str, suffix: str) -> tuple[str, ...]:
        if self.order == "spm":
            return _keep(self.suffix_tok, suffix, self.prefix_tok, prefix, self.middle_tok)
        return _keep(self.prefix_tok, prefix, self.suffix_tok, suffix, self.middle_tok)

    def _repo_pieces(self, prefix: str, suffix: str, others: list[tuple[str, str]], own: str,
                     path: str, repo: str) -> tuple[str, ...]:
        out: list[str] = []
        if self.repo == "qwen":
            if repo:
                out += [self.repo_tok, f"{repo}\n"]
            for p, body in others:
                out += [self.file_tok, f"{p}\n{body}\n"]
            out += [self.file_tok, f"{path}\n"]
            out += self._fim_pieces(own + prefix, suffix)
        elif self.repo == "starcoder2":
            if repo:
                out += [self.repo_tok, repo]
            for p, body in others:
                out += [self.file_tok, f"{p}\n{body}"]
            out += [self.file_tok]
            out += self._fim_pieces(f"{path}\n{own}{prefix}", suffix)
        else:  # mellum
            for p, body in others:
                out += [self.file_tok, f"{p}\n{body}"]
            out += [self.file_tok, f"{path}\n"]
            out += self._fim_pieces(own + prefix, suffix)
        return _keep(*out)


def _keep(*pieces: str) -> tuple[str, ...]:
    """Drop empty text; keep every control token."""
    return tuple(p for p in pieces if p or isinstance(p, Special))


def _other_files(files: Files, path: str) -> list[tuple[str, str]]:
    """Blocks of other files, one entry per file in order of first appearance."""
    merged: dict[str, str] = {}
    for p, body in files:
        if p != path:
            merged[p] = merged.get(p, "") + body
    return list(merged.items())


# StarCoder/SantaCoder-style tokens (bigcode), shared by StarCoder2 and Mellum.
_FIM_PREFIX = Special("<fim_prefix>")
_FIM_SUFFIX = Special("<fim_suffix>")
_FIM_MIDDLE = Special("<fim_middle>")

TEMPLATES: dict[str, Template] = {
    "prefix-only": Template(
        "prefix-only", fim=False, order="none",
        stop=("<|endoftext|>", "<file_sep>"),
        source="models without fill-in-the-middle tokens: the prefix, after the layers",
    ),
    "starcoder-fim": Template(
        "starcoder-fim", fim=True,
        prefix_tok=_FIM_PREFIX, suffix_tok=_FIM_SUFFIX, middle_tok=_FIM_MIDDLE,
        stop=("<|endoftext|>", "<file_sep>", "<fim_prefix>"),
        # huggingface.co/bigcode/tiny_starcoder_py README (FIM example):
        # "<fim_prefix>...<fim_suffix>...<fim_middle>"
        source="bigcode StarCoder/SantaCoder model cards",
    ),
    "starcoder2": Template(
        "starcoder2", fim=True,
        prefix_tok=_FIM_PREFIX, suffix_tok=_FIM_SUFFIX, middle_tok=_FIM_MIDDLE,
        repo="starcoder2", repo_tok=Special("<repo_name>"), file_tok=Special("<file_sep>"),
        # Stops as Continue's starcoder2FimTemplate
        # (core/autocomplete/templating/AutocompleteTemplate.ts).
        stop=("<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<file_sep>", "<|endoftext|>"),
        # StarCoder 2 paper (arXiv 2402.19173), section 5, repository-context FIM:
        # "<repo_name>reponame<file_sep>filepath0\ncode0<file_sep><fim_prefix>filepath1\n
        #  code1_pre<fim_suffix>code1_suf<fim_middle>code1_mid<file_sep> ...<|endoftext|>"
        source="arXiv 2402.19173 section 5",
    ),
    "qwen2.5-coder": Template(
        "qwen2.5-coder", fim=True,
        prefix_tok=Special("<|fim_prefix|>"), suffix_tok=Special("<|fim_suffix|>"),
        middle_tok=Special("<|fim_middle|>"),
        repo="qwen", repo_tok=Special("<|repo_name|>"), file_tok=Special("<|file_sep|>"),
        # The eos_token_ids list of the Qwen2.5-Coder examples (151664, 151662, 151659,
        # 151660, 151661, 151663, 151645, 151643), by name.
        stop=("<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>",
              "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<|im_end|>"),
        # QwenLM/Qwen2.5-Coder examples/Qwen2.5-Coder.md, "Code Insertion" and
        # "Repository Level Code Infilling": "<|repo_name|>library-system\n<|file_sep|>
        # library.py\n{content}\n<|file_sep|>main.py\n<|fim_prefix|>{pre}<|fim_suffix|>
        # {suf}<|fim_middle|>"
        source="QwenLM/Qwen2.5-Coder examples/Qwen2.5-Coder.md",
    ),
    "deepseek-coder": Template(
        "deepseek-coder", fim=True,
        prefix_tok=Special("<｜fim▁begin｜>"), suffix_tok=Special("<｜fim▁hole｜>"),
        middle_tok=Special("<｜fim▁end｜>"),
        # Continue's deepseekFimTemplate stops, without its "//" (it would cut comments).
        stop=("<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>", "<｜end▁of▁sentence｜>"),
        # huggingface.co/deepseek-ai/deepseek-coder-1.3b-base "Code Insertion":
        # "<｜fim▁begin｜>{prefix}<｜fim▁hole｜>{suffix}<｜fim▁end｜>"; its repository-level
        # example heads each file with a "#path" comment, as our layers' header does.
        source="deepseek-ai/deepseek-coder model card",
    ),
    "codellama": Template(
        "codellama", fim=True,
        # The space after <PRE> and before <SUF>/<MID> belongs to the tokens: the
        # vocabulary has "▁<PRE>", "▁<SUF>", "▁<MID>", "▁<EOT>" (ids 32007-32010).
        prefix_tok=Special("<PRE> ", "▁<PRE>", "<PRE>"),
        suffix_tok=Special(" <SUF>", "▁<SUF>", "<SUF>"),
        middle_tok=Special(" <MID>", "▁<MID>", "<MID>"),
        stop=("<PRE>", "<SUF>", "<MID>", "<EOT>"),
        # meta-llama/codellama llama/generation.py infilling_prompt_tokens:
        # '# format as "<PRE> {pre} <SUF>{suf} <MID>"'; Continue's codeLlamaFimTemplate.
        source="meta-llama/codellama llama/generation.py",
    ),
    "codestral": Template(
        "codestral", fim=True, order="spm",
        prefix_tok=Special("[PREFIX]"), suffix_tok=Special("[SUFFIX]"),
        stop=("[PREFIX]", "[SUFFIX]", "[MIDDLE]"),
        # mistralai/cookbook concept-deep-dive/tokenization (tokenizer V3, Codestral-22B):
        # FIM "<s>[SUFFIX]suffix[PREFIX] prefix" (the space is SentencePiece's "▁";
        # <s> is the tokenizer's BOS); Continue's codestralFimTemplate
        # "[SUFFIX]{{{suffix}}}[PREFIX]{{{prefix}}}".
        source="mistralai/cookbook tokenization templates; mistral-common encode_fim",
    ),
    "mellum": Template(
        "mellum", fim=True, order="spm",
        prefix_tok=_FIM_PREFIX, suffix_tok=_FIM_SUFFIX, middle_tok=_FIM_MIDDLE,
        repo="mellum", file_tok=Special("<filename>"),
        stop=("<|endoftext|>", "<fim_prefix>", "<fim_suffix>", "<fim_middle>", "<fim_pad>",
              "<filename>"),
        # huggingface.co/JetBrains/Mellum-4b-base, "Fill in the middle with additional
        # files as context generation": "<filename>utils.py\n{content}<filename>
        # example.py\n<fim_suffix>{suffix}<fim_prefix>{prefix}<fim_middle>"
        source="JetBrains/Mellum-4b-base model card",
    ),
}

DEFAULT_TEMPLATE = "prefix-only"
TEMPLATE_NAMES = tuple(TEMPLATES)


def template_for(name: str | None) -> Template:
    """The template called ``name`` (None or "auto": prefix-only)."""
    if not name or name == "auto":
        return TEMPLATES[DEFAULT_TEMPLATE]
    try:
        return TEMPLATES[name]
    except KeyError:
        raise ValueError(f"unknown template {name!r}; one of: auto, "
                         f"{', '.join(TEMPLATE_NAMES)}") from None


# -- detection ----------------------------------------------------------------------


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


# -- token ids ----------------------------------------------------------------------

_MARKUP = re.compile(r"^(<.+>|\[.+\])$")
"""Non-special added tokens that still act as control tokens (Qwen's FIM tokens are
``special: false``; whitespace runs or words some tokenizers add are not)."""


@dataclass(frozen=True)
class Encoded:
    ids: tuple[int, ...]
    escaped: int  # control-token strings in the text, encoded as plain text
    missing: tuple[str, ...]  # template tokens the vocabulary lacks (sent as text)


_LINE_ENDS = re.compile(r"(?<=\S)(?=\n)")
"""Newlines that follow a visible character: where the encoder may cut a prompt's text."""


class PromptEncoder:
    """Token ids for rendered pieces, with the model's own tokenizer (``tokenizers``)."""

    def __init__(self, tokenizer: Any) -> None:
        self._tok = tokenizer
        self._vocab: dict[str, int] = tokenizer.get_vocab(with_added_tokens=True)
        control = {i for i, t in tokenizer.get_added_tokens_decoder().items()
                   if t.special or _MARKUP.match(t.content)}
        for template in TEMPLATES.values():
            for special in template.specials():
                tid = self.token_id(special)
                if tid is not None:
                    control.add(tid)
        self.control_ids = frozenset(control)
        self.bos = self._leading_ids()
        self._text = functools.lru_cache(maxsize=8192)(self._text_uncached)
        self._warned: set[str] = set()
        self._by_line = self._splits_at_line_ends()

    @classmethod
    def for_model(cls, model: str) -> PromptEncoder | None:
        """From the model folder's tokenizer.json; None without one (text prompts then)."""
        path = Path(model).expanduser() / "tokenizer.json"
        if not path.is_file():
            return None
        try:
            from tokenizers import Tokenizer

            return cls(Tokenizer.from_file(str(path)))
        except Exception:
            log.exception("cannot load %s; prompts go to the engine as text", path)
            return None

    @classmethod
    def for_hf_tokenizer(cls, tokenizer: Any) -> PromptEncoder | None:
        """From a transformers fast tokenizer (vLLM's, for a model given by hub id)."""
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None or not hasattr(backend, "get_added_tokens_decoder"):
            return None
        try:
            return cls(backend)
        except Exception:
            log.exception("cannot use the engine's tokenizer; prompts go as text")
            return None

    def token_id(self, special: Special) -> int | None:
        for name in special.names:
            tid = self._vocab.get(name)
            if tid is not None:
                return tid
        return None

    def stop_ids(self, stops: Iterable[str]) -> tuple[int, ...]:
        """Stop strings that are one control token, as ids: vLLM leaves special tokens
        out of the text, where a stop string could never match them."""
        out: list[int] = []
        for s in stops:
            tid = self._vocab.get(s, self._vocab.get("▁" + s))
            if tid is not None and tid in self.control_ids and tid not in out:
                out.append(tid)
        return tuple(out)

    def _leading_ids(self) -> tuple[int, ...]:
        """What the tokenizer puts in front of a text (BOS), as vLLM's text path would."""
        plain = self._tok.encode("a", add_special_tokens=False).ids
        full = self._tok.encode("a", add_special_tokens=True).ids
        for k in range(len(full) - len(plain) + 1):
            if full[k:k + len(plain)] == plain:
                return tuple(full[:k])
        return ()

    def _splits_at_line_ends(self) -> bool:
        """Whether this tokenizer never merges across a newline that follows a visible
        character (byte-level BPE with a GPT-2-like pre-tokenizer does not): then a prompt
        is encoded line by line, and the lines it shares with the last prompt are cached."""
        samples = ("def f(x):\n    return x  # é 字\n\nclass A:\n\tpass\r\n}\n",
                   "a = [1,\n     2]\n\n\n  b\n\n", "x\n\ty\n  \n z(\n)\n")
        for text in samples:
            whole = self._tok.encode(text, add_special_tokens=False).ids
            parts = [i for part in _LINE_ENDS.split(text)
                     for i in self._tok.encode(part, add_special_tokens=False).ids]
            if whole != parts:
                return False
        return True

    def _text_ids(self, text: str) -> tuple[tuple[int, ...], int]:
        if not self._by_line or len(text) < 256:
            return self._text(text)
        ids: list[int] = []
        escaped = 0
        for part in _LINE_ENDS.split(text):
            part_ids, n = self._text(part)
            ids.extend(part_ids)
            escaped += n
        return tuple(ids), escaped

    def _text_uncached(self, text: str) -> tuple[tuple[int, ...], int]:
        """Ids of user text with no control token in them: where the tokenizer matched
        one (an added token spelled out in the code), split the text inside it."""
        ids: list[int] = []
        escaped = 0
        rest = text
        while rest:
            enc = self._tok.encode(rest, add_special_tokens=False)
            cut = 0
            for k, tid in enumerate(enc.ids):
                if tid in self.control_ids:
                    start, end = enc.offsets[k]
                    if end - start >= 2:
                        cut = start + 1
                        break
            if not cut:
                ids.extend(enc.ids)
                break
            head, n = self._text(rest[:cut])
            ids.extend(head)
            escaped += n + 1
            rest = rest[cut:]
        return tuple(ids), escaped

    def encode(self, pieces: Sequence[str]) -> Encoded:
        """BOS, then each control token as its id and the text between them encoded as
        text (adjacent text pieces together, so text tokenizes as vLLM would)."""
        ids = list(self.bos)
        escaped = 0
        missing: list[str] = []
        text = ""
        for piece in pieces:
            tid = self.token_id(piece) if isinstance(piece, Special) else None
            if tid is None:
                if isinstance(piece, Special):
                    missing.append(str(piece))
                text += str(piece)
                continue
            if text:
                part, n = self._text_ids(text)
                ids.extend(part)
                escaped += n
                text = ""
            ids.append(tid)
        if text:
            part, n = self._text_ids(text)
            ids.extend(part)
            escaped += n
        for token in missing:
            if token not in self._warned:
                self._warned.add(token)
                log.warning("the model's vocabulary has no %r: it goes to the model as text "
                            "(check the `template` setting)", token)
        return Encoded(tuple(ids), escaped, tuple(missing))


__all__ = ["DEFAULT_TEMPLATE", "TEMPLATES", "TEMPLATE_NAMES", "Encoded", "PromptEncoder",
           "Special", "Template", "detect_family", "family_from", "template_for"]
