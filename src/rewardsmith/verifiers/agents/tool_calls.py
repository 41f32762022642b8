"""Tool calls in a completion: OpenAI `tool_calls`, Hermes/Qwen ``<tool_call>`` blocks, or
plain JSON, each read as a list of ``(name, parameters)``.

Where calls come from, first match wins:

1. the final assistant message's `tool_calls` (OpenAI format: ``{"function": {"name",
   "arguments": "<JSON text>"}}``), as a server with a tool parser returns them;
2. ``<tool_call>...</tool_call>`` blocks in the answer (after any ``<think>``): each block is
   one JSON call, a JSON list of calls, or one JSON call per line (ToolRL's layout);
3. the answer itself as JSON (optionally in one fenced block): a call or a list of calls.

A call is an object with a string `name` and a `parameters` (or `arguments`) object, which
may also be given as JSON text, optionally wrapped as ``{"type": "function", "function":
{...}}``. Anything else makes the answer unparseable, with the reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ...models import MAX_NESTING, Sample, nested_deeper_than
from .._completion_parts import answer_part, tag_blocks

__all__ = ["Call", "Parsed", "as_call", "calls_from_text", "parse_calls"]

Call = tuple[str, dict[str, Any]]
"""A tool call: its name and its parameters (in the order given)."""

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_FENCED = re.compile(r"\A```[a-zA-Z]*[ \t]*\n(.*?)\n?```\Z", re.DOTALL)


class CallError(ValueError):
    """A call that is not a name with a parameters object."""


@dataclass(frozen=True)
class Parsed:
    """The calls an answer makes, or why they cannot be read."""

    calls: list[Call]
    """The calls, in order (empty when the answer makes none, or on a problem)."""
    source: str
    """`tool_calls`, `tool_call_tags`, `json` or `none` (no call found)."""
    problem: str | None = None
    """Why the answer's calls cannot be read (unparseable), else None."""


def as_call(item: Any) -> Call:
    """One call from its JSON form; raises `CallError` with the reason."""
    if not isinstance(item, dict):
        raise CallError(f"a call must be an object, got {type(item).__name__}")
    if isinstance(item.get("function"), dict):
        item = item["function"]
    name = item.get("name")
    if not isinstance(name, str):
        raise CallError("a call needs a string 'name'")
    params = item.get("parameters", item.get("arguments"))
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except ValueError as exc:
            raise CallError(f"call {name!r}: arguments are not JSON: {exc}") from None
    if not isinstance(params, dict):
        raise CallError(f"call {name!r} needs a 'parameters' (or 'arguments') object")
    if nested_deeper_than(params, MAX_NESTING):
        raise CallError(f"call {name!r}: arguments nested more than {MAX_NESTING} levels deep")
    return name, params


def _calls_in(value: Any) -> list[Call]:
    items = value if isinstance(value, list) else [value]
    return [as_call(item) for item in items]


_NOT_JSON = object()


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


def _block_calls(block: str) -> list[Call]:
    """One ``<tool_call>`` block: a JSON call or list, else one JSON call per line."""
    body = block.strip()
    value = _json(body)
    if value is not _NOT_JSON:
        return _calls_in(value)
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    if not lines:
        raise CallError("empty <tool_call> block")
    calls = []
    for line in lines:
        value = _json(line)
        if value is _NOT_JSON:
            raise CallError(f"<tool_call> line is not JSON: {line[:80]!r}")
        calls.append(as_call(value))
    return calls


def _tagged(text: str) -> Parsed:
    if text.count(_OPEN) != text.count(_CLOSE):
        return Parsed([], "tool_call_tags", "unbalanced <tool_call> tags")
    blocks = (text[s + len(_OPEN) : e - len(_CLOSE)] for s, e in tag_blocks(text, _OPEN, _CLOSE))
    try:
        calls = [c for block in blocks for c in _block_calls(block)]
    except CallError as exc:
        return Parsed([], "tool_call_tags", str(exc))
    return Parsed(calls, "tool_call_tags")


def _plain_json(text: str) -> Parsed:
    body = text.strip()
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body.startswith(("{", "[")):
        return Parsed([], "none")
    value = _json(body)
    if value is _NOT_JSON:
        return Parsed([], "json", "the answer is not valid JSON")
    try:
        return Parsed(_calls_in(value), "json")
    except CallError as exc:
        return Parsed([], "json", str(exc))


def calls_from_text(text: str) -> Parsed:
    """Calls written in text: ``<tool_call>`` blocks, else the whole text as JSON."""
    try:
        return _tagged(text) if _OPEN in text or _CLOSE in text else _plain_json(text)
    except RecursionError:
        return Parsed([], "json", "JSON nested too deeply")


def parse_calls(sample: Sample) -> Parsed:
    """The calls of the sample's final turn (see the module docstring for the order)."""
    final = sample.final_turn
    if final is not None and final.tool_calls:
        try:
            return Parsed(_calls_in(final.tool_calls), "tool_calls")
        except CallError as exc:
            return Parsed([], "tool_calls", str(exc))
        except RecursionError:
            return Parsed([], "tool_calls", "arguments nested too deeply")
    return calls_from_text(answer_part(sample.text))
