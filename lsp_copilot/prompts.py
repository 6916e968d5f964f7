"""Prompt templates: how a context becomes the exact text the engine gets.

The default model (SmolLM2-135M) has no fill-in-the-middle tokens, so its template is
prefix-only; ``starcoder-fim`` is kept for code models that have them and for measuring.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Template:
    name: str
    fim: bool
    prefix_tok: str = ""
    suffix_tok: str = ""
    middle_tok: str = ""
    stop: tuple[str, ...] = ()

    def render(self, prefix: str, suffix: str, header: str = "") -> str:
        if not self.fim:
            return header + prefix
        return f"{self.prefix_tok}{header}{prefix}{self.suffix_tok}{suffix}{self.middle_tok}"


TEMPLATES: dict[str, Template] = {
    "prefix-only": Template("prefix-only", fim=False, stop=("<|endoftext|>", "<file_sep>")),
    "starcoder-fim": Template(
        "starcoder-fim",
        fim=True,
        prefix_tok="<fim_prefix>",
        suffix_tok="<fim_suffix>",
        middle_tok="<fim_middle>",
        stop=("<|endoftext|>", "<file_sep>", "<fim_prefix>"),
    ),
}

DEFAULT_TEMPLATE = "prefix-only"


def template_for(name: str | None) -> Template:
    return TEMPLATES.get(name or DEFAULT_TEMPLATE, TEMPLATES[DEFAULT_TEMPLATE])
