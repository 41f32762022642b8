"""Format rewards: the reasoning/answer structure, and JSON output."""

from __future__ import annotations

import ipaddress
import itertools
import json
import re
from collections import Counter
from functools import partial
from typing import Any, Literal

import idna
import jsonschema
import jsonschema.exceptions

from .._exceptions import ConfigError
from ..models import Sample, Score
from ..registry import RewardFn, bounded, reward
from ._completion_parts import answer_part
from ._json_formats import is_iri, is_iri_reference, is_uri_template
from ._words import count_words, has_words

__all__ = ["json_valid", "think_format"]


_MARKUP = re.compile(
    # an element a browser does not show, with its content: <style>, <script>, `hidden`
    r"<(style|script|[A-Za-z][\w:.-]*(?=\s[^<>]*\bhidden\b))(?:\s[^<>]*)?>.*?(?:</\1\s*>|\Z)"
    r"|<!--.*?(?:-->|\Z)"  # a comment (unclosed: to the end, as a browser reads it)
    r"|<[!?][^>]*(?:>|\Z)"  # a declaration (<!DOCTYPE ...>) or what HTML reads as a comment
    r"|</?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>"  # a tag
    r"|&(?:#[0-9]+|#[xX][0-9A-Fa-f]+|[A-Za-z][A-Za-z0-9]*);"  # a character reference
    r"|&(?:nbsp|amp|lt|gt|quot|copy|reg)(?![A-Za-z0-9;])",  # one browsers read without `;`
    re.DOTALL | re.IGNORECASE,
)
"""HTML a reader does not see as words: hidden elements with their content, comments,
declarations, tags and character references."""


def _without_markup(text: str) -> str:
    """`text` with `_MARKUP` replaced by spaces (``<answer></answer>`` is no answer)."""
    return _MARKUP.sub(" ", text)


@reward("think_format")
def think_format(
    *,
    tag: str = "think",
    require_answer: bool = True,
    min_reasoning_words: int = 1,
    min_answer_words: int = 1,
) -> RewardFn:
    """1 iff the completion is one ``<think>...</think>`` block, then the answer.

    Rules, checked in order (detail ``rule`` names the first that fails): the completion
    starts with the open tag (leading whitespace allowed); there is exactly one open and one
    close tag, open before close (no nested or extra blocks); the reasoning inside has at
    least `min_reasoning_words` words; and, with `require_answer`, what follows the close tag
    has at least `min_answer_words`. Words are counted as a reader sees them (`_words`), after
    HTML tags, comments and character references are removed: ``<think>\u200b</think>\u200b``,
    fillers such as U+3164, ``<think>.</think>.`` and ``<answer></answer>`` have none.
    """
    if not re.fullmatch(r"[A-Za-z][\w-]*", tag):
        raise ConfigError(f"tag: must be a tag name such as 'think', got {tag!r}")
    if min_reasoning_words < 1 or min_answer_words < 1:
        raise ConfigError("min_reasoning_words, min_answer_words: must be at least 1")
    open_tag, close_tag = f"<{tag}>", f"</{tag}>"

    def fail(rule: str, reason: str) -> Score:
        return Score.ok(0.0, rule=rule, reason=reason)

    def score(sample: Sample) -> Score:
        text = sample.text.lstrip()
        if not text.startswith(open_tag):
            return fail("starts_with_open_tag", f"does not start with {open_tag}")
        opens, closes = text.count(open_tag), text.count(close_tag)
        if closes == 0:
            return fail("closed", f"{open_tag} is never closed")
        if opens != 1 or closes != 1:
            return fail(
                "single_block",
                f"expected one {open_tag} and one {close_tag}, found {opens} and {closes}",
            )
        reasoning, answer = (
            _without_markup(part) for part in text[len(open_tag) :].split(close_tag)
        )
        if not has_words(reasoning, min_reasoning_words):
            return fail("reasoning", f"fewer than {min_reasoning_words} words of reasoning")
        if require_answer and not has_words(answer, min_answer_words):
            return fail("answer", f"fewer than {min_answer_words} words after {close_tag}")
        return Score.ok(
            1.0, reasoning_words=count_words(reasoning), answer_words=count_words(answer)
        )

    return bounded(score, 0.0, 1.0)


_FENCE = re.compile(r"```(?i:json)?[ \t]*\n(.*?)```", re.DOTALL)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class _DuplicateKey(Exception):
    """An object naming a key twice: parsers disagree on which value counts (Python's keeps
    the last, others the first), so the schema would validate only one reading."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) < len(pairs):
        twice = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
        raise _DuplicateKey(f"duplicate key {twice!r} in a JSON object")
    return found


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, object_pairs_hook=_unique_keys)

_MAX_OBJECT_STARTS = 64
"""Braces tried as the start of the first object (each failed try costs up to the text's
length, so an unbounded number was quadratic: 200,000 ``{"`` ran for minutes)."""

_OBJECT_START = re.compile(r"\{(?=[ \t\n\r]*[\"}])")
"""A brace that can open a JSON object: a key or the closing brace follows it. LaTeX's
``\\frac{1}{2}`` and runs of ``{`` are never tried."""


def _first_object(text: str) -> tuple[Any, None] | tuple[None, str]:
    """The first of the first `_MAX_OBJECT_STARTS` candidate braces that parses."""
    for brace in itertools.islice(_OBJECT_START.finditer(text), _MAX_OBJECT_STARTS):
        try:
            return _DECODER.raw_decode(text, brace.start())[0], None
        except ValueError:
            continue
    return None, "no JSON object in the answer"


def _parse(text: str, extract: str) -> tuple[Any, None] | tuple[None, str]:
    """The JSON value the answer holds, or None and why not."""
    if extract == "fenced":
        fence = _FENCE.search(text)
        if fence is None:
            return None, "no ```json fenced block"
        text = fence.group(1)
    try:
        if extract == "first_object":
            return _first_object(text)
        return _DECODER.decode(text.strip()), None
    except _DuplicateKey as exc:
        return None, str(exc)
    except ValueError as exc:
        return None, f"not valid JSON: {exc}"


def _formats(schema: Any) -> set[str]:
    """Every ``format`` keyword value in a schema (a property named "format" is not one)."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("format"), str):
                found.add(node["format"])
            stack.extend(v for k, v in node.items() if k != "format" or not isinstance(v, str))
        elif isinstance(node, list):
            stack.extend(node)
    return found


_ATEXT = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]"
_LOCAL = re.compile(rf"{_ATEXT}+(?:\.{_ATEXT}+)*")
_IDN_ATEXT = r"[\w!#$%&'*+/=?^`{|}~-]"
_IDN_LOCAL = re.compile(rf"{_IDN_ATEXT}+(?:\.{_IDN_ATEXT}+)*")
_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def _email_domain(domain: str, idn: bool) -> bool:
    """A domain of at least two labels (the last not all digits), or an address literal."""
    if domain.startswith("[") and domain.endswith("]"):
        literal = domain[1:-1]
        literal = literal[5:] if literal.lower().startswith("ipv6:") else literal
        try:
            ipaddress.ip_address(literal)
        except ValueError:
            return False
        return True
    if idn:
        try:
            domain = idna.encode(domain, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError):
            return False
    labels = domain.split(".")
    return (
        len(domain) <= 253
        and len(labels) >= 2
        and all(_LABEL.fullmatch(label) for label in labels)
        and not labels[-1].isdigit()
    )


def _is_email(value: object, idn: bool = False) -> bool:
    """An address as RFC 5321 delivers it: a dot-atom local part (at most 64 characters;
    non-ASCII letters allowed for `idn-email`, RFC 6531) at a domain. jsonschema's own check
    is ``"@" in value``, so ``"@"`` would pass. Quoted local parts are refused."""
    if not isinstance(value, str):
        return True
    local, at, domain = value.rpartition("@")
    if not at or len(value) > 254 or not 0 < len(local) <= 64:
        return False
    pattern = _IDN_LOCAL if idn else _LOCAL
    return bool(pattern.fullmatch(local)) and _email_domain(domain, idn)


_OWN_CHECKS = {
    "email": partial(_is_email, idn=False),
    "idn-email": partial(_is_email, idn=True),
    "iri": is_iri,
    "iri-reference": is_iri_reference,
    "uri-template": is_uri_template,
}
"""Checks replacing jsonschema's: a real one for email, linear-time ones for the rest."""


def _format_checker(base: jsonschema.FormatChecker) -> jsonschema.FormatChecker:
    """`base` (a draft's format checker) with `_OWN_CHECKS` for the formats it knows."""
    checker = jsonschema.FormatChecker(formats=())
    checker.checkers = dict(base.checkers)
    for name, check in _OWN_CHECKS.items():
        if name in checker.checkers:
            checker.checkers[name] = (check, ())
    return checker


@reward("json")
def json_valid(
    *,
    schema: dict[str, Any] | None = None,
    extract: Literal["whole", "fenced", "first_object"] = "whole",
) -> RewardFn:
    """1 if the answer is valid JSON and, when `schema` is given, valid against that schema.

    `extract`: ``whole`` (the stripped answer part is the JSON), ``fenced`` (the first
    `````json`` or unlabelled fenced block), ``first_object`` (the first ``{...}`` that parses,
    among the first 64 braces followed by a key or ``}``). Strict JSON: NaN and Infinity are
    rejected, and so is an object naming a key twice (parsers disagree on which value counts).
    The schema's own ``$schema`` picks the draft (latest by default); it is checked here, so a
    bad schema fails the spec, not every sample.
    ``format`` keywords (``email``, ``date-time``, ``uri``...) are asserted, not just noted as
    JSON Schema allows: a schema naming a format no installed checker knows is refused, so a
    format is never silently unchecked. The checks are jsonschema's (with its
    `format-nongpl` extras), except `email` and `idn-email`, whose check there is only
    ``"@" in value``: here an address must be a dot-atom local part at a domain of two or
    more labels (`_is_email`); and `iri`, `iri-reference` and `uri-template`, whose checkers
    there take seconds on a few thousand characters: here the same grammars in linear time
    (`_json_formats`). JSON nested too deeply to parse is what the policy wrote: 0, with the
    reason (never `invalid`).
    """
    validator: jsonschema.protocols.Validator | None = None
    if schema is not None:
        cls = jsonschema.validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except jsonschema.exceptions.SchemaError as exc:
            raise ConfigError(f"schema: invalid JSON Schema: {exc.message}") from exc
        checker = _format_checker(cls.FORMAT_CHECKER)
        unknown = sorted(_formats(schema) - set(checker.checkers))
        if unknown:
            raise ConfigError(
                f"schema: no checker for format {unknown[0]!r} (install "
                "'jsonschema[format-nongpl]', or drop the format)"
            )
        validator = cls(schema, format_checker=checker)

    def score(sample: Sample) -> Score:
        try:
            return check(answer_part(sample.text))
        except RecursionError:
            return Score.ok(0.0, reason="JSON nested too deeply to parse or validate")

    def check(answer: str) -> Score:
        value, problem = _parse(answer, extract)
        if problem is not None:
            return Score.ok(0.0, reason=problem)
        if validator is not None:
            error = jsonschema.exceptions.best_match(validator.iter_errors(value))
            if error is not None:
                return Score.ok(
                    0.0,
                    reason="does not match the schema",
                    error=error.message,
                    path=error.json_path,
                )
        return Score.ok(1.0)

    return bounded(score, 0.0, 1.0)
