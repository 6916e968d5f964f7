"""EngineRequest.cut: stop strings matched as text streams, without vLLM's hold-back."""

from __future__ import annotations

from lsp_copilot.engine.base import EngineRequest


def request(stop: tuple[str, ...] = (), newline: bool = False) -> EngineRequest:
    def at_newline(text: str) -> int | None:
        return text.index("\n") if "\n" in text else None

    return EngineRequest("r", "p", 8, stop=stop, stop_at=at_newline if newline else None)


def test_a_stop_string_cuts_where_it_starts() -> None:
    assert request(("<|endoftext|>",)).cut("x = 1<|endoftext|>junk", False) == (5, "stop")
    # The earliest of several.
    assert request(("\n\n", "<fim_prefix>")).cut("a<fim_prefix>b\n\nc", False) == (1, "stop")


def test_text_goes_on_without_waiting_for_the_longest_stop_string() -> None:
    # vLLM would have held back the last 12 characters of this stream.
    seen: list[str] = []

    def watch(text: str) -> int | None:
        seen.append(text)
        return None

    r = EngineRequest("r", "p", 8, stop=("<|endoftext|>",), stop_at=watch)
    assert r.cut("x = 1", False) == (None, None)
    assert r.cut("x = 1 <|end", False) == (None, None)  # an open stop string waits
    assert r.cut("x = 1 <|end", True) == (None, None)  # unless the stream is over
    assert seen == ["x = 1", "x = 1 ", "x = 1 <|end"]


def test_stop_at_cuts_after_the_stop_strings() -> None:
    assert request(("<|endoftext|>",), newline=True).cut("ab\ncd", False) == (2, "stop_at")
    assert request(newline=True).cut("abcd", False) == (None, None)
