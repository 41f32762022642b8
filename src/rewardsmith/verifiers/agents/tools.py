"""The `tool_call` reward: ToolRL's format and correctness terms.

Qian et al. 2025, "ToolRL: Reward is All Tool Learning Needs" (arXiv 2504.13958); the
contract is that of ToolRL's `rlla.py`, written anew here. The reward is
``format_weight * R_format + correctness_weight * R_correct``:

- ``R_format`` is 1 when the answer has the layout the gold asks for (ToolRL: a
  ``<think>`` block, then a ``<tool_call>`` block with one JSON call per line and/or a
  ``<response>`` block, nothing else), else 0;
- ``R_correct = (max - min) * S / S_max + min`` in [min, max] = [-3, 3], with
  ``S = J(gold names, predicted names) + sum over gold calls of the best unused predicted call
  of the same name: J(parameter names) + number of equal values``, J the multiset Jaccard
  index (1 for identical lists), ``S_max = 1 + sum over gold calls of (1 + number of
  parameters)``. Values are equal with their JSON types (`same_value`: ``true`` is not ``1``,
  where ToolRL's Python ``==`` says it is). An exact match earns max, an answer whose calls
  cannot be read (or that makes none) min, and a gold without calls the middle of the range
  (ToolRL's 0).

ToolRL's environment-variable variants are parameters: `granularity` ``coarse``
(COARSEREWARD: max for an exact match, else min) or ``intermediate`` (INTERMEDIATEREWARD: a
gold call counts 1 when an identical call exists), `strict_lists` (REFINEDREWARD: a list of
names scores 1 only when identical), `correct_max`/`correct_min` (CORRECTMAX1: 1/-1), and
`schedule` ``linear`` (SCHEDULEREWARD) or ``two_stage`` (MAX1STEP30MAX3), which read the
training step from ``metadata.step``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..._exceptions import ConfigError
from ...models import Sample, Score
from ...registry import RewardFn, bounded, checks_references, reward
from .tool_calls import Call, CallError, Parsed, as_call, calls_from_text, parse_calls

__all__ = [
    "Gold",
    "correctness_match",
    "gold_calls",
    "jaccard",
    "same_calls",
    "same_value",
    "tool_call",
]

Granularity = Literal["fine", "intermediate", "coarse"]
Schedule = Literal["constant", "linear", "two_stage"]

_LINEAR_STEPS = 150
"""SCHEDULEREWARD: steps over which the ranges move from [-2, 2] to their configured values."""
_TWO_STAGE_STEP = 30
"""MAX1STEP30MAX3: the step where correctness reaches its full range and format halves."""


def jaccard(gold: Sequence[str], predicted: Sequence[str], *, strict: bool = False) -> float:
    """ToolRL's `match_score`: 1 for identical lists, else the multiset Jaccard index
    (0 when either is empty; 0 for any difference when `strict`)."""
    if list(gold) == list(predicted):
        return 1.0
    if strict or not gold or not predicted:
        return 0.0
    a, b = Counter(gold), Counter(predicted)
    shared = sum((a & b).values())
    return shared / (len(gold) + len(predicted) - shared)


def same_value(a: Any, b: Any) -> bool:
    """Two JSON values equal with their types: ``true`` is not ``1`` and ``"1"`` is not ``1``
    (Python's ``==`` says ``True == 1``); numbers compare by value (``1`` equals ``1.0``, as
    JSON does not tell them apart); lists in order, objects key by key."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(v, b[k]) for k, v in a.items())
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def same_calls(gold: Sequence[Call], predicted: Sequence[Call]) -> bool:
    """The same calls in the same order, values compared by `same_value`."""
    return len(gold) == len(predicted) and all(
        name == other and same_value(params, values)
        for (name, params), (other, values) in zip(gold, predicted, strict=True)
    )


def correctness_match(
    gold: Sequence[Call],
    predicted: Sequence[Call],
    *,
    granularity: Granularity = "fine",
    strict: bool = False,
) -> tuple[float, float]:
    """``(S, S_max)`` of the module docstring; each gold call (in order) takes the best
    unused predicted call of its name, the first on ties, only when it scores above 0."""
    names = jaccard([n for n, _ in gold], [n for n, _ in predicted], strict=strict)
    total, best_possible = names, 1.0
    used: set[int] = set()
    for name, params in gold:
        best_possible += 1.0 if granularity == "intermediate" else 1.0 + len(params)
        best, best_index = 0.0, None
        for i, (other, values) in enumerate(predicted):
            if i in used or other != name:
                continue
            if granularity == "intermediate":
                if same_value(values, params):
                    best, best_index = 1.0, i
                    break
                continue
            keys = jaccard(list(params), list(values), strict=strict)
            equal = sum(1.0 for k, v in params.items() if k in values and same_value(values[k], v))
            if keys + equal > best:
                best, best_index = keys + equal, i
        if best_index is not None:
            used.add(best_index)
            total += best
    return total, best_possible


@dataclass(frozen=True)
class Gold:
    """What the reference expects."""

    calls: list[Call]
    """The expected calls, in order (empty: the answer should call nothing)."""
    response: bool
    """Whether a text response (ToolRL's ``<response>`` block) is expected too."""


def gold_calls(reference: Any) -> Gold:
    """The reference as a `Gold`; raises `ValueError` for a bad reference.

    ``{"tool_calls": [{"name", "parameters"|"arguments"}, ...], "response": ...}`` (a
    `response` key, any value, says a text reply is expected as well), or ToolRL's ground
    truth text (``<tool_call>`` block lines and/or a ``<response>`` block).
    """
    if isinstance(reference, str):
        parsed = calls_from_text(reference) if "<tool_call>" in reference else Parsed([], "none")
        if parsed.problem is not None:
            raise ValueError(f"reference tool calls: {parsed.problem}")
        return Gold(parsed.calls, "<response>" in reference)
    if not isinstance(reference, dict) or not isinstance(reference.get("tool_calls"), list):
        raise ValueError("reference must be {'tool_calls': [...]} or ToolRL's ground truth text")
    try:
        calls = [as_call(item) for item in reference["tool_calls"]]
    except CallError as exc:
        raise ValueError(f"reference tool call: {exc}") from None
    return Gold(calls, "response" in reference)


def _reference_problem(reference: Any) -> str | None:
    """What makes `reference` invalid (`gold_calls` refuses it), or None."""
    try:
        gold_calls(reference)
    except ValueError as exc:
        return str(exc)
    return None


_HEAD_OPEN, _HEAD_CLOSE = "<think>", "</think>\n"
_CALL_OPEN, _CALL_CLOSE = "<tool_call>\n", "\n</tool_call>"
_REPLY_OPEN, _REPLY_CLOSE = "<response>", "</response>"


def _wraps(text: str, opening: str, closing: str) -> bool:
    """Whether `text` is `opening`, anything, `closing` (the two not overlapping)."""
    return (
        len(text) >= len(opening) + len(closing)
        and text.startswith(opening)
        and text.endswith(closing)
    )


def _layout_ok(text: str, gold: Gold, think: bool) -> bool:
    """ToolRL's layout: a ``<think>`` block and a newline (unless `think` is false), then the
    ``<tool_call>`` block (a newline after its opening tag and before its closing tag) and/or
    the ``<response>`` block the gold asks for, joined by a newline, and nothing else. Each
    of those blocks appears exactly once (ToolRL counts the tags), so each is found by
    `str.find`: one linear pass where ToolRL's lazy regex rescans from every ``</think>``."""
    if not gold.calls and not gold.response:
        if think:
            return _wraps(text, "<think>", "</think>")
        return "<tool_call>" not in text
    tags = (["<tool_call>"] if gold.calls else []) + (["<response>"] if gold.response else [])
    if any(text.count(tag) != 1 or text.count(tag.replace("<", "</")) != 1 for tag in tags):
        return False
    start = text.find(tags[0])
    head, body = text[:start], text[start:]
    if not (_wraps(head, _HEAD_OPEN, _HEAD_CLOSE) if think else head == ""):
        return False
    if not gold.calls:
        return _wraps(body, _REPLY_OPEN, _REPLY_CLOSE)
    end = body.find("</tool_call>") + len("</tool_call>")
    call, rest = body[:end], body[end:]
    if not _wraps(call, _CALL_OPEN, _CALL_CLOSE):
        return False
    if not gold.response:
        return rest == ""
    return rest.startswith("\n") and _wraps(rest[1:], _REPLY_OPEN, _REPLY_CLOSE)


def _format_ok(sample: Sample, parsed: Parsed, gold: Gold, rule: str, think: bool) -> bool:
    if rule == "parsed" or parsed.source == "tool_calls":
        return parsed.problem is None and bool(parsed.calls) == bool(gold.calls)
    return _layout_ok(sample.text.strip(), gold, think)


def _ranges(schedule: Schedule, step: int, low: float, high: float) -> tuple[float, ...]:
    """(format min, format max, correctness min, correctness max) at `step`."""
    f_low, f_high = 0.0, 1.0
    if schedule == "two_stage":
        if step < _TWO_STAGE_STEP:
            low, high = low / 3, high / 3
        else:
            f_low, f_high = f_low / 2, f_high / 2
    elif schedule == "linear":
        t = step / _LINEAR_STEPS
        f_high = max(1.0, 2 - (2 - f_high) * t)
        f_low = min(-1.0, -2 + (2 + f_low) * t)  # ToolRL's clamp: stays at -1 from step 75
        t = min(t, 1.0)
        low, high = -2 + (low + 2) * t, 2 + (high - 2) * t
    return f_low, f_high, low, high


_BREAKPOINTS = {
    "constant": (0,),
    "two_stage": (0, _TWO_STAGE_STEP),
    "linear": (0, _LINEAR_STEPS // 2, _LINEAR_STEPS),
}
"""Steps where a schedule's ranges change slope: the reward's extremes over all steps."""


def _bounds(
    schedule: Schedule, low: float, high: float, format_weight: float, correctness_weight: float
) -> tuple[float, float]:
    """The lowest and highest reward at any training step."""
    lows, highs = [], []
    for step in _BREAKPOINTS[schedule]:
        f_low, f_high, c_low, c_high = _ranges(schedule, step, low, high)
        f = sorted((format_weight * f_low, format_weight * f_high))
        c = sorted((correctness_weight * c_low, correctness_weight * c_high))
        lows.append(f[0] + c[0])
        highs.append(f[1] + c[1])
    return min(lows), max(highs)


def _step(sample: Sample) -> int | None:
    step = sample.metadata.get("step")
    if isinstance(step, int) and not isinstance(step, bool) and step >= 0:
        return step
    return None


@reward("tool_call")
def tool_call(
    *,
    granularity: Granularity = "fine",
    strict_lists: bool = False,
    correct_max: float = 3.0,
    correct_min: float = -3.0,
    schedule: Schedule = "constant",
    format_rule: Literal["toolrl", "parsed"] = "toolrl",
    think: bool = True,
    format_weight: float = 1.0,
    correctness_weight: float = 1.0,
) -> RewardFn:
    """ToolRL's reward: format (0/1) plus tool-call correctness in [correct_min, correct_max].

    `format_rule`: ``toolrl`` checks ToolRL's text layout (a ``<think>`` block first unless
    `think` is false); ``parsed`` only asks that the calls parse and that the answer calls
    tools exactly when the gold does (structured `tool_calls` are always judged this way).
    `detail.format` and `detail.correctness` are the two terms before their weights.
    """
    if not correct_min < correct_max:
        raise ConfigError(f"correct_min ({correct_min}) must be below correct_max ({correct_max})")

    def score(sample: Sample) -> Score:
        if sample.reference is None:
            return Score.failed("not_applicable", "no reference tool calls")
        try:
            gold = gold_calls(sample.reference)
        except ValueError as exc:
            return Score.failed("invalid", str(exc))
        step = 0
        if schedule != "constant":
            found = _step(sample)
            if found is None:
                return Score.failed(
                    "invalid", f"schedule {schedule!r} needs metadata.step, the training step"
                )
            step = found
        f_low, f_high, low, high = _ranges(schedule, step, correct_min, correct_max)
        parsed = parse_calls(sample)
        formatted = _format_ok(sample, parsed, gold, format_rule, think)
        r_format = f_high if formatted else f_low
        detail: dict[str, Any] = {
            "calls": [{"name": n, "parameters": p} for n, p in parsed.calls],
            "gold": [{"name": n, "parameters": p} for n, p in gold.calls],
            "source": parsed.source,
        }
        if not gold.calls:
            r_correct = (low + high) / 2
            detail["reason"] = "the gold makes no call: correctness is neutral"
        elif parsed.problem is not None or not parsed.calls:
            r_correct = low
            detail["reason"] = parsed.problem or "no tool call in the answer"
        elif same_calls(gold.calls, parsed.calls):
            r_correct = high
        elif granularity == "coarse":
            r_correct = low
            detail["reason"] = "not an exact match (coarse)"
        else:
            match, best = correctness_match(
                gold.calls, parsed.calls, granularity=granularity, strict=strict_lists
            )
            r_correct = high if match == best else (high - low) * match / best + low
            detail.update(match=match, max_match=best)
        total = format_weight * r_format + correctness_weight * r_correct
        return Score.ok(total, format=r_format, correctness=r_correct, **detail)

    weights = (format_weight, correctness_weight)
    scored = bounded(score, *_bounds(schedule, correct_min, correct_max, *weights))
    return checks_references(scored, _reference_problem)
