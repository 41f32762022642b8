"""Grounding rewards (VLM-R1): `iou` for one box, `detection` for a set of labelled boxes.

Shen et al. 2025, "VLM-R1: A Stable and Generalizable R1-style Large Vision-Language Model"
(arXiv 2504.07615); the contracts are those of VLM-R1's rewards, written anew here.

Boxes are ``[x1, y1, x2, y2]`` (top-left, bottom-right), read from the answer (the last
``<answer>`` block if any, after the reasoning): bracketed quadruples, JSON objects with
``bbox_2d`` (Qwen2.5-VL's format, with a ``label``), and ``<box>...</box>`` holding four
numbers in any brackets (``<box>(x1,y1),(x2,y2)</box>``). When the model saw a resized image,
``metadata.model_image_size`` ``[w, h]`` and ``metadata.image_size`` ``[W, H]`` (the gold's
frame) rescale predicted x by W/w and y by H/h.

A degenerate predicted box (x2 <= x1 or y2 <= y1, or a non-finite number: an integer too large
for a float counts as infinite) overlaps nothing and scores 0, with the reason; a degenerate
gold box is an `invalid` reference. VLM-R1 counts an
overlap of exactly one pixel as none; here IoU is the plain area ratio.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..._exceptions import ConfigError
from ...models import MAX_NESTING, Sample, Score, nested_deeper_than
from ...registry import RewardFn, bounded, checks_references, problem_of, reward
from .._completion_parts import tag_blocks, tagged_answer

__all__ = [
    "Box",
    "Labelled",
    "as_float",
    "detection",
    "detection_score",
    "find_boxes",
    "gold_and_scale",
    "iou",
    "iou_of",
    "scale_of",
]

Box = tuple[float, float, float, float]

_NUM = r"-?\d+(?:\.\d+)?"
_QUAD = re.compile(rf"\[\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*,\s*({_NUM})\s*\]")
_NUMBER = re.compile(_NUM)
_EMPTY = re.compile(r"\[\s*\]|none|```json\s*\[\s*\]\s*```", re.IGNORECASE)
_BOX_KEYS = ("bbox_2d", "bbox", "box")
_MAX_JSON_STARTS = 64
"""Brackets tried as the start of a JSON answer (bounds the work on bracket-heavy text)."""


@dataclass(frozen=True)
class Labelled:
    """A box and its label (None when the answer gives none)."""

    box: Box
    label: str | None = None


def as_float(value: int | float) -> float:
    """`value` as a float; an integer beyond the float range (JSON allows any number of
    digits) is infinite, never an `OverflowError`."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def degenerate(box: Sequence[float]) -> bool:
    """No area: x2 <= x1, y2 <= y1, or a coordinate that is not a finite number."""
    if len(box) != 4:
        return True
    x1, y1, x2, y2 = box
    finite = math.isfinite(x1) and math.isfinite(y1) and math.isfinite(x2) and math.isfinite(y2)
    return not finite or x2 <= x1 or y2 <= y1


def _may_reach(a: Box, b: Box, threshold: float) -> bool:
    """Whether two non-degenerate boxes can have an IoU of `threshold`: they overlap, and the
    smaller area is at least `threshold` of the larger (IoU <= min area / max area). A cheap
    test that spares `iou` most pairs of an answer listing many boxes."""
    if not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]):
        return False
    area_a, area_b = (a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])
    return min(area_a, area_b) >= threshold * max(area_a, area_b)


def iou(a: Box, b: Box) -> float:
    """Intersection over union of two boxes; 0 when either is degenerate."""
    if degenerate(a) or degenerate(b):
        return 0.0
    width = min(a[2], b[2]) - max(a[0], b[0])
    height = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(0.0, width) * max(0.0, height)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    value = inter / union if union > 0 else 0.0
    return value if math.isfinite(value) else 0.0


def _pair(value: Any) -> tuple[float, float] | None:
    if (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        return as_float(value[0]), as_float(value[1])
    return None


def scale_of(metadata: dict[str, Any]) -> tuple[float, float] | str | None:
    """(x factor, y factor) from the model's image frame to the gold's; None without both
    sizes; a message when the sizes are malformed (an `invalid` sample)."""
    original, seen = metadata.get("image_size"), metadata.get("model_image_size")
    if original is None and seen is None:
        return None
    size, model = _pair(original), _pair(seen)
    if size is None or model is None or not all(map(math.isfinite, (*size, *model))):
        return "metadata.image_size and metadata.model_image_size must both be [width, height]"
    return size[0] / model[0], size[1] / model[1]


def rescale(box: Box, scale: tuple[float, float] | None) -> Box:
    """`box` in the gold's frame."""
    if scale is None:
        return box
    sx, sy = scale
    return box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy


T = TypeVar("T")


def gold_and_scale(
    sample: Sample, parse: Callable[[Any], T | str], nothing: str
) -> tuple[T, tuple[float, float] | None] | Score:
    """The parsed reference and the rescaling factors, or the score that stands instead:
    `not_applicable` without a reference, `invalid` for a bad one or malformed sizes."""
    if sample.reference is None:
        return Score.failed("not_applicable", nothing)
    gold = parse(sample.reference)
    if isinstance(gold, str):
        return Score.failed("invalid", gold)
    scale = scale_of(sample.metadata)
    if isinstance(scale, str):
        return Score.failed("invalid", scale)
    return gold, scale


def _labelled_json(answer: str) -> list[Labelled] | None:
    """Boxes from the first JSON value of the answer holding ``bbox_2d`` objects."""
    decoder = json.JSONDecoder()
    starts = (m.start() for m in re.finditer(r"[\[{]", answer))
    for start in itertools.islice(starts, _MAX_JSON_STARTS):
        try:
            value, _ = decoder.raw_decode(answer, start)
        except (ValueError, RecursionError):
            continue
        if nested_deeper_than(value, MAX_NESTING):
            continue
        items = value if isinstance(value, list) else [value]
        found = [_item(item) for item in items if isinstance(item, dict)]
        if found and all(f is not None for f in found):
            return [f for f in found if f is not None]
    return None


def _item(item: dict[str, Any]) -> Labelled | None:
    coords = next((item[k] for k in _BOX_KEYS if k in item), None)
    if not isinstance(coords, list) or len(coords) != 4:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in coords):
        return None
    label = item.get("label")
    box = (as_float(coords[0]), as_float(coords[1]), as_float(coords[2]), as_float(coords[3]))
    return Labelled(box, str(label) if label is not None else None)


def find_boxes(text: str) -> list[Labelled]:
    """Every box the answer states, in order: JSON ``bbox_2d`` objects (with labels) if any,
    else ``<box>`` blocks and bracketed quadruples."""
    answer = tagged_answer(text)
    labelled = _labelled_json(answer)
    if labelled is not None:
        return labelled
    boxes: list[Labelled] = []
    pieces, position = [], 0
    for start, end in tag_blocks(answer, "<box>", "</box>"):
        numbers = _NUMBER.findall(answer, start + len("<box>"), end - len("</box>"))
        if len(numbers) == 4:
            x1, y1, x2, y2 = map(float, numbers)
            boxes.append(Labelled((x1, y1, x2, y2)))
        pieces.append(answer[position:start])
        position = end
    outside = " ".join([*pieces, answer[position:]])
    for match in _QUAD.finditer(outside):
        boxes.append(Labelled((float(match[1]), float(match[2]), float(match[3]), float(match[4]))))
    return boxes


def _explicitly_empty(answer: str) -> bool:
    """``[]``, ``None`` or a fenced empty JSON list, with an optional period. Stripped first:
    a regex with ``\\s*`` on both sides of an optional period would backtrack through a long
    run of spaces once per space (quadratic)."""
    answer = answer.strip()
    if answer.endswith("."):
        answer = answer[:-1].rstrip()
    return _EMPTY.fullmatch(answer) is not None


def gold_box(value: Any) -> Box | None:
    """A reference box, or None when it is not four numbers with an area."""
    if not isinstance(value, list | tuple) or len(value) != 4:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
        return None
    box = (as_float(value[0]), as_float(value[1]), as_float(value[2]), as_float(value[3]))
    return None if degenerate(box) else box


def _gold_single(reference: Any) -> Box | str:
    box = gold_box(reference.get("box")) if isinstance(reference, dict) else None
    return box if box is not None else "reference must be {'box': [x1, y1, x2, y2]} with an area"


def iou_of(sample: Sample) -> tuple[float, dict[str, Any]] | Score:
    """The IoU of the answer's one box with ``reference.box``, with its evidence; or the
    score that stands instead (0 for a missing, hedged or degenerate box; invalid gold)."""
    inputs = gold_and_scale(sample, _gold_single, "no reference box")
    if isinstance(inputs, Score):
        return inputs
    gold, scale = inputs
    boxes = list(dict.fromkeys(b.box for b in find_boxes(sample.text)))
    if not boxes:
        return Score.ok(0.0, reason="no box in the answer")
    if len(boxes) > 1:
        return Score.ok(0.0, reason=f"{len(boxes)} different boxes: the answer must commit to one")
    box = rescale(boxes[0], scale)
    detail: dict[str, Any] = {"box": list(box), "gold": list(gold), "rescaled": scale is not None}
    if degenerate(box):
        return Score.ok(0.0, reason="degenerate box (no area)", **detail)
    return iou(box, gold), detail


@reward("iou")
def iou_reward(*, threshold: float | None = None) -> RewardFn:
    """IoU of the answer's box with the reference box (VLM-R1 REC): continuous in [0, 1], or
    1/0 at `threshold`. Several different boxes are a hedge and score 0."""
    if threshold is not None and not 0 < threshold <= 1:
        raise ConfigError(f"threshold must be in (0, 1], got {threshold}")

    def score(sample: Sample) -> Score:
        measured = iou_of(sample)
        if isinstance(measured, Score):
            return measured
        value, detail = measured
        if threshold is None:
            return Score.ok(value, iou=value, **detail)
        return Score.ok(1.0 if value >= threshold else 0.0, iou=value, **detail)

    return checks_references(bounded(score, 0.0, 1.0), problem_of(_gold_single))


def _reaching(box: Box, gold: Sequence[Labelled], threshold: float) -> list[tuple[int, float]]:
    """``(index, IoU)`` of the gold boxes `box` overlaps with an IoU of at least `threshold`."""
    if degenerate(box):
        return []
    return [
        (j, value)
        for j, g in enumerate(gold)
        if _may_reach(box, g.box, threshold) and (value := iou(box, g.box)) >= threshold
    ]


def detection_score(
    predicted: Sequence[Labelled],
    gold: Sequence[Labelled],
    *,
    iou_threshold: float = 0.5,
    weights: tuple[float, float, float] = (0.7, 0.0, 0.3),
) -> tuple[float, dict[str, Any]]:
    """VLM-R1's detection score and its parts.

    Greedy matching: repeatedly pair the unmatched predicted and gold boxes with the highest
    IoU (the first such pair on ties) while it is >= `iou_threshold` (one sort of the pairs
    above the threshold, not a scan of every pair per match). A pair whose labels
    differ (case-insensitive; gold without labels matches any) counts IoU 0 but is still a
    match. ``position = sum(IoU of matches) / len(gold)``, ``label = correct labels /
    len(gold)``, ``completeness = 1 - (miss rate + false-alarm rate) / 2`` with miss rate =
    unmatched gold / gold and false-alarm rate = unmatched predictions / predictions; the score
    is their mean weighted by `weights` (position, label, completeness): 0.7, 0, 0.3.
    """
    if not gold:
        return (0.0 if predicted else 1.0), {"matches": []}
    if not predicted:
        return 0.0, {"matches": [], "miss_rate": 1.0, "false_alarm_rate": 0.0}
    reaching: dict[Box, list[tuple[int, float]]] = {}  # computed once per distinct box
    pairs = []
    for i, p in enumerate(predicted):
        if p.box not in reaching:
            reaching[p.box] = _reaching(p.box, gold, iou_threshold)
        pairs.extend((-value, i, j) for j, value in reaching[p.box])
    pairs.sort()  # highest IoU first, then the first predicted box, then the first gold
    taken_pred: set[int] = set()
    taken_gold: set[int] = set()
    matches: list[dict[str, Any]] = []
    for negative, i, j in pairs:
        if i in taken_pred or j in taken_gold:
            continue
        wanted, said = gold[j].label, predicted[i].label
        right = wanted is None or (said is not None and said.strip().lower() == wanted.lower())
        matches.append(
            {"pred": i, "gold": j, "iou": -negative if right else 0.0, "label_ok": right}
        )
        taken_pred.add(i)
        taken_gold.add(j)
    position = sum(m["iou"] for m in matches) / len(gold)
    labels = sum(1.0 for m in matches if m["label_ok"]) / len(gold)
    miss = (len(gold) - len(matches)) / len(gold)
    false_alarm = (len(predicted) - len(matches)) / len(predicted)
    completeness = 1.0 - (miss + false_alarm) / 2
    a, b, c = weights
    total = (a * position + b * labels + c * completeness) / (a + b + c)
    parts = {
        "matches": matches,
        "position": position,
        "label_accuracy": labels,
        "completeness": completeness,
        "miss_rate": miss,
        "false_alarm_rate": false_alarm,
    }
    return total, parts


def _gold_set(reference: Any) -> list[Labelled] | str:
    if not isinstance(reference, dict) or not isinstance(reference.get("boxes"), list):
        return "reference must be {'boxes': [[x1, y1, x2, y2], ...], 'labels': [...]}"
    boxes, labels = reference["boxes"], reference.get("labels")
    if labels is not None and (not isinstance(labels, list) or len(labels) != len(boxes)):
        return "reference 'labels' must be a list as long as 'boxes'"
    gold = []
    for k, value in enumerate(boxes):
        box = gold_box(value)
        if box is None:
            return f"reference box {k} is not [x1, y1, x2, y2] with an area"
        gold.append(Labelled(box, str(labels[k]) if labels is not None else None))
    return gold


@reward("detection")
def detection(
    *,
    iou_threshold: float = 0.5,
    position_weight: float = 0.7,
    label_weight: float = 0.0,
    completeness_weight: float = 0.3,
) -> RewardFn:
    """VLM-R1's detection reward in [0, 1] (see `detection_score`).

    A reference without boxes expects an explicitly empty answer (``[]`` or ``None``): 1 for
    it, 0 for any box or for an answer that states nothing.
    """
    weights = (position_weight, label_weight, completeness_weight)
    if not 0 < iou_threshold <= 1 or min(weights) < 0 or sum(weights) <= 0:
        raise ConfigError("iou_threshold must be in (0, 1] and the weights >= 0, not all 0")

    def score(sample: Sample) -> Score:
        inputs = gold_and_scale(sample, _gold_set, "no reference boxes")
        if isinstance(inputs, Score):
            return inputs
        gold, scale = inputs
        found = find_boxes(sample.text)
        predicted = [Labelled(rescale(b.box, scale), b.label) for b in found]
        if not predicted and not _explicitly_empty(tagged_answer(sample.text)):
            return Score.ok(0.0, reason="no box and no explicitly empty answer ([] or None)")
        value, parts = detection_score(
            predicted, gold, iou_threshold=iou_threshold, weights=weights
        )
        return Score.ok(value, boxes=len(predicted), gold_boxes=len(gold), **parts)

    return checks_references(bounded(score, 0.0, 1.0), problem_of(_gold_set))
