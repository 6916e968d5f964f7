"""Secret values in text bound for a prompt, replaced by placeholders of the same shape.

``password = "hunter2"`` reaches the model as ``password = "<redacted:password>"``: the
model still sees a string literal where one stands, the value stays on the machine. The
detector is ``detect-secrets`` (its vendor plugins, keyword, high-entropy and basic-auth
plugins and heuristic filters), scanned line by line; :data:`OWN_RULES` cover formats it
does not know. docs/privacy.md lists which rule comes from where and why each is tuned.

Redaction runs on every prompt, so a :class:`Redactor` keeps each line's answer (a
prompt's lines barely change between keystrokes): a line is scanned once while it is in
the cache. The redactor belongs to its owner (the completer); nothing here is shared.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import itertools
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

PLACEHOLDER = "<redacted:{}>"
PLACEHOLDER_RE = re.compile(r"<redacted:[a-z0-9-]+>")

OWN_RULES: tuple[tuple[str, str], ...] = (
    # (kind, regex): formats detect-secrets 1.5 has no plugin for.
    ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}"),
    # detect-secrets' OpenAI plugin knows only the legacy keys (with "T3BlbkFJ" inside).
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"),
    # Fine-grained GitHub tokens; detect-secrets knows ghp_/gho_/ghu_/ghs_/ghr_ only.
    ("github-token", r"\bgithub_pat_[A-Za-z0-9_]{22,}"),
    # Its basic-auth plugin refuses a password with a reserved character (p&ss, p#ss) or
    # an empty user (redis://:pw@host); stand-ins ({password}, ***, $PASS) are not taken
    # (see _placeholder).
    ("password", r"(?<=[a-zA-Z0-9+.-]://)[^\s:/@'\"`]*:(?P<value>[^\s/@'\"`]+)@"),
    # A credential in a URL's query string (?password=..., &access_token=..., &sig=...).
    ("password", r"(?i)[?&;](?:password|passwd|pwd|pass|token|access_token|api_?key|secret|"
                 r"client_secret|sig|auth)=(?P<value>[^&\s'\"`#;<>]+)"),
    # JDBC and ADO.NET connection strings: Password=...; / Pwd=...; (no quotes, no spaces).
    ("password", r"(?i)(?:^|[;\s\"'])(?:password|pwd)=(?P<value>[^;\s'\"`]+);"),
    ("password", r"(?i);\s*(?:password|pwd)\s*=\s*(?P<value>[^;\s'\"`]+)"),
    # Go's MySQL DSN: user:password@tcp(host:port)/db.
    ("password", r"(?<![\w/:])[\w.-]+:(?P<value>[^\s/@'\"`:]+)@(?:tcp|udp|unix)\("),
    # curl -u user:password / --user=user:password.
    ("password", r"(?:^|\s)(?:-u|--user)(?:\s+|=)[\"']?[^\s:'\"]*:(?P<value>[^\s'\"]+)"),
    # An Authorization header's credentials, in code and in curl -H.
    ("token", r"(?i)\b(?:proxy-)?authorization[\"'\]]*\s*[:=,]\s*[\"']?(?:bearer|basic|token|"
              r"digest)\s+(?P<value>[A-Za-z0-9._~+/-]{8,}=*)"),
    ("token", r"[\"'`]Bearer\s+(?P<value>[A-Za-z0-9._~+/-]{16,}=*)"),
    # An unquoted NAME=value whose name says secret (Dockerfile ENV, YAML, Makefiles, .py
    # that embeds shell): upper-case names only, a value with a letter and a digit.
    ("secret", r"\b[A-Z0-9_]*(?:SECRET|PASSWORD|PASSWD|TOKEN|API_KEY|APIKEY|PRIVATE_KEY|"
               r"ACCESS_KEY)[A-Z0-9_]*\s*[=:]\s*(?P<value>(?=[^\s'\"]*\d)(?=[^\s'\"]*[A-Za-z])"
               r"[^\s'\"`$<>{}()\[\],;]{8,})(?=$|[\s'\",;])"),
    # Slack app-level and config tokens (xapp-, xoxe-), beside its Slack plugin.
    ("slack-token", r"\bx(?:app|oxe)-[0-9A-Za-z-]{20,}"),
)

KINDS = {
    "Secret Keyword": "password",
    "Basic Auth Credentials": "password",
    "Base64 High Entropy String": "secret",
    "Hex High Entropy String": "secret",
    "JSON Web Token": "jwt",
    "AWS Access Key": "aws-key",
    "Private Key": "private-key",
}
"""detect-secrets' type names that get a kind other than their slug."""

GUESSING = ("KeywordDetector", "Base64HighEntropyString", "HexHighEntropyString",
            "BasicAuthDetector")
"""Plugins that guess from a name or from entropy: detect-secrets' heuristic filters
apply to them only (a vendor's format is evidence enough on any line)."""

KEYWORD_STEMS = ("key", "pass", "pwd", "secret", "contrase")
"""Every name of detect-secrets' keyword denylist holds one of these (api_key, passwd,
contraseña, ...): a line without any is not given to its regexes."""

GUESSED_KINDS = frozenset({"password", "secret"})

DISABLED = ("IPPublicDetector",)
"""An IP address is not a credential, and code is full of them (tests, resolvers)."""

ENTROPY_LIMITS = {"Base64HighEntropyString": 4.5, "HexHighEntropyString": 3.0}
"""detect-secrets' defaults: a higher hex limit misses 32-digit keys (a random one scores
about 3.7 of at most 4), and the base64 limit already passes only random-looking text."""

MIN_GUESSED_LENGTH = {"Base64HighEntropyString": 20, "HexHighEntropyString": 20}
"""Shorter quoted strings are not taken for secrets by entropy alone: test data, serial
numbers and short hex literals ("12345abcde", "CB2D80995A69525C") score high on a few
characters, while API keys and tokens are 20 characters or more. (A name such as
``password`` still redacts a short value: that is the keyword plugin.)"""

TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                        "_-+/=.")
"""What a vendor token is made of: a match is widened over these, so that a regex that
stops early (Stripe's 24 characters, a JWT without its signature) leaves no tail."""

FILE_TYPES = {
    ".ts": "x.js", ".tsx": "x.js", ".jsx": "x.js", ".mjs": "x.js", ".cjs": "x.js",
    ".kt": "x.java", ".kts": "x.java", ".scala": "x.java", ".rs": "x.py", ".rb": "x.py",
    ".sh": "x.cfg", ".bash": "x.cfg", ".zsh": "x.cfg", ".env": "x.cfg", ".json": "x.yaml",
    ".h": "x.c", ".hpp": "x.cpp", ".cc": "x.cpp", ".hh": "x.cpp",
}
"""File name detect-secrets' keyword plugin reads a language's assignments by (it knows
a few extensions; shell scripts assign without quotes, like config files)."""

MAX_SCANNED_CHARS = 4000
"""A line longer than this (once its runs of blanks are shortened) is not scanned but
withheld whole (``<redacted:long-line>``): minified code and data, which no model
completes from, and where a scan's cost grows with the length. Below it a scan takes a
few milliseconds."""
BLANK_RUN = re.compile(r"[^\S\n]{3,}")
"""Runs of blanks, shortened to two before a scan: several detect-secrets patterns
(IBM Cloud IAM's ``(?: *)(?:=|:|:=|=>| +|::)(?: *)``) backtrack in cubic time over a
long run of spaces (``password`` + 1,000 spaces + ``x`` took 4 s)."""
LONG_LINE = "long-line"
PEM_BASE64 = re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{8,}={0,2}")
"""Base64 of ``-----BEGIN``: a PEM block inside a kubeconfig or a JSON secret."""

MAX_CACHED_LINES = 50_000
MAX_CACHED_TEXTS = 512


class Span(NamedTuple):
    start: int
    end: int
    kind: str


class Redaction(NamedTuple):
    """Redacted text and what was found: (0-based line within the text, kind)."""

    text: str
    found: tuple[tuple[int, str], ...]


def _slug(secret_type: str) -> str:
    kind = KINDS.get(secret_type)
    if kind is None:
        kind = re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")
        kind = kind.removesuffix("-detector")
    return kind


def _widen(line: str, start: int, end: int) -> tuple[int, int]:
    """A vendor match trimmed of delimiters its regex took along, widened over token
    characters, and started after a ``Name=`` it includes (Azure's ``AccountKey=``)."""
    while start < end and line[start] not in TOKEN_CHARS:
        start += 1
    while end > start and line[end - 1] not in TOKEN_CHARS:
        end -= 1
    while start > 0 and line[start - 1] in TOKEN_CHARS:
        start -= 1
    while end < len(line) and line[end] in TOKEN_CHARS:
        end += 1
    name = re.match(r"\w+=", line[start:end])
    if name is not None and end - start - name.end() >= 16:
        start += name.end()
    return start, end


def _value_span(match: re.Match[str]) -> tuple[int, int]:
    """The value in a vendor match: its longest group when that is token-sized (AWS's
    secret key after ``aws_secret_access_key = "``), else the whole match (GitHub's group
    is only the ``ghp`` prefix)."""
    best = max((match.span(g) for g in range(1, (match.re.groups or 0) + 1)
                if match.span(g)[0] >= 0), key=lambda s: s[1] - s[0], default=None)
    if best is not None and best[1] - best[0] >= 16:
        return best
    return match.span()


def _merge(spans: Iterable[Span]) -> list[Span]:
    """Overlapping spans as one; the kind of a vendor's or our own rule wins over a guess."""
    out: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end, s.kind in GUESSED_KINDS)):
        if out and span.start <= out[-1].end:
            last = out[-1]
            out[-1] = Span(last.start, max(last.end, span.end), last.kind)
        else:
            out.append(span)
    return out


class Redactor:
    """detect-secrets' plugins and filters plus :data:`OWN_RULES` and the user's
    ``secretContentPatterns``; answers are kept per (file type, line)."""

    def __init__(self, content_patterns: Iterable[str] = ()) -> None:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.filters import heuristic
        from detect_secrets.plugins.base import RegexBasedDetector

        self._plugins: list[tuple[Any, str, bool, int]] = []
        cls: Any
        for cls in get_mapping_from_secret_type_to_class().values():
            name = cls.__name__
            if name in DISABLED:
                continue
            plugin = cls(limit=ENTROPY_LIMITS[name]) if name in ENTROPY_LIMITS else cls()
            regex = isinstance(plugin, RegexBasedDetector) and name not in GUESSING
            self._plugins.append((plugin, _slug(cls.secret_type), regex,
                                  MIN_GUESSED_LENGTH.get(name, 4)))
        self._heuristic = heuristic
        self._own = [(kind, re.compile(rx)) for kind, rx in OWN_RULES]
        self._own += [("custom", re.compile(p)) for p in content_patterns]
        self._lines: dict[tuple[str, str], tuple[Span, ...]] = {}
        # Whole texts too: a layer's blocks and the window's lines above the cursor stay
        # the same while a line is typed (one hash instead of a lookup per line).
        self._texts: OrderedDict[tuple[str, str], Redaction] = OrderedDict()
        self.scanned = 0  # lines scanned (not answered from the cache)

    # -- one line -------------------------------------------------------------------
    def spans(self, line: str, path: str = "") -> tuple[Span, ...]:
        """Where ``line`` (no newline) of a file at ``path`` holds secrets."""
        return self._spans(line, _file_type(path))

    def _spans(self, line: str, name: str) -> tuple[Span, ...]:
        """``spans`` for detect-secrets' file name ``name``; cached per (name, line)."""
        if len(line) < 6 or line.isspace():
            return ()
        key = (name, line)
        found = self._lines.get(key)
        if found is None:
            if len(self._lines) >= MAX_CACHED_LINES:
                self._lines.clear()
            short, back = _shorten_blanks(line)
            if len(short) > MAX_SCANNED_CHARS:
                found = (Span(0, len(line), LONG_LINE),)
            else:
                found = tuple(Span(back(s.start), back(s.end), s.kind)
                              for s in _merge(self._scan(short, name)))
            self._lines[key] = found
            self.scanned += 1
        return found

    def _scan(self, line: str, name: str) -> Iterable[Span]:
        h = self._heuristic
        for plugin, kind, regex, min_length in self._plugins:
            if regex:
                for pattern in plugin.denylist:
                    for match in pattern.finditer(line):
                        start, end = _widen(line, *_value_span(match))
                        if end - start >= 8:
                            yield Span(start, end, kind)
                continue
            if type(plugin).__name__ == "KeywordDetector":
                low = line.lower()
                if not any(word in low for word in KEYWORD_STEMS):
                    continue  # (its regexes, half of a line's scan, cannot match)
            for secret in plugin.analyze_line(filename=name, line=line):
                value = secret.secret_value or ""
                entropy = type(plugin).__name__ in MIN_GUESSED_LENGTH  # (no letter: digits)
                if (len(value) < min_length or h.is_sequential_string(value)
                        or (entropy and h.is_not_alphanumeric_string(value))
                        or h.is_potential_uuid(value)
                        or h.is_likely_id_string(value, line, plugin)
                        or h.is_indirect_reference(line) or _placeholder(value)
                        or _alphabet(value)):
                    continue
                at = line.find(value)
                while at >= 0:
                    yield Span(at, at + len(value), kind)
                    at = line.find(value, at + len(value))
        for match in PEM_BASE64.finditer(line):
            if _decodes_to_private_key(match.group(0)):
                yield Span(*match.span(), "private-key")
        for kind, pattern in self._own:
            for match in pattern.finditer(line):
                start, end = match.span("value") if "value" in pattern.groupindex else (
                    match.span())
                if end > start and not (kind in GUESSED_KINDS and _placeholder(line[start:end])):
                    yield Span(start, end, kind)

    # -- text -----------------------------------------------------------------------
    def text(self, text: str, path: str = "") -> Redaction:
        """``text`` with every secret replaced, line by line."""
        if not text:
            return Redaction(text, ())
        name = _file_type(path)
        key = (name, text)
        cached = self._texts.get(key)
        if cached is not None:
            self._texts.move_to_end(key)
            return cached
        lines = text.split("\n")
        found: list[tuple[int, str]] = []
        for i, line in enumerate(lines):
            spans = self._spans(line, name)
            if spans:
                lines[i] = _replace(line, spans)
                found += [(i, s.kind) for s in spans]
        redaction = Redaction("\n".join(lines) if found else text, tuple(found))
        self._texts[key] = redaction
        if len(self._texts) > MAX_CACHED_TEXTS:
            self._texts.popitem(last=False)
        return redaction

    def around(self, before: str, after: str, path: str = "") -> tuple[str, str,
                                                                      tuple[tuple[int, str], ...]]:
        """``before`` and ``after`` the cursor, redacted as one text: the cursor's line is
        scanned whole, and also as if the literal being typed in it were closed (a value
        is found before its closing quote is typed). A secret the cursor stands in is
        replaced in ``before`` and its rest dropped from ``after``. Lines found count from
        ``before``'s first."""
        head, nl, tail_b = before.rpartition("\n")
        head_a, nl_a, rest = after.partition("\n")
        cursor_line = tail_b + head_a
        first = self.text(head + nl, path) if nl else Redaction("", ())
        spans = self.spans(cursor_line, path)
        cut = len(tail_b)
        quote = _open_quote(cursor_line)
        if quote and quote == _open_quote(tail_b):  # a literal being typed: as if closed
            spans = tuple(_merge([*spans, *(Span(t.start, min(t.end, cut), t.kind)
                                            for t in self.spans(tail_b + quote, path)
                                            if t.start < cut)]))
        line_no = before.count("\n")
        found = list(first.found)
        b, a = tail_b, head_a
        if spans:
            found += [(line_no, s.kind) for s in spans]
            left = [Span(s.start, min(s.end, cut), s.kind) for s in spans if s.start < cut]
            right = [Span(max(s.start, cut) - cut, s.end - cut, s.kind) for s in spans
                     if s.end > cut and s.start >= cut]
            b = _replace(tail_b, left)
            a = head_a
            for s in spans:  # the rest of a secret the cursor stands in
                if s.start < cut < s.end:
                    a = a[s.end - cut:]
                    right = [Span(r.start - (s.end - cut), r.end - (s.end - cut), r.kind)
                             for r in right]
            a = _replace(a, right)
        second = self.text(rest, path) if nl_a else Redaction("", ())
        found += [(line_no + 1 + i, kind) for i, kind in second.found]
        return first.text + b, a + nl_a + second.text, tuple(found)

    def holds_secret(self, text: str, path: str = "", before: str = "") -> str | None:
        """The kind of the first placeholder or secret in ``text`` (a suggestion), or None.
        ``before``: its line's text before it, so that a value completing a literal the
        line opened (``key = "`` + ``4f9a...1c8e"``) is seen whole; a secret that lies
        in ``before`` alone is not the suggestion's."""
        placeholder = PLACEHOLDER_RE.search(text)
        if placeholder is not None:
            return placeholder.group(0)[len("<redacted:"):-1]
        name = _file_type(path)
        for i, line in enumerate(text.split("\n")):
            cut = len(before) if i == 0 else 0
            spans = self._spans(before + line if i == 0 else line, name)
            for span in spans:
                if span.end > cut and span.kind != LONG_LINE:
                    return span.kind
        return None


def _open_quote(line: str) -> str:
    """The quote character ``line`` leaves open (an odd count of it), or ""."""
    return next((q for q in "\"'`" if line.count(q) % 2), "")


def _placeholder(value: str) -> bool:
    """A stand-in, not a value: ``{password}``, ``<token>``, ``${PASS}``, ``$PASS``,
    ``***``, ``%s``, or one of our placeholders (a prompt that already holds one)."""
    return (len(value) < 2 or value[0] in "$%" or (value[0], value[-1]) in (("{", "}"),
                                                                          ("<", ">"))
            or not any(c.isalnum() for c in value) or PLACEHOLDER_RE.fullmatch(value) is not None)


def _alphabet(value: str) -> bool:
    """An alphabet or a run of one (``"ABC...Z234567"``, ``"abc...z0123456789_"``): most
    neighbours are consecutive characters, as in no random key. (detect-secrets' own
    sequence filter knows a few alphabets only: not base32's.)"""
    steps = sum(1 for a, b in itertools.pairwise(value) if ord(b) - ord(a) == 1)
    return steps >= 0.6 * (len(value) - 1)


def _file_type(path: str) -> str:
    """The file name detect-secrets' keyword plugin reads ``path``'s lines as."""
    ext = os.path.splitext(path)[1].lower()
    return FILE_TYPES.get(ext, "x" + ext)


def _replace(line: str, spans: Iterable[Span]) -> str:
    out, pos = [], 0
    for span in spans:
        out += [line[pos:span.start], PLACEHOLDER.format(span.kind)]
        pos = span.end
    out.append(line[pos:])
    return "".join(out)


def _shorten_blanks(line: str) -> tuple[str, Callable[[int], int]]:
    """``line`` with each run of 3 or more blanks cut to its first two, and a map from
    positions in it back to positions in ``line`` (linear: one regex without nesting)."""
    cuts: list[tuple[int, int]] = []  # (position in the short line, chars removed so far)
    parts, pos, removed = [], 0, 0
    for run in BLANK_RUN.finditer(line):
        kept_end = run.start() + 2  # in ``line``; in the short line, ``removed`` less
        parts.append(line[pos:kept_end])
        cuts.append((kept_end - removed, removed + run.end() - kept_end))
        removed += run.end() - kept_end
        pos = run.end()
    if not cuts:
        return line, _same
    parts.append(line[pos:])
    starts = [c[0] for c in cuts]

    def back(p: int) -> int:
        i = bisect.bisect_right(starts, p) - 1
        return p if i < 0 else p + cuts[i][1]

    return "".join(parts), back


def _same(p: int) -> int:
    return p


def _decodes_to_private_key(text: str) -> bool:
    """Whether base64 ``text`` starts with a PEM private key's header (a certificate's
    ``BEGIN CERTIFICATE`` is public and stays)."""
    head = text[:96]
    try:
        return b"PRIVATE KEY" in base64.b64decode(head[:len(head) // 4 * 4])
    except (ValueError, binascii.Error):
        return False
