"""One request's line in the trace (``LSP_COPILOT_TRACE``): timings and counts, never
text. A typed record: the stages, flights and alternatives each fill their keys, and a
misspelt key is a type error, not a column nobody reads."""

from __future__ import annotations

from typing import TypedDict


class Trace(TypedDict, total=False):
    """What one request did; ``bench typing`` reads it to say why a pause was missed."""

    # The request.
    t: float  # monotonic time it began
    uri: str
    version: int
    prefetch: bool
    explicit: bool
    status: str  # cancelled | answered
    mode: str
    source: str  # engine | cache | merged | typed_through | none
    chars: int
    reason: str | None
    route: str
    # Its time, in ms: building the context, waiting (debounce, engine), in all.
    context: float
    engine: float
    total: float
    elapsed_ms: float
    debounce_ms: float
    encode_ms: float
    # The engine's generation.
    new_tokens: int  # prompt tokens the previous engine call did not have
    engine_busy: int  # generations this one shared the engine with
    before_end: bool  # answered while the generation went on to the next line
    prompt_tokens: int
    uncached: int
    generated_tokens: int
    first_token_ms: float | None
    # A generation under way that the request joined (``flights``).
    joined_flight: str  # forward | back
    behind_flight: int  # characters typed past what the generation had written
    join_respaced: bool
    join_ended: str  # why it stopped following it, when it did
    flight_ms: float
    flight_first_text_ms: float | None
    flight_updates: int
    flight_chars: int
    # An explicit request's other items.
    alternatives: int
    alternatives_unneeded: int
    alternatives_late: int
    alternatives_second_round: int  # branches continued when nothing else was usable
    statement_end: bool  # the answer is the `;`/`,` the file's style or list puts there
    grammar_lead: bool  # one token must follow the keyword typed (a branch may begin with it)
