"""Where logs go: the log file, request ids on each line, warnings to the editor, and a
one-shot command whose terminal shows its result alone."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from lsp_copilot import logs
from lsp_copilot.logs import EditorLog, Logs, default_log_file, request_scope
from lsp_copilot.settings.core import parse_settings


def _lines(path: Path) -> list[str]:
    for handler in logging.getLogger().handlers:
        handler.flush()
    return path.read_text().splitlines()


def test_lines_logged_in_a_request_and_its_tasks_carry_its_id(tmp_path: Path) -> None:
    logs = Logs("info", None)
    path = logs.use_file(tmp_path / "a.log")
    assert path == tmp_path / "a.log"
    log = logging.getLogger("lsp_copilot.test")

    async def request() -> None:
        log.info("in the handler")

        async def engine_call() -> None:
            log.info("in a task the handler started")

        await asyncio.ensure_future(engine_call())

    async def main() -> None:
        with request_scope(42):
            task = asyncio.ensure_future(request())  # as pygls starts a handler
        log.info("outside any request")
        await task

    try:
        asyncio.run(main())
        lines = _lines(tmp_path / "a.log")
    finally:
        logs.close()
    tagged = {ln.split(": ", 1)[1]: "[req 42]" in ln for ln in lines}
    assert tagged == {"in the handler": True, "in a task the handler started": True,
                      "outside any request": False}


def test_a_log_file_that_cannot_be_opened_keeps_the_old_one(tmp_path: Path) -> None:
    logs = Logs("info", None)
    try:
        assert logs.use_file(tmp_path / "ok.log") is not None
        (tmp_path / "file").write_text("")
        assert logs.use_file(tmp_path / "file" / "x.log") is None  # a file is no folder
        assert logs.path == tmp_path / "ok.log"
        logging.getLogger("lsp_copilot.test").warning("still here")
        assert any("still here" in ln for ln in _lines(tmp_path / "ok.log"))
    finally:
        logs.close()


def test_default_log_file_follows_the_environment(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("LSP_COPILOT_LOG_FILE", raising=False)
    monkeypatch.setenv("LSP_COPILOT_CACHE_DIR", str(tmp_path))
    assert default_log_file() == tmp_path / "logs" / "lsp-copilot.log"
    monkeypatch.setenv("LSP_COPILOT_LOG_FILE", str(tmp_path / "mine.log"))
    assert default_log_file() == tmp_path / "mine.log"


def test_warnings_reach_the_editor_from_any_thread() -> None:
    sent: list[tuple[int, str]] = []
    log = logging.getLogger("lsp_copilot.test.editor")

    async def main() -> None:
        handler = EditorLog(lambda level, message: sent.append((level, message)),
                            asyncio.get_running_loop())
        log.addHandler(handler)
        logging.getLogger("pygls.protocol").addHandler(handler)
        try:
            log.info("not sent: only warnings and errors are")
            logging.getLogger("pygls.protocol").warning("not sent: a library's warning")
            with request_scope(5):
                log.warning("from the loop")
            done = asyncio.Event()
            loop = asyncio.get_running_loop()

            def loader() -> None:  # the engine loads in a worker thread
                log.error("from a thread")
                loop.call_soon_threadsafe(done.set)

            threading.Thread(target=loader).start()
            await done.wait()
        finally:
            log.removeHandler(handler)
            logging.getLogger("pygls.protocol").removeHandler(handler)

    asyncio.run(main())
    assert sent == [(logging.WARNING, "lsp-copilot [req 5]: from the loop"),
                    (logging.ERROR, "lsp-copilot: from a thread")]


def test_log_settings_are_checked() -> None:
    settings, problems = parse_settings({"logFile": "/tmp/x.log", "logLevel": "debug"})
    assert (settings.log_file, settings.log_level, problems) == ("/tmp/x.log", "debug", [])
    settings, problems = parse_settings({"logLevel": "loud"})
    assert settings.log_level == "" and problems


CHILD_NOISE = """
import subprocess, sys
from pathlib import Path
from lsp_copilot.logs import Logs, QuietOutput
logs = Logs("info", None)
quiet = QuietOutput(logs.use_file(Path(sys.argv[1])))
# A child that inherits our descriptors, as vLLM's EngineCore does, and prints to both.
subprocess.run([sys.executable, "-c",
                "import sys; print('child stdout'); print('child stderr', file=sys.stderr)"])
print("library noise", file=sys.stderr)
print("the result")
print("an error for the user", file=quiet.stderr)
quiet.close()
"""


def test_quiet_output_keeps_the_terminal_for_the_result(tmp_path: Path) -> None:
    log_file = tmp_path / "cli.log"
    out = subprocess.run([sys.executable, "-c", CHILD_NOISE, str(log_file)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout == "the result\n"
    assert out.stderr == "an error for the user\n"
    logged = log_file.read_text()
    for noise in ("child stdout", "child stderr", "library noise"):
        assert noise in logged


def test_the_servers_log_follows_the_log_settings(tmp_path: Path) -> None:
    from lsp_copilot.server.app import create_server

    logs = Logs("info", None)
    logs.use_file(tmp_path / "first.log")
    server = create_server(logs=logs)
    try:
        settings, _ = parse_settings({"logFile": str(tmp_path / "chosen.log"),
                                      "logLevel": "warning"})
        server.hub.update(settings)  # the server follows its records group
        log = logging.getLogger("lsp_copilot.test.settings")
        log.info("below the level")
        log.warning("written")
        assert logs.path == tmp_path / "chosen.log"
        lines = _lines(tmp_path / "chosen.log")
        assert any("written" in ln for ln in lines)
        assert not any("below the level" in ln for ln in lines)
    finally:
        logs.close()
        logging.getLogger().setLevel(logging.WARNING)


def test_the_log_and_its_rotated_copies_are_the_users_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Also past a rotation (the standard handler reopens with the umask: 0644)."""
    monkeypatch.setattr(logs, "MAX_BYTES", 2000)
    monkeypatch.setenv("LSP_COPILOT_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "cache" / "logs").mkdir(parents=True, mode=0o755)  # made open by an old version
    path = tmp_path / "cache" / "logs" / "lsp-copilot.log"
    old = os.umask(0o022)
    try:
        handler = logs.open_log_file(path)
        record = logging.LogRecord("t", logging.INFO, __file__, 1, "x" * 500, None, None)
        for _ in range(30):  # three rotations and more
            handler.handle(record)
        handler.close()
    finally:
        os.umask(old)
    files = sorted(path.parent.iterdir())
    assert len(files) == 1 + logs.BACKUPS, files
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in files}
    assert set(modes.values()) == {"0o600"}, modes
    assert path.parent.stat().st_mode & 0o777 == 0o700


async def test_a_dropped_answer_is_logged_without_its_text(caplog: pytest.LogCaptureFixture
                                                            ) -> None:
    """At debug level, with logSourceText off (the default), the log says why nothing
    showed but never what the model wrote: that is the user's code."""
    from tests.support.fakes import FakeEngine
    from tests.support.pipeline import completer_for, snap

    source = "def add(a, b):\n    return "
    completer = await completer_for(FakeEngine(reply=" self.MODEL_TEXT_91c4.("))
    with caplog.at_level(logging.DEBUG):
        outcome = await completer.complete(snap(source), len(source))
    assert outcome.text == ""
    assert "left nothing" in caplog.text
    assert "MODEL_TEXT_91c4" not in caplog.text


async def test_with_log_source_text_a_dropped_answer_is_logged_with_its_text(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """The user asked for source text in the log (to see why nothing showed): the
    answer the checks dropped is there, with the cursor's line."""
    from tests.support.fakes import FakeEngine
    from tests.support.pipeline import completer_for, snap

    monkeypatch.setenv("LSP_COPILOT_LOG_SOURCE_TEXT", "1")
    source = "def add(a, b):\n    return "
    completer = await completer_for(FakeEngine(reply=" self.MODEL_TEXT_91c4.("))
    with caplog.at_level(logging.DEBUG):
        outcome = await completer.complete(snap(source), len(source))
    assert outcome.text == ""
    assert "MODEL_TEXT_91c4" in caplog.text and "'    return '" in caplog.text
