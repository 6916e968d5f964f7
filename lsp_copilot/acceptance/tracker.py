"""Links feedback to the suggestion it is about, and decides each shown one's outcome.

A suggestion gets an ``id`` when answered. The editor's feedback names it by that id, or,
for clients that send none, by (uri, position, text). A partial accept is also read from
the document itself: one content change that inserts at least MIN_INFERRED characters of
the suggestion on screen (a word, a line: what VS Code's Ctrl+Right does, which no client
API reports) is a partial accept of that item; a client that also reports it (didAccept
with acceptedChars) is counted once, whichever of the two arrives first. Typing-through
answers continue a suggestion under its own id, so clients' didReject of the old item
followed by didShow of the remainder is one suggestion, not a rejection: rejections (and
text typed to its end) are tentative until something settles them (another suggestion
shown in the document, an edit that leaves it, the document closing, or SETTLE_S
passing); an accept is final.
"""

from __future__ import annotations

import itertools
import secrets
import time
import zlib
from collections import Counter, OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from lsp_copilot.acceptance.store import OUTCOMES, OutcomeStore, Record

MAX_OPEN = 256
"""Suggestions remembered for feedback; older ones are settled (or dropped if unseen)."""
SETTLE_S = 30.0
RECENT = 8
"""Outcomes settled last, with the item's id, in ``lspCopilot/stats`` (which item counted)."""
LATENCY_BUCKETS = ((100, "<100ms"), (300, "100-300ms"), (1000, "300ms-1s"), (3000, "1-3s"))
SLOWEST = ">=3s"
MIN_INFERRED = 2
"""Characters one insertion must add to a suggestion to be read as a partial accept (one
character is a keystroke: typing-through)."""
_EDGE = 32  # bytes either side of a suggestion checked (as a CRC) to know it is still there

Position = tuple[str, int, int, str]  # uri, line, character, text: an old client's key


def latency_bucket(ms: float) -> str:
    for limit, name in LATENCY_BUCKETS:
        if ms < limit:
            return name
    return SLOWEST


def model_name(model: str) -> str:
    """A folder's last part (a path may name the user); hub ids and presets as they are."""
    return PurePath(model).name if model.startswith(("/", "~", ".")) else model


@dataclass
class Suggestion:
    """In memory only: ``text`` links old clients' feedback and detects typing through."""

    id: str
    uri: str
    keys: dict[str, Any]
    text: bytes  # the whole suggestion, from where it started
    start: int  # its byte offset in the document when answered
    tail: int  # bytes after the cursor then (unchanged while the user types it)
    edges: int  # CRC of the _EDGE bytes before the start and after the cursor
    chars: int
    typed: int = 0  # bytes of ``text`` in the document at the last edit (or answer)
    rank: int = 0  # its place among the items of one answer (0: the first)
    aliases: list[Position] = field(default_factory=list)
    shown: bool = False
    pending: str | None = None  # a tentative outcome: rejected | typed_through
    since: float = 0.0


class Tracker:
    """Owned by the server; ``store`` receives one Record per settled outcome."""

    def __init__(self, store: OutcomeStore, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock
        self.counts: Counter[str] = Counter()
        self._open: OrderedDict[str, Suggestion] = OrderedDict()
        self._by_position: dict[Position, str] = {}
        self._latest: dict[str, str] = {}  # uri -> id of the last suggestion answered
        self._keys: dict[str, dict[str, Any]] = {}  # uri -> that suggestion's keys
        # Ids settled by a partial accept read from an edit: the client's own report of the
        # same accept, arriving later, is not counted again.
        self._inferred: OrderedDict[str, int] = OrderedDict()
        self.recent: deque[dict[str, object]] = deque(maxlen=RECENT)
        self._prefix = secrets.token_hex(4)  # ids stay unique across restarts
        self._ids = itertools.count(1)

    # -- answers -----------------------------------------------------------------

    def suggested(self, uri: str, line: int, character: int, text: str, data: bytes,
                  offset: int, keys: dict[str, Any], continued: bool, rank: int = 0) -> str:
        """Register an answer; return its id. ``continued``: a typing-through answer,
        which keeps the id of the suggestion it is the rest of; ``rank``: its place among
        the answer's items."""
        self._sweep()
        latest = self._open.get(self._latest.get(uri, ""))
        encoded = text.encode("utf-8", "surrogatepass")
        if continued and latest is not None and latest.text.endswith(encoded) and (
                offset - latest.start == len(latest.text) - len(encoded)):
            s = latest
            s.typed = offset - s.start
        else:
            # The rest of one that is settled (after a partial accept) is a new showing of
            # the same answer: its keys are that answer's (the pipeline has no others).
            keys = self._keys.get(uri, keys) if continued else keys
            self._keys[uri] = keys
            s = Suggestion(f"{self._prefix}-{next(self._ids)}", uri, keys, encoded, offset,
                           len(data) - offset, _edges(data, offset, offset), len(text),
                           rank=rank)
            self._open[s.id] = s
            self._latest[uri] = s.id
            while len(self._open) > MAX_OPEN:
                self._settle(next(iter(self._open.values())))
        key = (uri, line, character, text)
        s.aliases.append(key)
        self._by_position[key] = s.id
        self._open.move_to_end(s.id)
        return s.id

    # -- feedback ------------------------------------------------------------------

    def find(self, sid: object, uri: object, line: object, character: object,
             text: object) -> Suggestion | None:
        """By ``id``, else by what an older client sends (any other shape: none)."""
        if isinstance(sid, str) and sid in self._open:
            return self._open[sid]
        if not (isinstance(uri, str) and isinstance(text, str) and type(line) is int
                and type(character) is int):
            return None
        found = self._by_position.get((uri, line, character, text))
        return self._open.get(found) if found else None

    def shown(self, s: Suggestion) -> None:
        self._sweep()
        for other in [o for o in self._open.values() if o.uri == s.uri and o is not s]:
            if other.shown or other.pending:  # replaced on screen by this one
                self._settle(other)
        s.shown = True
        if s.pending == "rejected":  # the rest of it, shown again after typing
            s.pending = None

    def rejected(self, s: Suggestion) -> None:
        if s.pending is None:
            s.pending, s.since = "rejected", self.clock()

    def accepted(self, s: Suggestion, accepted_chars: int | None, item_chars: int) -> None:
        """``accepted_chars`` of the item the client showed (None: all of it)."""
        partly = accepted_chars is not None and 0 <= accepted_chars < item_chars
        taken = accepted_chars if partly and accepted_chars is not None else item_chars
        done = s.chars - item_chars + taken  # typed before the accept, then accepted
        self._finish(s, "partly_accepted" if partly else "accepted", done)

    # -- the document ----------------------------------------------------------------

    def changed(self, uri: str, data: bytes, inserted: bool = False) -> list[Inferred]:
        """After each edit: typed to its end (tentatively typed through), still being
        typed, or left (a shown one is then rejected). ``inserted``: the edit was one
        content change inserting text; if it added MIN_INFERRED or more characters of the
        suggestion on screen (or of an item of its answer the user cycled to, which some
        clients never report), that is a partial accept, returned."""
        mine = [o for o in self._open.values() if o.uri == uri]
        typed = {s.id: _typed_bytes(s, data) for s in mine}
        taken = _taken(mine, typed) if inserted else None
        revealed = taken is not None and not taken.shown
        if revealed and taken is not None:
            self.shown(taken)  # it was on screen: the edit inserted a part of it
        out: list[Inferred] = []
        for s in mine:
            n = typed[s.id]
            if s.id not in self._open:
                continue  # settled just now (replaced on screen by ``taken``)
            if n is None:
                self._settle(s)
            elif s is taken and n < len(s.text):
                word, done = _chars(s.text[s.typed:n]), _chars(s.text[:n])
                self._inferred[s.id] = done
                while len(self._inferred) > MAX_OPEN:
                    self._inferred.popitem(last=False)
                self._finish(s, "partly_accepted", done)
                out.append(Inferred(s, word, revealed))
            elif n == len(s.text):
                if not (s.shown or s.pending):
                    self._forget(s)  # typed, but never on screen: no outcome to record
                elif s.pending != "typed_through":
                    s.pending, s.since = "typed_through", self.clock()
                s.typed = n
            else:
                if s.pending == "typed_through":
                    s.pending = None  # typed back into it (a deletion)
                s.typed = n
        return out

    def counted(self, sid: object) -> bool:
        """Whether the accept a client reports for ``sid`` was read from its edit already."""
        return isinstance(sid, str) and sid in self._inferred

    def closed(self, uri: str) -> None:
        for s in [o for o in self._open.values() if o.uri == uri]:
            self._settle(s)
        self._latest.pop(uri, None)
        self._keys.pop(uri, None)

    def flush(self) -> None:
        """Shutdown: everything shown gets its outcome now."""
        for s in list(self._open.values()):
            self._settle(s)

    # -- outcomes --------------------------------------------------------------------

    def _sweep(self) -> None:
        now = self.clock()
        for s in [o for o in self._open.values() if o.pending and now - o.since > SETTLE_S]:
            self._settle(s)

    def _settle(self, s: Suggestion) -> None:
        """Shown and not accepted: rejected, unless typed to its end; unseen: dropped."""
        if s.pending == "typed_through":
            self._finish(s, "typed_through", 0)
        elif s.shown or s.pending:
            self._finish(s, "rejected", 0)
        else:
            self._forget(s)

    def _finish(self, s: Suggestion, outcome: str, accepted_chars: int) -> None:
        assert outcome in OUTCOMES
        self._forget(s)
        self.counts[outcome] += 1
        self.recent.append({"id": s.id, "outcome": outcome, "accepted_chars": accepted_chars})
        self.store.add(Record(ts=self.clock(), outcome=outcome, shown_chars=s.chars,
                              accepted_chars=accepted_chars, rank=s.rank, **s.keys))

    def _forget(self, s: Suggestion) -> None:
        self._open.pop(s.id, None)
        for key in s.aliases:
            if self._by_position.get(key) == s.id:
                del self._by_position[key]
        if self._latest.get(s.uri) == s.id:
            del self._latest[s.uri]

    def summary(self) -> dict[str, Any]:
        """For ``lspCopilot/stats``: outcomes settled by this process."""
        return {**dict.fromkeys(OUTCOMES, 0), **self.counts, "open": len(self._open),
                "written": self.store.written, "write_errors": self.store.failed,
                "recent": list(self.recent)}


@dataclass(frozen=True)
class Inferred:
    """A partial accept read from an edit: ``chars`` inserted; ``revealed``: the client
    never said this item was on screen (it cycled to it), the edit did."""

    suggestion: Suggestion
    chars: int
    revealed: bool


def _typed_bytes(s: Suggestion, data: bytes) -> int | None:
    """Bytes of ``s`` the document holds where it was answered; None: the user left it."""
    n = len(data) - s.start - s.tail
    inside = 0 <= n <= len(s.text) and data[s.start:s.start + n] == s.text[:n] and (
        _edges(data, s.start, s.start + n) == s.edges)
    return n if inside else None


def _taken(mine: list[Suggestion], typed: dict[str, int | None]) -> Suggestion | None:
    """The item one insertion took MIN_INFERRED or more characters of, while an item of
    the document is on screen: the one shown if it matches, else the first item (by rank)
    of those that do; None: a keystroke, or nothing on screen."""
    if not any(s.shown or s.pending for s in mine):
        return None
    grown = [s for s in mine if (n := typed[s.id]) is not None
             and _chars(s.text[s.typed:n]) >= MIN_INFERRED]
    if not grown:
        return None
    shown = [s for s in grown if s.shown]
    return shown[0] if shown else min(grown, key=lambda s: s.rank)


def _chars(part: bytes) -> int:
    """Characters in a part of a suggestion (a cut character is not counted)."""
    return len(part.decode("utf-8", "ignore"))


def _edges(data: bytes, start: int, end: int) -> int:
    return zlib.crc32(data[max(0, start - _EDGE):start] + b"\0" + data[end:end + _EDGE])


def keys_for(model: str, template: str, route: str, mode: str, language: str,
             latency_ms: float, experiment: str, arm: str,
             cluster: str = "", items: int = 1) -> dict[str, Any]:
    """The breakdown keys of one suggestion, its latency, its experiment cluster and the
    number of items its answer offered, as the store spells them."""
    return {"model": model_name(model), "template": template, "route": route, "mode": mode,
            "language": language, "latency": latency_bucket(latency_ms),
            "experiment": experiment, "arm": arm, "latency_ms": round(latency_ms, 1),
            "cluster": cluster, "items": items}

