"""The validators of settings, each with the JSON schema of the values it accepts, and
``setting()``, which declares one setting as a dataclass field.

A check returns None for a good value, else the end of a sentence ("must be ...") that
parse_settings turns into a message for the user. The schema is what VS Code validates
with (settings/docgen.py writes it into the extension's package.json).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lsp_copilot.privacy import check_patterns


@dataclass(frozen=True, eq=False)
class Check:
    """A validator and the JSON schema of the values it accepts."""

    problem: Callable[[Any], str | None]
    schema: Mapping[str, Any]

    def __call__(self, value: Any) -> str | None:
        return self.problem(value)


def setting(default: Any, doc: str, check: Check, *, redact: bool = False,
            restarts_engine: bool = False) -> Any:
    """One setting: its default, the one-line doc users read, and its check.

    ``redact``: a rejected value is not echoed back (it may be a pasted secret).
    ``restarts_engine``: it only takes effect when the engine is (re)started, so a change
    restarts it (and experiment arms cannot differ in it).
    """
    return field(default=default, metadata={
        "doc": doc, "check": check, "redact": redact, "restarts_engine": restarts_engine})


def json_schema(check: Check | None) -> dict[str, Any]:
    """The JSON schema a check accepts (empty for no check)."""
    return dict(check.schema) if check is not None else {}


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def pairs(value: Any) -> Iterable[Any] | None:
    """An object setting's (key, value) pairs: from the editor's JSON object, or from the
    tuple of pairs parse_settings keeps it as (settings stay hashable); None otherwise."""
    if isinstance(value, Mapping):
        return list(value.items())
    return value if isinstance(value, tuple) else None


def one_of(*values: Any) -> Check:
    types = sorted({"string" if isinstance(v, str) else "number" for v in values})
    return Check(
        lambda value: None if value in values else f"must be one of {', '.join(map(repr, values))}",
        {"type": types[0] if len(types) == 1 else types, "enum": list(values)})


def int_range(low: int, high: int) -> Check:
    def problem(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int):
            return "must be an integer"
        return None if low <= value <= high else f"must be between {low} and {high}"

    return Check(problem, {"type": "integer", "minimum": low, "maximum": high})


def float_range(low: float, high: float) -> Check:
    def problem(value: Any) -> str | None:
        if not _number(value):
            return "must be a number"
        return None if low <= value <= high else f"must be between {low} and {high}"

    return Check(problem, {"type": "number", "minimum": low, "maximum": high})


def optional(inner: Check) -> Check:
    """``inner``, or null."""

    def problem(value: Any) -> str | None:
        found = None if value is None else inner(value)
        return f"{found} (or null)" if found else None

    schema = {**inner.schema, "type": [inner.schema.get("type", "string"), "null"]}
    if "enum" in schema:  # a schema's enum lists every value it allows
        schema["enum"] = [*schema["enum"], None]
    return Check(problem, schema)


IS_STR = Check(lambda v: None if isinstance(v, str) else "must be a string", {"type": "string"})
IS_BOOL = Check(lambda v: None if isinstance(v, bool) else "must be true or false",
                {"type": "boolean"})
OPT_STR = Check(lambda v: None if v is None or isinstance(v, str) else "must be null or a string",
                {"type": ["string", "null"]})
OPT_BOOL = Check(
    lambda v: None if v is None or isinstance(v, bool) else "must be null, true or false",
    {"type": ["boolean", "null"]})
STR_LIST = Check(
    lambda v: None if isinstance(v, list | tuple) and all(isinstance(s, str) for s in v)
    else "must be a list of strings", {"type": "array", "items": {"type": "string"}})
REGEX_LIST = Check(check_patterns,
                   {"type": "array", "items": {"type": "string", "format": "regex"}})


def _opt_block_size(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or value % 16:
        return "must be null or a positive multiple of 16"
    return None


OPT_BLOCK_SIZE = Check(_opt_block_size,
                       {"type": ["integer", "null"], "minimum": 16, "multipleOf": 16})


def _url(value: Any) -> str | None:
    if not isinstance(value, str):
        return "must be a string"
    ok = not value or value.startswith(("https://", "http://"))
    return None if ok else "must be empty or start with https:// (or http:// on this machine)"


URL = Check(_url, {"type": "string", "pattern": "^(https?://.*)?$"})


def _env_name(value: Any) -> str | None:
    """The NAME of a variable: a key pasted here would end up in settings files and logs."""
    if not isinstance(value, str):
        return "must be a string"
    if value and not re.fullmatch(r"[A-Z_][A-Z0-9_]{0,127}", value):
        return ("must be the name of an environment variable (capitals, digits, _), "
                "not the key itself")
    return None


ENV_NAME = Check(_env_name, {"type": "string", "pattern": "^([A-Z_][A-Z0-9_]{0,127})?$"})

HEADER_NAME = Check(
    lambda v: None if isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9-]{0,64}", v)
    else "must be an HTTP header name (letters, digits, -) or empty",
    {"type": "string", "pattern": "^[A-Za-z0-9-]{0,64}$"})


def shares(count: int) -> Check:
    """``count`` budget shares in [0, 1], the first above 0, summing to at most 1."""

    def problem(value: Any) -> str | None:
        ok = (isinstance(value, list | tuple) and len(value) == count
              and all(_number(v) and 0 <= v <= 1 for v in value)
              and sum(value) <= 1.0001 and value[0] > 0)
        return None if ok else (f"must be {count} numbers in [0, 1] (P0..P{count - 1}), "
                                "P0 > 0, summing to at most 1")

    return Check(problem, {"type": "array", "items": {"type": "number", "minimum": 0,
                                                      "maximum": 1},
                           "minItems": count, "maxItems": count})


def keyed(keys: tuple[str, ...], accepts: Callable[[Any], bool], must: str,
          schema: Mapping[str, Any]) -> Check:
    """Null, or an object whose keys are some of ``keys`` and whose values ``accepts``;
    ``must`` says what such a value is, ``schema`` is each value's JSON schema."""

    def problem(value: Any) -> str | None:
        found = pairs(value)
        ok = value is None or (found is not None and all(
            isinstance(p, tuple | list) and len(p) == 2 and p[0] in keys and accepts(p[1])
            for p in found))
        return None if ok else f"must be null or an object with some of {', '.join(keys)} {must}"

    return Check(problem, {"type": ["object", "null"], "additionalProperties": False,
                           "properties": {key: dict(schema) for key in keys}})
