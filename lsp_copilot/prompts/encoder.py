"""The token-id encoder: a template's rendered pieces as the ids vLLM gets.

A control token (``Special``) is always its one id, and user code is encoded without
special-token parsing: a file that contains ``<|file_sep|>`` or ``<fim_prefix>`` cannot
inject a control token, and nothing a template inserts is ever split into pieces.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsp_copilot.prompts.templates import TEMPLATES, Special

log = logging.getLogger(__name__)

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

    def text_ids(self, text: str) -> tuple[int, ...]:
        """Ids of a short text that continues a prompt (no BOS): the start of an answer
        the grammar requires (``pipeline.alternatives``, a branch it leads with)."""
        return self._text(text)[0]

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
