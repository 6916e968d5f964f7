"""The server's tokenizer as seen from here: its tokenizer.json when this machine can read
it (token counts exact, prompts sent as token ids), else cl100k scaled by one
``/tokenize`` of a code sample; and the prompt family the model's names say."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import httpx

from lsp_copilot.engine.remote.config import RemoteConfig
from lsp_copilot.engine.remote.errors import RemoteError
from lsp_copilot.prompts.family import detect_family, family_from_name
from lsp_copilot.prompts.templates import DEFAULT_TEMPLATE
from lsp_copilot.tokens import TokenCounter

log = logging.getLogger(__name__)

CALIBRATION_SAMPLE = '''import os
from dataclasses import dataclass


@dataclass
class Point:
    """A point in the plane."""

    x: float = 0.0
    y: float = 0.0

    def distance(self, other: "Point") -> float:
        return ((self.x - other.x) ** 2 + (self.y - other.y) ** 2) ** 0.5


def read_points(path: str) -> list[Point]:
    with open(path, encoding="utf-8") as handle:
        return [Point(*map(float, line.split(","))) for line in handle if line.strip()]


if __name__ == "__main__":
    print(sum(p.x for p in read_points(os.environ.get("POINTS", "points.csv"))))
'''
"""Code whose token count, on the server and with cl100k, calibrates the fallback counter."""


def tokenizer_file(config: RemoteConfig, model: str, root: str) -> Path | None:
    """The server's own tokenizer.json, when this machine can read it.

    In order: the ``remoteTokenizer`` folder or file; the folder the server loaded the
    model from (``root`` in /v1/models), when this machine sees it (same host or a
    shared file system); the Hugging Face cache. None: count with calibrated cl100k
    and send text.
    """
    if config.tokenizer:
        path = Path(config.tokenizer).expanduser()
        file = path / "tokenizer.json" if path.is_dir() else path
        if not file.is_file():
            raise RemoteError(f"remoteTokenizer {config.tokenizer!r}: no tokenizer.json")
        return file
    if root and (Path(root) / "tokenizer.json").is_file():
        return Path(root) / "tokenizer.json"
    for repo in (root, model):
        if not repo:
            continue
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(repo, "tokenizer.json")
        except Exception:
            cached = None
        if isinstance(cached, str):
            return Path(cached)
    return None


def remote_family(tokenizer: Path | None, root: str, model: str) -> str:
    """The prompt family: from the tokenizer's folder when we have it, else from the names
    the server gives (the folder or hub id it loaded, then the served name)."""
    if tokenizer is not None:
        family = detect_family(str(tokenizer.parent))
        if family != DEFAULT_TEMPLATE:
            return family
    for name in (root, model):
        if name and (family := family_from_name(name)) != DEFAULT_TEMPLATE:
            return family
    return DEFAULT_TEMPLATE


class ScaledCounter:
    """cl100k counts scaled to the server's tokenizer, measured once at load.

    The budget counts tokens synchronously, many times per keystroke, on the event loop:
    a network round trip per count (vLLM's ``/tokenize``) would stall the server, so one
    ``/tokenize`` of a code sample calibrates a local counter instead. Rounding up keeps
    the prompt within the server's window when the ratio is a little off.
    """

    def __init__(self, base: TokenCounter, ratio: float, calibrated: bool) -> None:
        self._base = base
        self.ratio = ratio
        how = f"x{ratio:.2f} via /tokenize" if calibrated else "uncalibrated"
        self.name = f"{base.name} ({how})"

    def count(self, text: str) -> int:
        return math.ceil(self._base.count(text) * self.ratio)


def calibrate(client: httpx.Client, model: str, base: TokenCounter) -> ScaledCounter:
    """Ratio of the server's token count to ``base``'s on a code sample (one /tokenize)."""
    try:
        response = client.post("/tokenize", json={"model": model, "prompt": CALIBRATION_SAMPLE,
                                                  "add_special_tokens": False})
        remote = int(response.json()["count"]) if response.status_code == 200 else 0
    except Exception:
        remote = 0
    local = base.count(CALIBRATION_SAMPLE)
    if remote <= 0 or local <= 0:
        log.warning("the server has no /tokenize; counting prompt tokens with %s unscaled",
                    base.name)
        return ScaledCounter(base, 1.0, calibrated=False)
    return ScaledCounter(base, remote / local, calibrated=True)
