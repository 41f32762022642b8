"""iou and detection (VLM-R1): each value computed by hand, rescaling and degenerate boxes."""

from __future__ import annotations

import json
import random
import statistics
from typing import Any

import pytest

from rewardsmith._exceptions import ConfigError
from rewardsmith.models import Sample, Score
from rewardsmith.registry import declared_bounds, registry
from rewardsmith.verifiers.agents.boxes import (
    Labelled,
    detection,
    detection_score,
    find_boxes,
    iou,
    iou_reward,
)

GOLD = [0, 0, 10, 10]  # area 100


def iou_score(completion: str, box: Any = GOLD, **options: Any) -> Score:
    metadata = options.pop("metadata", {})
    sample = Sample(id="b", completion=completion, reference={"box": box}, metadata=metadata)
    return iou_reward(**options)(sample)


IOU_CASES = [
    # (predicted box, IoU with [0, 0, 10, 10]: intersection / union)
    ([0, 0, 10, 10], 1.0),
    ([5, 0, 15, 10], 50 / 150),
    ([0, 0, 5, 5], 25 / 100),
    ([2, 2, 8, 8], 36 / 100),
    ([5, 5, 15, 15], 25 / 175),
    ([10, 0, 20, 10], 0.0),  # touching edges share no area
    ([20, 20, 30, 30], 0.0),
    ([-10, -10, 20, 20], 100 / 900),  # covering the gold box and more
    ([0, 0, 10.0, 10.5], 100 / 105),
    ([5, 5, 5, 10], 0.0),  # degenerate: no width
    ([10, 10, 0, 0], 0.0),  # inverted corners
]


@pytest.mark.parametrize(("box", "expected"), IOU_CASES)
def test_iou_by_hand(box: list[float], expected: float) -> None:
    text = f"<think>the object is there</think><answer>{json.dumps(box)}</answer>"
    result = iou_score(text)
    assert result.status == "ok" and result.score == pytest.approx(expected)


@pytest.mark.parametrize(
    ("box", "threshold", "expected"),
    [([0, 0, 10, 10], 0.5, 1.0), ([0, 0, 10, 5], 0.5, 1.0), ([2, 2, 8, 8], 0.5, 0.0)],
)
def test_thresholded_iou(box: list[float], threshold: float, expected: float) -> None:
    result = iou_score(json.dumps(box), threshold=threshold)
    assert result.score == expected and result.detail["iou"] == pytest.approx(
        iou(tuple(box), (0, 0, 10, 10))  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<box>(0,0),(10,10)</box>", 1.0),
        ("<box>[[0, 0, 10, 10]]</box>", 1.0),
        ('```json\n[{"bbox_2d": [0, 0, 10, 10], "label": "cat"}]\n```', 1.0),
        ('{"bbox_2d": [0, 0, 5, 5], "label": "cat"}', 0.25),
        ("The cat is at [0, 0, 10, 10].", 1.0),
        ("<think>maybe [5, 5, 15, 15]</think><answer>[0, 0, 10, 10]</answer>", 1.0),
        ("[0, 0, 10, 10] and again [0, 0, 10, 10]", 1.0),  # the same box twice
        ("[0, 0, 10, 10] or [5, 5, 15, 15]", 0.0),  # a hedge: two different boxes
        ("<box>(0,0),(10,10)</box> or [5, 5, 15, 15]", 0.0),  # a hedge across formats
        # a JSON bbox_2d answer is the answer: other boxes in the text are not read
        ('{"bbox_2d": [0, 0, 10, 5]} or [5, 5, 15, 15]', 0.5),
        ('{"bbox_2d": [0, 0, 10, 5]} {"bbox_2d": [5, 5, 15, 15]}', 0.5),  # the first value
        ('[{"bbox_2d": [0, 0, 10, 5]}, {"bbox_2d": [5, 5, 15, 15]}]', 0.0),  # two in it
        ("<answer>no idea</answer>", 0.0),
        ("", 0.0),
        ("[1e999, 0, 10, 10]", 0.0),  # not a number the parser reads
    ],
)
def test_answer_formats(completion: str, expected: float) -> None:
    assert iou_score(completion).score == pytest.approx(expected)


@pytest.mark.parametrize(
    ("box", "gold", "metadata", "expected"),
    [
        # model saw 100 x 50, the gold frame is 200 x 100: both axes x2
        ([0, 0, 10, 10], [0, 0, 20, 20], {"image_size": [200, 100], "model_image_size": [100, 50]},
         1.0),
        # only x scaled (x3): [10, 10, 20, 20] -> [30, 10, 60, 20]
        ([10, 10, 20, 20], [30, 10, 60, 20],
         {"image_size": [300, 100], "model_image_size": [100, 100]}, 1.0),
        ([10, 10, 20, 20], [30, 10, 60, 20], {}, 0.0),  # the same box unscaled misses
        # Qwen2.5-VL: a 1920x1080 screenshot seen at 1288x728 (multiples of 28)
        ([644, 364, 966, 546], [960, 540, 1440, 810],
         {"image_size": [1920, 1080], "model_image_size": [1288, 728]}, 1.0),
        # scaling back down: model saw 2000 x 2000 for a 1000 x 1000 image
        ([0, 0, 20, 10], [0, 0, 10, 10],
         {"image_size": [1000, 1000], "model_image_size": [2000, 2000]}, 0.5),
    ],
)  # fmt: skip
def test_rescaling(box: list[int], gold: list[int], metadata: dict, expected: float) -> None:
    result = iou_score(json.dumps(box), gold, metadata=metadata)
    assert result.score == pytest.approx(expected)
    assert result.detail["rescaled"] is bool(metadata)


def test_a_box_over_the_whole_image_earns_the_area_ratio() -> None:
    whole = iou_score("[0, 0, 1000, 1000]", [100, 100, 200, 200])
    assert whole.score == pytest.approx(100 * 100 / 1000**2)


def test_a_degenerate_prediction_says_so() -> None:
    result = iou_score("[5, 5, 5, 10]")
    assert result.score == 0 and "degenerate" in result.detail["reason"]


HUGE = 10**400
"""A JSON integer too large for a float (`float()` raises OverflowError on it)."""


@pytest.mark.parametrize(
    ("reference", "metadata"),
    [
        ({"box": [5, 5, 5, 10]}, {}),  # degenerate gold
        ({"box": [0, 0, 10]}, {}),
        ({"box": ["0", 0, 10, 10]}, {}),
        ({"boxes": [[0, 0, 10, 10]]}, {}),
        ({"box": GOLD}, {"image_size": [100, 100]}),  # only one of the two sizes
        ({"box": GOLD}, {"image_size": [100, 0], "model_image_size": [100, 100]}),
        ({"box": [0, 0, HUGE, 10]}, {}),  # an integer beyond a float: infinite, no area
        ({"box": GOLD}, {"image_size": [HUGE, 100], "model_image_size": [100, 100]}),
    ],
)
def test_bad_iou_references_are_invalid(reference: Any, metadata: dict) -> None:
    sample = Sample(id="b", completion="[0, 0, 10, 10]", reference=reference, metadata=metadata)
    assert iou_reward()(sample).status == "invalid"


# -- detection ------------------------------------------------------------------------------

A, B = [0, 0, 10, 10], [20, 20, 30, 30]
LABELLED = {"boxes": [A, B], "labels": ["cat", "dog"]}


def boxes(*items: tuple[list[float], str]) -> str:
    listed = [{"bbox_2d": box, "label": label} for box, label in items]
    return f"<think>two animals</think><answer>```json\n{json.dumps(listed)}\n```</answer>"


DETECTION_CASES = [
    # (predicted, reference, score = 0.7 position + 0.3 completeness; by hand)
    (boxes((A, "cat"), (B, "dog")), LABELLED, 1.0),
    # only A: position 1/2, miss 1/2, no false alarm: completeness 0.75
    (boxes((A, "cat")), LABELLED, 0.7 * 0.5 + 0.3 * 0.75),
    # an extra box: false alarm 1/3, completeness 1 - 1/6
    (boxes((A, "cat"), (B, "dog"), ([50, 50, 60, 60], "cow")), LABELLED, 0.7 + 0.3 * 5 / 6),
    # A labelled dog: matched, but its IoU counts 0
    (boxes((A, "dog"), (B, "dog")), LABELLED, 0.7 * 0.5 + 0.3),
    (boxes((A, "CAT "), (B, "Dog")), LABELLED, 1.0),  # labels compared case-insensitively
    # A shifted by half: IoU 1/3 < 0.5, unmatched; miss 1/2, false alarm 1/2
    (boxes(([5, 0, 15, 10], "cat"), (B, "dog")), LABELLED, 0.7 * 0.5 + 0.3 * 0.5),
    # A shifted by one: IoU 90/110 = 9/11
    (boxes(([1, 0, 11, 10], "cat"), (B, "dog")), LABELLED, 0.7 * (9 / 11 + 1) / 2 + 0.3),
    # one box over the whole 100 x 100 image: IoU 0.01 with each, nothing matches
    (boxes(([0, 0, 100, 100], "cat")), LABELLED, 0.0),
    # eight extra copies of A: false alarm 8/10, completeness 0.6
    (boxes((A, "cat"), (B, "dog"), *[(A, "cat")] * 8), LABELLED, 0.7 + 0.3 * 0.6),
    # two candidates for A: the better (IoU 1) matches, the other (0.9) is a false alarm
    (boxes((A, "cat"), ([0, 0, 10, 9], "cat")), {"boxes": [A], "labels": ["cat"]},
     0.7 + 0.3 * 0.75),
    # greedy on the global maximum: P2-A (1.0) first, then P1-B (110/120)
    (boxes(([0, 0, 10, 11], "x"), ([0, 0, 10, 10], "x")), {"boxes": [A, [0, 0, 10, 12]]},
     0.7 * (1 + 110 / 120) / 2 + 0.3),
    # reference without labels: any label matches
    (boxes((A, "anything"), (B, "else")), {"boxes": [A, B]}, 1.0),
    # bare quadruples carry no label: against labelled gold they count IoU 0
    ("[0, 0, 10, 10] [20, 20, 30, 30]", LABELLED, 0.3),
    ("[0, 0, 10, 10] [20, 20, 30, 30]", {"boxes": [A, B]}, 1.0),
    # nothing predicted (explicitly): 0
    ("<answer>[]</answer>", LABELLED, 0.0),
    # no gold boxes: an explicitly empty answer earns 1, anything else 0
    ("<answer>[]</answer>", {"boxes": []}, 1.0),
    ("<answer>None</answer>", {"boxes": []}, 1.0),
    ("<answer>I see nothing I can box.</answer>", {"boxes": []}, 0.0),
    (boxes((A, "cat")), {"boxes": []}, 0.0),
]  # fmt: skip


@pytest.mark.parametrize(("completion", "reference", "expected"), DETECTION_CASES)
def test_detection_by_hand(completion: str, reference: dict, expected: float) -> None:
    result = detection()(Sample(id="d", completion=completion, reference=reference))
    assert result.status == "ok" and result.score == pytest.approx(expected)


def test_detection_label_weight() -> None:
    # A labelled dog: position 1/2, labels 1/2, completeness 1: (0.35 + 0.5 + 0.3) / 2
    fn = detection(label_weight=1.0)
    result = fn(Sample(id="d", completion=boxes((A, "dog"), (B, "dog")), reference=LABELLED))
    assert result.score == pytest.approx((0.7 * 0.5 + 1.0 * 0.5 + 0.3 * 1.0) / 2.0)


def test_detection_rescales() -> None:
    metadata = {"image_size": [200, 200], "model_image_size": [100, 100]}
    half = boxes(([0, 0, 5, 5], "cat"), ([10, 10, 15, 15], "dog"))
    sample = Sample(id="d", completion=half, reference=LABELLED, metadata=metadata)
    assert detection()(sample).score == pytest.approx(1.0)


@pytest.mark.parametrize(
    "reference",
    [
        {"boxes": [A, [5, 5, 5, 10]]},
        {"boxes": [A], "labels": ["cat", "dog"]},
        {"boxes": "A"},
        {"box": A},
    ],
)
def test_bad_detection_references_are_invalid(reference: dict) -> None:
    sample = Sample(id="d", completion="[0, 0, 10, 10]", reference=reference)
    assert detection()(sample).status == "invalid"


@pytest.mark.parametrize(
    "completion",
    [
        f'{{"bbox_2d": [{HUGE}, 0, 1, 1]}}',
        f'[{{"bbox_2d": [0, 0, {HUGE}, 1], "label": "x"}}]',
        f"[0, 0, {HUGE}, 1]",
        f"<box>(0, 0), ({HUGE}, 1)</box>",
        f'{{"bbox_2d": [-{HUGE}, 0, 1, 1]}}',
    ],
)
def test_numbers_beyond_a_float_are_degenerate_boxes(completion: str) -> None:
    for fn, reference in ((iou_reward(), {"box": A}), (detection(), {"boxes": [A]})):
        result = fn(Sample(id="h", completion=completion, reference=reference))
        assert (result.status, result.score) == ("ok", 0.0), completion


def test_many_predicted_boxes_stay_cheap_and_match_greedily() -> None:
    """12,000 boxes (192 kB) against 50 gold boxes: each distinct box meets the gold once,
    pairs that cannot reach the threshold are skipped before any IoU; the matching is the
    greedy one (every gold matched once, the rest false alarms)."""
    gold = [[i * 10, i * 10, i * 10 + 8, i * 10 + 8] for i in range(50)]
    text = "".join(f"[{k % 500}, {k % 500}, {k % 500 + 8}, {k % 500 + 8}]" for k in range(12_000))
    result = detection()(Sample(id="m", completion=text, reference={"boxes": gold}))
    assert result.detail["miss_rate"] == 0 and len(result.detail["matches"]) == 50
    assert [m["pred"] for m in result.detail["matches"]] == [k * 10 for k in range(50)]
    assert result.detail["false_alarm_rate"] == pytest.approx(11_950 / 12_000)


def test_a_fixed_grid_of_boxes_earns_what_vlm_r1s_formula_gives() -> None:
    """Documented, not fixed: completeness caps what false alarms cost at 0.15, so one fixed
    grid of boxes, the same for every image, earns 0.20 over random gold sets; a model that
    finds two boxes of three, each shifted by a tenth of its size, earns 0.54."""
    grid = [
        Labelled((x, y, x + size, y + size))
        for size in (64, 128, 256, 512)
        for x in range(0, 1000 - size + 1, size // 2)
        for y in range(0, 1000 - size + 1, size // 2)
    ]
    rng = random.Random(0)
    attack, weak = [], []
    for _ in range(200):
        gold = []
        for _ in range(rng.randint(1, 6)):
            w, h = rng.uniform(50, 400), rng.uniform(50, 400)
            x, y = rng.uniform(0, 1000 - w), rng.uniform(0, 1000 - h)
            gold.append(Labelled((x, y, x + w, y + h)))
        attack.append(detection_score(grid, gold)[0])
        found = []
        for g in gold:
            if rng.random() < 0.67:
                x1, y1, x2, y2 = g.box
                dx, dy = (x2 - x1) / 10, (y2 - y1) / 10
                found.append(Labelled((x1 + dx, y1 + dy, x2 + dx, y2 + dy)))
        weak.append(detection_score(found, gold)[0] if found else 0.0)
    assert len(grid) == 1136
    assert statistics.mean(attack) == pytest.approx(0.20, abs=0.005)
    assert statistics.mean(weak) == pytest.approx(0.54, abs=0.005)


def test_detection_and_iou_declare_their_range() -> None:
    assert declared_bounds(detection()) == (0.0, 1.0) == declared_bounds(iou_reward())


def test_find_boxes_is_bounded_on_bracket_heavy_text() -> None:
    assert find_boxes("[" * 200_000) == []
    assert find_boxes("{" * 5_000 + "[0, 0, 1, 1]") != []


def test_config_errors_and_registration() -> None:
    with pytest.raises(ConfigError):
        iou_reward(threshold=0)
    with pytest.raises(ConfigError):
        detection(position_weight=0, completeness_weight=0)
    assert registry.get("iou").factory is iou_reward
    assert registry.get("detection").factory is detection
