"""Redaction on lines made to be slow, secret formats beyond detect-secrets' plugins, and
invisible characters in suggestions. (The timings themselves are a benchmark figure:
`lsp-copilot bench robustness --trial adversarial`; here a line either finishes or not.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from lsp_copilot.postprocess.checks import finalize
from lsp_copilot.postprocess.cleanup import drop_invisible
from lsp_copilot.postprocess.cursor_text import Cursor
from lsp_copilot.privacy import redact
from lsp_copilot.privacy.redact import Redactor

SLOW_BEFORE = "password" + " " * 10_000 + '= "hunter2hunter2"'
"""Cubic in detect-secrets' IBM Cloud IAM pattern: hours of one core on the old code."""


def test_a_keyword_and_ten_thousand_spaces_is_redacted_at_all() -> None:
    """In a child process: the old regex held the GIL for minutes (a thread's join could
    not even time out), so only a process can be given up on."""
    code = ("import sys; from lsp_copilot.privacy.redact import Redactor; "
            "sys.stdout.write(Redactor().text(sys.stdin.read(), 'x.py').text)")
    try:
        done = subprocess.run([sys.executable, "-c", code], input=SLOW_BEFORE, text=True,
                              capture_output=True, timeout=60, check=True)
    except subprocess.TimeoutExpired:
        pytest.fail("redaction of one line did not finish in 60 s")
    assert "<redacted:password>" in done.stdout and "hunter2hunter2" not in done.stdout


def test_the_scanned_line_has_short_blank_runs_and_spans_map_back() -> None:
    line = 'api_key' + " " * 30 + '=    "' + "Qx8Lm2Vr7Nt4Pz6Wq1Xr" + '"' + "\t" * 50 + "# ok"
    short, back = redact._shorten_blanks(line)
    assert redact.BLANK_RUN.search(short) is None
    value = "Qx8Lm2Vr7Nt4Pz6Wq1Xr"
    start = short.index(value)
    assert line[back(start):back(start + len(value))] == value
    redacted = Redactor().text(line, "x.py").text
    assert value not in redacted and redacted.endswith("\t" * 50 + "# ok")


def test_a_line_too_long_to_scan_is_withheld_whole() -> None:
    line = "{" + ",".join(f'"k{i}": "v{i}"' for i in range(2000)) + "}"
    assert len(line) > redact.MAX_SCANNED_CHARS
    out = Redactor().text("x = 1\n" + line + "\ny = 2", "x.json")
    assert out.text == "x = 1\n<redacted:long-line>\ny = 2"
    # A suggestion on such a line is not taken for a secret for that alone.
    assert Redactor().holds_secret("x", "x.py", before=line) is None


@pytest.mark.parametrize(("line", "value"), [
    ('url = "https://h.example/login?user=bob&password=Zx9vLq2RtK7mWp&x=1"', "Zx9vLq2RtK7mWp"),
    ('CONN = "Server=db;Database=shop;User Id=sa;Password=Wq4nT8rYc2VbLp;"', "Wq4nT8rYc2VbLp"),
    ('String u = "jdbc:mysql://db/x;user=sa;pwd=Hx7pQ2vLm9Rt";', "Hx7pQ2vLm9Rt"),
    ('CACHE = "redis://:Rk5vN9xQ2mPzL7ad@cache:6379/0"', "Rk5vN9xQ2mPzL7ad"),
    ('dsn := "shop:Mv3kX8pL2qRnT6bf@tcp(db:3306)/shop"', "Mv3kX8pL2qRnT6bf"),
    ('h = {"Authorization": "Bearer tk_Lq8Zr3Vx9Nw2Pm7Kc4"}', "tk_Lq8Zr3Vx9Nw2Pm7Kc4"),
    ('curl -H "Authorization: Basic ZGVwbG95OnMzY3JldA==" https://x', "ZGVwbG95OnMzY3JldA=="),
    ("curl -u deploy:Jn5Rb8Vx2Kq7Tm3W https://ci.example.com", "Jn5Rb8Vx2Kq7Tm3W"),
    ("ENV AWS_SECRET_ACCESS_KEY=Tq3Zb8Xn1Vr6Lp9Km2Wc5Hj7Fd4Gs0Ya8Ue3Rt1",
     "Tq3Zb8Xn1Vr6Lp9Km2Wc5Hj7Fd4Gs0Ya8Ue3Rt1"),
    ("  GITHUB_TOKEN: Gh7kP2vX9qLm4Rt8Zc1N", "Gh7kP2vX9qLm4Rt8Zc1N"),
])
def test_formats_detect_secrets_misses_are_redacted(line: str, value: str) -> None:
    out = Redactor().text(line, "x.py").text
    assert value not in out and "<redacted:" in out


@pytest.mark.parametrize("line", [
    'password = os.environ["DB_PASSWORD"]',
    'headers = {"Authorization": f"Bearer {token}"}',
    "curl -u $USER:$PASS https://x",
    'url = f"{base}?token={token}"',
    "MAX_TOKENS = 4096",
    "SECRET_KEY = settings.SECRET_KEY",
    "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=",
    "The bearer of this letter",
])
def test_references_and_public_data_stay(line: str) -> None:
    assert Redactor().text(line, "x.py").text == line


def test_bidi_and_zero_width_characters_never_reach_the_editor() -> None:
    raw = "radius \u202e* radius\u2066\u200b # \ufeffok\u2069\u202c"
    assert drop_invisible(raw) == "radius * radius # ok"
    out = finalize(raw, "single-line", Cursor("    return ", ""))
    assert out and not any(c in out for c in "\u202e\u2066\u200b\ufeff\u2069\u202c")
