"""Feedback from the editor: shown, accepted, rejected. Counted here; nothing leaves."""

from __future__ import annotations

from typing import Any

from lsp_copilot.acceptance.tracker import Suggestion
from lsp_copilot.pipeline.prefetch import prefetch_after
from lsp_copilot.server.protocol import ACCEPTED_CHARS
from lsp_copilot.server.state import CopilotServer


def _field(params: Any, name: str) -> Any:
    if isinstance(params, dict):
        return params.get(name)
    return getattr(params, name, None)


def _suggestion(ls: CopilotServer, params: Any) -> Suggestion | None:
    """The suggestion feedback is about: by ``id``, else (older clients) by what it says."""
    position = _field(params, "position")
    return ls.acceptance.find(_field(params, "id"), _field(params, "uri"),
                              _field(position, "line"), _field(position, "character"),
                              _field(params, "text"))


def did_show(ls: CopilotServer, params: Any) -> None:
    ls.telemetry.count("shown")
    if (s := _suggestion(ls, params)) is not None:
        ls.acceptance.shown(s)


def did_reject(ls: CopilotServer, params: Any) -> None:
    ls.telemetry.count("rejected")
    if (s := _suggestion(ls, params)) is not None:
        ls.acceptance.rejected(s)


def _accepted_chars(ls: CopilotServer, text: Any, units: Any) -> int | None:
    """``acceptedChars`` (in the position encoding's units) as characters of ``text``, when
    it is less than the whole; None: the whole text was accepted."""
    if (not isinstance(text, str) or isinstance(units, bool) or not isinstance(units, int)
            or units < 0):
        return None
    if ls.encoding == "utf-8":
        prefix = text.encode("utf-8", "surrogatepass")[:units].decode("utf-8", "ignore")
    else:
        prefix = text.encode("utf-16-le", "surrogatepass")[:2 * units].decode(
            "utf-16-le", "ignore")
    return len(prefix) if len(prefix) < len(text) else None


def did_accept(ls: CopilotServer, params: Any) -> None:
    uri, position, text = _field(params, "uri"), _field(params, "position"), _field(
        params, "text")
    s = _suggestion(ls, params)
    if s is None and ls.acceptance.counted(_field(params, "id")):
        return  # a partial accept the server read from the edit already: counted once
    if s is not None:  # its outcome, for acceptance records
        chars = _field(params, ACCEPTED_CHARS)
        ls.acceptance.accepted(
            s, chars if isinstance(chars, int) and not isinstance(chars, bool) else None,
            len(text) if isinstance(text, str) else s.chars)
    partial = _accepted_chars(ls, text, _field(params, ACCEPTED_CHARS))
    if partial is not None:  # a word or a line of it: the rest stays on screen
        ls.telemetry.count("partial_accepts")
        ls.telemetry.count("accepted_chars", partial)
        if isinstance(uri, str):
            ls.completer.prefer(uri, text)
        return
    ls.telemetry.count("accepted")
    ls.telemetry.count("accepted_chars", len(text) if isinstance(text, str) else 0)
    if not (ls.hub.settings.prefetch and isinstance(uri, str) and isinstance(text, str) and text):
        return
    line, character = _field(position, "line"), _field(position, "character")
    if not isinstance(line, int) or not isinstance(character, int):
        return
    ls.spawn(prefetch_after(ls.completer, ls.store, ls.encoding, uri, line, character, text))


def accept_command(ls: CopilotServer, args: Any = None) -> None:
    """``workspace/executeCommand`` form of didAccept (arguments: [{uri, position, text, id}])."""
    did_accept(ls, args[0] if isinstance(args, list | tuple) and args else args)
