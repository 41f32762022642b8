"""Structured output for the embedded model: the JSON schemas the judges send, as a regular
expression that decoding keeps the reply inside of.

Only the small subset the judge prompts use is supported: objects with required properties,
string and integer enums, arrays of enums with `minItems` / `maxItems`, plain strings,
integers and booleans. Decoding asks, token by token, whether the reply so far can still be
completed into a match (a partial match, from the `regex` package).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["Constraint", "schema_pattern"]

_WS = "[ ]?"
"""At most one space between JSON tokens: a constrained model cannot spend its tokens on
whitespace."""


def _enum(values: list[Any], bare: bool) -> str:
    texts = [v if bare and isinstance(v, str) else json.dumps(v) for v in values]
    literals = sorted(texts, key=len, reverse=True)
    return "(?:" + "|".join(re.escape(v) for v in literals) + ")"


def schema_pattern(schema: dict[str, Any], bare: bool = False) -> str:
    """A regular expression matching exactly the JSON texts of `schema` (ValueError when the
    schema is outside the supported subset).

    `bare`: the same content without JSON's wrapping, as the judge prompts ask for it: an
    object of one property is just its value, strings lose their quotes, arrays their
    brackets (``{"verdict": "YES"}`` is ``YES``, ``{"ranking": ["R2", "R1"]}`` is
    ``R2, R1``). The parsers read both; the bare form takes the model a fraction of the
    tokens."""
    if "enum" in schema:
        return _enum(list(schema["enum"]), bare)
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties") or {}
        required = list(schema.get("required") or [])
        if bare and len(required) == 1:
            return schema_pattern(properties[required[0]], bare)
        fields = [
            f'"{re.escape(name)}"{_WS}:{_WS}{schema_pattern(properties[name])}' for name in required
        ]
        return r"\{" + _WS + f"{_WS},{_WS}".join(fields) + _WS + r"\}"
    if kind == "array":
        item = schema_pattern(schema.get("items") or {}, bare)
        low, high = int(schema.get("minItems", 0)), schema.get("maxItems")
        more = f"{{{max(low - 1, 0)},{'' if high is None else int(high) - 1}}}"
        body = f"{item}(?:{_WS},{_WS}{item}){more}"
        if bare:
            return body if low else f"(?:{body})?"
        return r"\[" + _WS + (body if low else f"(?:{body})?") + _WS + r"\]"
    if kind == "string":
        return r'"[^"\\\n]{0,200}"'
    if kind == "integer":
        return r"-?\d{1,12}"
    if kind == "boolean":
        return "(?:true|false)"
    raise ValueError(f"structured output: unsupported schema {json.dumps(schema)[:120]}")


class Constraint:
    """Whether a reply (so far) fits a schema."""

    def __init__(self, schema: dict[str, Any], bare: bool = False) -> None:
        import regex

        self.pattern = regex.compile(schema_pattern(schema, bare))

    def viable(self, text: str) -> bool:
        """`text` is a prefix of some match."""
        return self.pattern.fullmatch(text, partial=True) is not None

    def complete(self, text: str) -> bool:
        """`text` is a whole match."""
        return self.pattern.fullmatch(text) is not None
