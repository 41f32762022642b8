"""Every row of the reward hack table: the gaming output never beats the honest answer.

Each row fails on the code before issue 17 (and 10, 11 item 22) was fixed: there, the gaming
output earned more than the honest one, or came back `invalid`/`timeout` with no score.
"""

from __future__ import annotations

import pytest

from rewardsmith import Engine, Sample
from rewardsmith.spec import ComponentSpec

from .hack_table import REWARD_HACKS, Hack, instructions


def scored(hack: Hack, completion: object) -> tuple[str, float | None]:
    params = {k: v for k, v in hack.component.items() if k != "type"}
    reward = ComponentSpec(type=hack.component["type"], params=params).build()
    sample = Sample(
        id="s",
        completion=completion,
        reference=hack.reference,
        prompt=hack.prompt,
        metadata=hack.metadata,
    )
    result = reward(sample)
    return result.status, result.score


@pytest.mark.parametrize("hack", REWARD_HACKS, ids=[f"{h.item} {h.name}" for h in REWARD_HACKS])
def test_the_gaming_output_never_beats_the_honest_one(hack: Hack) -> None:
    status, gaming = scored(hack, hack.gaming)
    honest_status, honest = scored(hack, hack.honest)
    assert status == "ok" and gaming is not None  # never invalid, never a null to escape to
    assert honest_status == "ok" and honest is not None
    assert gaming <= honest + 1e-12, (gaming, honest)
    if hack.gaming_score is not None:
        assert gaming <= hack.gaming_score


def test_the_placeholder_flood_no_longer_times_out_in_the_engine() -> None:
    """45k `[` on one line timed out at 5 s (the official pattern is quadratic)."""
    spec = {"rewards": {"ifeval": {"type": "ifeval"}}, "timeout_s": 5}
    reference = instructions(("detectable_content:number_placeholders", {"num_placeholders": 1}))
    with Engine(spec, workers=1) as engine:
        (result,) = engine.score([{"completion": "[" * 45_000, "reference": reference}])
    assert (result.status, result.reward) == ("ok", 0.0)


def test_the_table_covers_every_reward_item() -> None:
    assert {h.item for h in REWARD_HACKS} >= {
        "17.7", "17.8", "17.9", "17.10", "17.11", "17.12", "17.13", "17.14", "17.15", "10",
        "11.22",
    }  # fmt: skip
