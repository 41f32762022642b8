"""The `gui_action` reward (UI-R1): action type, its argument, and the format.

Lu et al. 2025, "UI-R1: Enhancing Efficient Action Prediction of GUI Agents by Reinforcement
Learning" (arXiv 2503.21620); the contract is that of UI-R1's three rewards, written anew:

- `action`: 1 when the predicted action type is the gold's (case-insensitive);
- `argument`: when the type matches, 1 when every argument the gold gives is met: a click
  point inside the gold `box` (edges included, after rescaling as in `boxes`), the typed
  `text` (case and spacing aside), the scroll `direction`; a gold with none of them (e.g.
  ``navigate_back``) gives 1 for the right type, as UI-R1 does; 0 otherwise;
- `format`: 1 when the completion is ``<think>...</think>`` then ``<answer>...</answer>``
  and nothing else (only the answer block when `think` is false).

The reward is their weighted sum (1 each by default, as UI-R1 adds them), each term in
`detail`. The action is read from the answer as a JSON or Python-literal object (UI-R1 writes
``[{'action': 'click', 'coordinate': [x, y]}]``): keys `action`/`action_type`, a point as
`coordinate`/`point`/`position` or `x` and `y`, `text`/`content`/`value`, `direction`.
Several different actions in one answer are a hedge: both action terms are 0.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import re
from typing import Any

from ...models import MAX_NESTING, Sample, Score, nested_deeper_than
from ...registry import RewardFn, bounded, checks_references, problem_of, reward
from .._completion_parts import tagged_answer
from .boxes import as_float, gold_and_scale, gold_box

__all__ = ["Action", "gui_action", "layout_ok", "parse_action"]

_MAX_LITERAL_CHARS = 10_000
"""Longest object literal parsed (Python literals are parsed by `ast`, bounded here)."""
_MAX_STARTS = 32
"""Brackets tried as the start of the action object."""

_POINT_KEYS = ("coordinate", "point", "position", "click_point", "coordinates")
_TEXT_KEYS = ("text", "content", "value")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_SPACES = re.compile(r"\s+")

Action = dict[str, Any]
"""A normalised action: ``type`` and, when given, ``point`` (x, y), ``text``, ``direction``."""


def _balanced(text: str, start: int) -> str | None:
    """The bracketed span opening at `start` (quotes respected), or None if unclosed."""
    pairs = {"[": "]", "{": "}"}
    stack = [pairs[text[start]]]
    quote: str | None = None
    i = start + 1
    while i < len(text) and i - start < _MAX_LITERAL_CHARS:
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char in pairs:
            stack.append(pairs[char])
        elif char in "]}":
            if char != stack.pop():
                return None
            if not stack:
                return text[start : i + 1]
        i += 1
    return None


def _literal(span: str) -> Any:
    try:
        value = json.loads(span)
    except (ValueError, RecursionError):
        try:
            value = ast.literal_eval(span)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
    return None if nested_deeper_than(value, MAX_NESTING) else value


def _point(value: Any) -> tuple[float, float] | None:
    if isinstance(value, str):
        value = [float(n) for n in _NUMBER.findall(value)]
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    x, y = as_float(value[0]), as_float(value[1])
    return (x, y) if math.isfinite(x) and math.isfinite(y) else None


def _normalise(item: dict[str, Any]) -> Action | None:
    kind = item.get("action", item.get("action_type"))
    if not isinstance(kind, str) or not kind.strip():
        return None
    action: Action = {"type": kind.strip().lower()}
    raw_point = next((item[k] for k in _POINT_KEYS if k in item), None)
    if raw_point is None and "x" in item and "y" in item:
        raw_point = [item["x"], item["y"]]
    if raw_point is not None:
        action["point"] = _point(raw_point)
    text = next((item[k] for k in _TEXT_KEYS if k in item), None)
    if text is not None:
        action["text"] = str(text)
    if isinstance(item.get("direction"), str):
        action["direction"] = item["direction"]
    return action


def parse_action(text: str) -> list[Action]:
    """The distinct actions the answer states (the first object literal that holds any)."""
    answer = tagged_answer(text)
    starts = (m.start() for m in re.finditer(r"[\[{]", answer))
    for start in itertools.islice(starts, _MAX_STARTS):
        span = _balanced(answer, start)
        value = _literal(span) if span is not None else None
        items = value if isinstance(value, list) else [value]
        actions = [a for item in items if isinstance(item, dict) and (a := _normalise(item))]
        if actions:
            unique: list[Action] = []
            for action in actions:
                if action not in unique:
                    unique.append(action)
            return unique
    return []


def _same_text(a: str, b: str) -> bool:
    return _SPACES.sub(" ", a).strip().casefold() == _SPACES.sub(" ", b).strip().casefold()


def _gold(reference: Any) -> dict[str, Any] | str:
    if not isinstance(reference, dict) or not isinstance(reference.get("action"), str):
        return "reference must be {'action': ..., 'box': [...], 'text': ..., 'direction': ...}"
    gold: dict[str, Any] = {"type": reference["action"].strip().lower()}
    if reference.get("box") is not None:
        box = gold_box(reference["box"])
        if box is None:
            return "reference 'box' must be [x1, y1, x2, y2] with an area"
        gold["box"] = box
    for key in ("text", "direction"):
        if reference.get(key) is not None:
            if not isinstance(reference[key], str):
                return f"reference {key!r} must be a string"
            gold[key] = reference[key]
    return gold


def _argument(predicted: Action, gold: dict[str, Any], scale: Any) -> tuple[float, str | None]:
    """1 when every argument the gold gives is met, with the reason when not."""
    if "box" in gold:
        point = predicted.get("point")
        if point is None:
            return 0.0, "no click point [x, y]"
        x, y = (point[0] * scale[0], point[1] * scale[1]) if scale else point
        x1, y1, x2, y2 = gold["box"]
        if not (x1 <= x <= x2 and y1 <= y <= y2):
            return 0.0, f"point ({x:g}, {y:g}) is outside the gold box"
    if "text" in gold and not _same_text(str(predicted.get("text", "")), gold["text"]):
        return 0.0, "typed text differs"
    if "direction" in gold and not _same_text(
        str(predicted.get("direction", "")), gold["direction"]
    ):
        return 0.0, "direction differs"
    return 1.0, None


_SPACE_RUN = re.compile(r"\s*")


def layout_ok(text: str, think: bool) -> bool:
    """UI-R1's format: ``<think>...</think>``, optional whitespace, ``<answer>...</answer>``
    and nothing else (only the answer block when `think` is false), as UI-R1's
    ``fullmatch(r"<think>.*?</think>\\s*<answer>.*?</answer>")``, found in one pass: the
    earliest ``</think>`` followed by an ``<answer>`` decides, a later one only ends later."""
    if not text.endswith("</answer>"):
        return False
    if not think:
        return text.startswith("<answer>") and len(text) >= len("<answer></answer>")
    if not text.startswith("<think>"):
        return False
    close = text.find("</think>", len("<think>"))
    while close >= 0:
        after = _SPACE_RUN.match(text, close + len("</think>")).end()  # type: ignore[union-attr]
        if text.startswith("<answer>", after):
            return after + len("<answer>") <= len(text) - len("</answer>")
        close = text.find("</think>", close + 1)
    return False


@reward("gui_action")
def gui_action(
    *,
    think: bool = True,
    action_weight: float = 1.0,
    argument_weight: float = 1.0,
    format_weight: float = 1.0,
) -> RewardFn:
    """UI-R1's reward: action type + its argument (click in box, text, direction) + format."""

    def score(sample: Sample) -> Score:
        inputs = gold_and_scale(sample, _gold, "no reference action")
        if isinstance(inputs, Score):
            return inputs
        gold, scale = inputs
        r_format = 1.0 if layout_ok(sample.text.strip(), think) else 0.0
        actions = parse_action(sample.text)
        r_action, r_argument, reason = 0.0, 0.0, None
        if not actions:
            reason = "no action in the answer"
        elif len(actions) > 1:
            reason = f"{len(actions)} different actions: the answer must commit to one"
        elif actions[0]["type"] != gold["type"]:
            reason = f"action {actions[0]['type']!r} is not {gold['type']!r}"
        else:
            r_action = 1.0
            r_argument, reason = _argument(actions[0], gold, scale)
        total = action_weight * r_action + argument_weight * r_argument + format_weight * r_format
        detail: dict[str, Any] = {
            "action": r_action,
            "argument": r_argument,
            "format": r_format,
            "predicted": actions[0] if len(actions) == 1 else actions,
        }
        if reason:
            detail["reason"] = reason
        return Score.ok(total, **detail)

    weights = (action_weight, argument_weight, format_weight)
    low, high = sum(min(0.0, w) for w in weights), sum(max(0.0, w) for w in weights)
    return checks_references(bounded(score, low, high), problem_of(_gold))
