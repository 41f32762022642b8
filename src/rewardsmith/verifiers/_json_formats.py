"""Linear-time stand-ins for JSON Schema format checks whose installed checkers are slow.

jsonschema checks `iri` and `iri-reference` with rfc3987-syntax, an Earley parser that takes
about half a millisecond per character (a 5,000-character string: seconds), and
`uri-template` with uri-template, whose ``re.split(r"(\\{[^\\}]*\\})", ...)`` is quadratic in
unclosed braces (100,000 ``{``: 7 s). The same grammars as regular expressions give the same
verdicts in linear time (a test compares them on random strings).
"""

from __future__ import annotations

import re
from typing import Any

import uri_template

__all__ = ["is_iri", "is_iri_reference", "is_uri_template"]

# rfc3987-syntax's grammar (syntax_rfc3987.lark), rule for rule.
_HEX = "[0-9A-Fa-f]"
_UNRESERVED = r"A-Za-z0-9\-._~"
_UCS = "\u00a0-\ud7ff\uf900-\ufdcf\ufdf0-\uffef"
_SUB_DELIMS = "!$&'()*+,;="
_PCT = f"%{_HEX}{_HEX}"


def _chars(extra: str) -> str:
    """One iunreserved, sub-delims or `extra` character, or a percent-encoded octet."""
    return f"(?:[{_UNRESERVED}{_UCS}{_SUB_DELIMS}{extra}]|{_PCT})"


_IPCHAR = _chars(":@")
_SEGMENT = f"{_IPCHAR}*"
_SEGMENTS = f"(?:/{_SEGMENT})*"
_PATH_ABSOLUTE = f"/(?:{_IPCHAR}+{_SEGMENTS})?"
_PATH_ROOTLESS = f"{_IPCHAR}+{_SEGMENTS}"
_PATH_NOSCHEME = f"{_chars('@')}+{_SEGMENTS}"
_H16 = f"{_HEX}{{1,4}}"
_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
_IPV4 = rf"{_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET}"
_LS32 = f"(?:{_H16}:{_H16}|{_IPV4})"
_IPV6 = "|".join(
    (
        f"(?:{_H16}:){{6}}{_LS32}",
        f"::(?:{_H16}:){{5}}{_LS32}",
        *(f"(?:{_H16}:){{{k}}}{_H16}::(?:{_H16}:){{{4 - k}}}{_LS32}" for k in range(5)),
        f"(?:{_H16}:){{5}}{_H16}::{_H16}",
        f"(?:{_H16}:){{6}}{_H16}::",
    )
)
_IP_LITERAL = rf"\[(?:{_IPV6}|v{_HEX}+\.[{_UNRESERVED}{_SUB_DELIMS}:]+)\]"
_HOST = f"(?:{_IP_LITERAL}|{_IPV4}|{_chars('')}*)"
_AUTHORITY = f"(?:{_chars(':')}*@)?{_HOST}(?::[0-9]*)?"
_QUERY = rf"(?:\?{_chars(':@/?' + chr(0xE000) + '-' + chr(0xF8FF))}*)?"
_FRAGMENT = f"(?:#{_chars(':@/?')}*)?"
_NET_PATH = f"//{_AUTHORITY}{_SEGMENTS}"
_IRI = (
    f"[A-Za-z][A-Za-z0-9+.-]*:(?:{_NET_PATH}|{_PATH_ABSOLUTE}|{_PATH_ROOTLESS}|){_QUERY}{_FRAGMENT}"
)
_RELATIVE = f"(?:{_NET_PATH}|{_PATH_ABSOLUTE}|{_PATH_NOSCHEME}|){_QUERY}{_FRAGMENT}"

_IRI_RE = re.compile(_IRI)
_IRI_REFERENCE_RE = re.compile(f"{_IRI}|{_RELATIVE}")
_TEMPLATE_BRACES = re.compile(r"[^{}]*(?:\{[^{}]*\}[^{}]*)*")
"""Braces as a URI template has them: closed, never nested."""


def is_iri(instance: Any) -> bool:
    """RFC 3987 ``IRI`` as rfc3987-syntax parses it."""
    return not isinstance(instance, str) or _IRI_RE.fullmatch(instance) is not None


def is_iri_reference(instance: Any) -> bool:
    """RFC 3987 ``IRI-reference`` as rfc3987-syntax parses it."""
    return not isinstance(instance, str) or _IRI_REFERENCE_RE.fullmatch(instance) is not None


def is_uri_template(instance: Any) -> bool:
    """`uri_template.validate`, after a linear check of the braces: a nested or unclosed one
    fails it anyway, and is what makes its split quadratic."""
    if not isinstance(instance, str):
        return True
    return _TEMPLATE_BRACES.fullmatch(instance) is not None and uri_template.validate(instance)
