"""`lsp-copilot context FILE:LINE:COL --json`: the audit JSON schema, and what it says
about secrets (redacted, or the file withheld).

The model is a local folder with a small byte-level BPE tokenizer: no prepared model is
needed, and its tokenizer loads in milliseconds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_copilot.cli.context_audit import audit, find_root, render_table
from tests.support.models import smollm2_like_folder

LAYER_KEYS = {"name": str, "source": str, "tokens": int, "truncated": bool, "text": str}
TOP_KEYS = {"language": str, "mode": str, "budget_tokens": int, "prompt_tokens": int,
            "tokenizer": str, "layers": list, "prompt": str, "template": str,
            "prompt_token_ids": list, "budgets": dict, "privacy": dict}


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(smollm2_like_folder(tmp_path_factory.mktemp("model")))


def _workspace(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "lib.py").write_text("def scale(v, k):\n    return v * k\n")
    (tmp_path / "main.py").write_text(
        "from lib import scale\n\n\ndef run(v):\n    x = scale(v, 2)\n    return \n")
    return tmp_path / "main.py"


def _check_schema(report: dict[str, object]) -> None:
    assert set(report) == set(TOP_KEYS)
    for key, kind in TOP_KEYS.items():
        assert isinstance(report[key], kind), key
    layers = report["layers"]
    assert isinstance(layers, list) and layers
    for layer in layers:
        assert set(layer) == set(LAYER_KEYS)
        for key, kind in LAYER_KEYS.items():
            assert isinstance(layer[key], kind), key


def test_audit_schema_and_prompt(tmp_path: Path, model: str) -> None:
    main = _workspace(tmp_path)
    assert find_root(main) == tmp_path
    report, timings = audit(main, 6, 12, None, 256, model, template="prefix-only")
    _check_schema(report)
    assert report["language"] == "python"
    assert report["prompt_tokens"] <= report["budget_tokens"] == 256
    assert "def scale(v, k):" in report["prompt"]
    assert report["prompt"].endswith(report["layers"][-1]["text"])  # P0 last
    assert "P0 cursor window" in render_table(report, timings)
    fim, _ = audit(main, 6, 12, None, 256, model, template="qwen2.5-coder")
    assert fim["template"] == "qwen2.5-coder" and "<|fim_middle|>" in fim["prompt"]


def test_cli_json(tmp_path: Path, model: str) -> None:
    main = _workspace(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "lsp_copilot", "context", f"{main}:6:12", "--json",
         "--budget", "300", "--model", model], capture_output=True, text=True, check=True,
        timeout=60)
    report = json.loads(out.stdout)
    _check_schema(report)
    assert report["budget_tokens"] == 300


def test_cli_json_budget_follows_the_request(tmp_path: Path, model: str) -> None:
    """Without --budget, the budget is the one contextBudgets' defaults give the request."""
    main = _workspace(tmp_path)
    runs = {}
    for extra in ([], ["--device", "cuda", "--explicit"]):
        out = subprocess.run(
            [sys.executable, "-m", "lsp_copilot", "context", f"{main}:6:12", "--json",
             "--device", "cpu", "--model", model, *extra], capture_output=True, text=True,
            check=True, timeout=60)
        runs[" ".join(extra)] = json.loads(out.stdout)
    assert runs[""]["budget_tokens"] == 1536
    assert runs[""]["budgets"] == {"device": "cpu", "singleLine": 1536, "multiLine": 1536,
                                   "explicit": 1536, "used": 1536}
    gpu = runs["--device cuda --explicit"]["budgets"]  # CUDA's maxModelLen has the room
    assert gpu["device"] == "gpu" and gpu["explicit"] == gpu["used"] == 8192


def test_audit_says_what_was_redacted_or_withheld(tmp_path: Path, model: str) -> None:
    main = _workspace(tmp_path)
    main.write_text('API_TOKEN = "ghp_R8x2Lq9Zt4Vn7Bm3Kc6Yw1Pd5Hs0Jf2Ga8Ue"\n\n\n'
                    "def run(v):\n    return \n")
    report, timings = audit(main, 5, 12, None, 256, model, template="prefix-only")
    assert report["privacy"] == {"withheld": None, "redacted": ["main.py:1 github-token"]}
    assert "ghp_" not in report["prompt"] and "<redacted:github-token>" in report["prompt"]
    assert "redacted: 1 secret(s)" in render_table(report, timings)
    (tmp_path / ".lspcopilotignore").write_text("main.py\n")
    report, timings = audit(main, 5, 12, None, 256, model, template="prefix-only")
    assert report["prompt"] == "" and report["layers"] == []
    assert ".lspcopilotignore" in report["privacy"]["withheld"]
    assert "withheld: excluded by" in render_table(report, timings)
