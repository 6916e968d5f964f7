"""Prompt templates per model family: the exact prompt the engine gets, as pieces.

A template renders a context (the cursor window's prefix and suffix, the layers' header,
and the layers' blocks of other files) as *pieces*: plain text, and ``Special`` control
tokens. Joined, the pieces are the text prompt (cache key, audit); encoded by
``PromptEncoder`` (``encoder.py``), they are the token ids sent to vLLM. Which family a
model belongs to is ``family.py``'s question.

Each family's format is taken from what its authors published (cited per template),
and ``tests/unit/test_prompts.py`` checks every template against that exact string.
The default model (SmolLM2-135M) has no fill-in-the-middle tokens: its family is
prefix-only. ``starcoder-fim`` (plain StarCoder/SantaCoder-style PSM) is kept for
models with those tokens and for ``bench prompt``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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

    def extend(self, pieces: Sequence[str], typed: str, suffix: str,
               old_suffix: str) -> tuple[str, ...] | None:
        """``pieces`` with ``typed`` after the prefix and ``suffix`` as the code after the
        cursor: what keeps a prompt's start while the user types (the prefix cache). None
        when the start would change anyway (a suffix-first format whose suffix did)."""
        if not self.fim:
            return _keep(*pieces, typed)
        if self.order == "spm":
            if suffix != old_suffix or not pieces or pieces[-1] != self.middle_tok:
                return None
            return _keep(*pieces[:-1], typed, pieces[-1])
        for i in range(len(pieces) - 1, -1, -1):
            if isinstance(pieces[i], Special) and pieces[i] == self.suffix_tok:
                return _keep(*pieces[:i], typed, self.suffix_tok, suffix, self.middle_tok)
        return None

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
