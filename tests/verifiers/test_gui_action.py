"""gui_action (UI-R1): action type + argument + format, each term checked by hand."""

from __future__ import annotations

from typing import Any

import pytest

from rewardsmith.models import Sample
from rewardsmith.registry import declared_bounds, registry
from rewardsmith.verifiers.agents.gui import gui_action, parse_action

CLICK = {"action": "click", "box": [100, 200, 300, 260]}
TYPE = {"action": "type", "text": "Hello World"}
SCROLL = {"action": "scroll", "direction": "down"}
BACK = {"action": "navigate_back"}


def ui_r1(answer: str, think: bool = True) -> str:
    """A completion in UI-R1's layout."""
    return (
        "<think>The button is at the top.</think> " if think else ""
    ) + f"<answer>{answer}</answer>"


CASES = [
    # (reference, completion, (action, argument, format))
    (CLICK, ui_r1("[{'action': 'click', 'coordinate': [150, 230]}]"), (1, 1, 1)),
    (CLICK, ui_r1("[{'action': 'click', 'coordinate': [100, 200]}]"), (1, 1, 1)),  # corner: in
    (CLICK, ui_r1("[{'action': 'click', 'coordinate': [300, 260]}]"), (1, 1, 1)),  # corner: in
    (CLICK, ui_r1("[{'action': 'click', 'coordinate': [99.5, 230]}]"), (1, 0, 1)),  # just out
    (CLICK, ui_r1("[{'action': 'click', 'coordinate': [150, 261]}]"), (1, 0, 1)),
    (CLICK, ui_r1("[{'action': 'Click', 'coordinate': [150, 230]}]"), (1, 1, 1)),  # case
    (CLICK, ui_r1('{"action": "click", "coordinate": [150, 230]}'), (1, 1, 1)),  # JSON
    (CLICK, ui_r1('{"action_type": "click", "x": 150, "y": 230}'), (1, 1, 1)),  # AndroidControl
    (CLICK, ui_r1("{'action': 'click', 'point': '(150, 230)'}"), (1, 1, 1)),
    (CLICK, ui_r1("[{'action': 'scroll', 'coordinate': [150, 230]}]"), (0, 0, 1)),  # wrong type
    (CLICK, ui_r1("[{'action': 'click'}]"), (1, 0, 1)),  # no point
    (CLICK, ui_r1("[{'action': 'click', 'coordinate': [150, 230, 160]}]"), (1, 0, 1)),
    (CLICK, "[{'action': 'click', 'coordinate': [150, 230]}]", (1, 1, 0)),  # no tags
    (CLICK, ui_r1("[{'action': 'click', 'coordinate': [150, 230]}]", think=False), (1, 1, 0)),
    (CLICK, ui_r1("[{'action': 'click', 'coordinate': [150, 230]}]") + " extra", (1, 1, 0)),
    # a hedge: two different actions commit to nothing
    (
        CLICK,
        ui_r1(
            "[{'action': 'click', 'coordinate': [150, 230]}, "
            "{'action': 'click', 'coordinate': [10, 10]}]"
        ),
        (0, 0, 1),
    ),
    # the same action twice is one action
    (
        CLICK,
        ui_r1(
            "[{'action': 'click', 'coordinate': [150, 230]}, "
            "{'action': 'click', 'coordinate': [150, 230]}]"
        ),
        (1, 1, 1),
    ),
    (CLICK, ui_r1("I would click the button."), (0, 0, 1)),
    (CLICK, "<think>[{'action': 'click', 'coordinate': [150, 230]}]</think>", (0, 0, 0)),
    # typing: the text, case and spacing aside
    (TYPE, ui_r1("[{'action': 'type', 'text': 'hello   world'}]"), (1, 1, 1)),
    (TYPE, ui_r1("[{'action': 'type', 'text': 'hello'}]"), (1, 0, 1)),
    (TYPE, ui_r1("[{'action': 'type'}]"), (1, 0, 1)),
    # scrolling: the direction
    (SCROLL, ui_r1("[{'action': 'scroll', 'direction': 'DOWN'}]"), (1, 1, 1)),
    (SCROLL, ui_r1("[{'action': 'scroll', 'direction': 'up'}]"), (1, 0, 1)),
    # an action without arguments: the right type earns the argument term too (as UI-R1)
    (BACK, ui_r1("[{'action': 'navigate_back'}]"), (1, 1, 1)),
    (BACK, ui_r1("[{'action': 'navigate_home'}]"), (0, 0, 1)),
]


@pytest.mark.parametrize(("reference", "completion", "terms"), CASES)
def test_terms_by_hand(reference: dict, completion: str, terms: tuple[int, int, int]) -> None:
    result = gui_action()(Sample(id="g", completion=completion, reference=reference))
    assert result.status == "ok"
    got = (result.detail["action"], result.detail["argument"], result.detail["format"])
    assert got == terms, result.detail
    assert result.score == sum(terms)


@pytest.mark.parametrize(
    ("point", "expected"),
    [
        ([60, 115], 1),  # x2: (120, 230) is inside
        ([150, 230], 0),  # x2: (300, 460) is outside
        ([150, 130], 1),  # (300, 260): the corner, inside
    ],
)
def test_click_rescaled_to_the_gold_frame(point: list[int], expected: int) -> None:
    metadata = {"image_size": [1000, 2000], "model_image_size": [500, 1000]}
    completion = ui_r1(f"[{{'action': 'click', 'coordinate': {point}}}]")
    sample = Sample(id="g", completion=completion, reference=CLICK, metadata=metadata)
    assert gui_action()(sample).detail["argument"] == expected


def test_weights() -> None:
    fn = gui_action(action_weight=0.5, argument_weight=2.0, format_weight=0.0)
    completion = ui_r1("[{'action': 'click', 'coordinate': [150, 230]}]")
    assert fn(Sample(id="g", completion=completion, reference=CLICK)).score == 2.5


@pytest.mark.parametrize(
    "reference",
    [
        {"box": [0, 0, 1, 1]},
        {"action": "click", "box": [10, 10, 10, 20]},
        {"action": "type", "text": 5},
        "click",
    ],
)
def test_bad_references_are_invalid(reference: Any) -> None:
    result = gui_action()(Sample(id="g", completion=ui_r1("{}"), reference=reference))
    assert result.status == "invalid"


def test_parse_is_bounded_and_safe() -> None:
    assert parse_action("{" * 100_000) == []
    assert parse_action("[" + "(" * 50_000 + "]") == []
    assert parse_action("{'action': __import__('os').system('true')}") == []
    assert parse_action("[" * 3_000 + "]" * 3_000) == []  # too deep for json: not an error
    deep = "[" * 200 + "]" * 200
    assert parse_action(f"{{'action': 'type', 'text': {deep}}}") == []  # over MAX_NESTING


@pytest.mark.parametrize("point", [f"[{10**400}, 150]", f"[150, -{10**400}]", f'"{10**400}, 150"'])
def test_a_point_beyond_a_float_is_no_point(point: str) -> None:
    completion = ui_r1(f"{{'action': 'click', 'coordinate': {point}}}")
    result = gui_action()(Sample(id="o", completion=completion, reference=CLICK))
    assert (result.status, result.score) == ("ok", 2.0)  # action and format, no argument
    assert result.detail["reason"] == "no click point [x, y]"


def test_gui_action_declares_its_range() -> None:
    assert declared_bounds(gui_action()) == (0.0, 3.0)
    assert declared_bounds(gui_action(format_weight=-1.0)) == (-1.0, 2.0)


def test_registered() -> None:
    assert registry.get("gui_action").factory is gui_action
