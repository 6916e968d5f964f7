"""The adversarial trial's planted workspace, held against the rules it tests: every
secret format it plants is redacted where it stands, every credential file it plants is
withheld by name, and the hostile remote's answers reach the editor clean. The trial
itself (`bench robustness --trial adversarial`) checks the same through the real server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lsp_copilot.privacy import Privacy
from lsp_copilot.privacy.redact import Redactor
from lsp_copilot_bench.robustness import hostile_workspace as ws
from lsp_copilot_bench.robustness.hostile_remote import HostileRemote


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor()


@pytest.mark.parametrize("fmt", sorted(ws.SECRETS))
def test_every_planted_format_is_redacted_in_its_file(redactor: Redactor, fmt: str) -> None:
    name, _, value = ws.SECRETS[fmt]
    text = ws.secret_file(name)
    assert value in text
    redacted = redactor.text(text, name).text
    assert value not in redacted, f"{fmt} survives in {name}: {redacted}"
    # Only values go: the code around them stays for the model to read.
    assert len(redacted.splitlines()) == len(text.splitlines())


@pytest.mark.parametrize("name", sorted(ws.WITHHELD))
def test_every_planted_credential_file_is_withheld(tmp_path: Path, name: str) -> None:
    path = tmp_path / "repo" / name
    reason = Privacy().reason(path.as_uri(), ws.WITHHELD[name].encode())
    assert reason is not None, f"{name} would reach the model"


def test_the_workspace_links_and_ignores_as_the_trial_needs(tmp_path: Path) -> None:
    paths = ws.build(tmp_path)
    work = paths["work"]
    assert paths["link"].resolve() == work.resolve()
    assert (work / "vendor_link.py").resolve().parent == paths["outside"].resolve()
    assert all((work / f"{n}.py").read_text().startswith("raise SystemExit")
               for n in ws.STDLIB_NAMES)
    line, col = ws.end_of(work / "main.py")
    assert (work / "main.py").read_text().split("\n")[line][:col] == "    return "


def test_the_hostile_remote_records_prompts_and_answers_each_mode() -> None:
    async def run() -> tuple[list[str], bytes]:
        remote = await HostileRemote(mode="garbage").start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", remote.port)
            body = b'{"prompt": "def f():", "stream": true}'
            writer.write(b"POST /v1/completions HTTP/1.1\r\ncontent-length: %d\r\n\r\n"
                         % len(body) + body)
            answer = await reader.read()
            writer.close()
            return remote.prompts, answer
        finally:
            await remote.stop()

    prompts, answer = asyncio.run(run())
    assert prompts == ["def f():"]
    assert answer.startswith(b"HTTP/1.1 200") and b"{not json" in answer
