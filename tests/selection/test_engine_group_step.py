"""Group-scoped reward types in the engine: the group step runs once a group is complete,
before shaping, gates and group transforms, in the engine's process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rewardsmith import Engine, RewardSpec, Sample, load_spec, registry
from rewardsmith.combine import GROUP_TRANSFORM_TYPES, ResultBuilder, Scored
from rewardsmith.models import Result

SPREAD = "tests.selection.group_rewards_for_tests:spread"
PLAIN = "tests.selection.group_rewards_for_tests:not_a_group_reward"
BROKEN = "tests.selection.group_rewards_for_tests:broken"
ECHO = "tests.combine.rewards_for_tests:echo"

COMPLETIONS = {  # group -> completions; majority_vote's rewards by hand in REWARDS
    "q1": [r"\boxed{4}", r"\boxed{4}", r"\boxed{5}", r"\boxed{4.0}"],
    "q2": [r"\boxed{7}", r"\boxed{8}"],  # a tie: 0, 0
    "q3": [r"\boxed{1}", r"\boxed{1}", r"\boxed{1}"],  # unanimous: 1, 1, 1
    "q4": [r"\boxed{2}", r"\boxed{3}", r"\boxed{3}", r"\boxed{3} or \boxed{2}"],
}
REWARDS = {"q1": [1, 1, 0, 1], "q2": [0, 0], "q3": [1, 1, 1], "q4": [0, 1, 1, 0]}


def samples() -> list[Sample]:
    return [
        Sample(id=f"{group}-{i}", completion=text, group=group, metadata={"r": REWARDS[group][i]})
        for group, texts in COMPLETIONS.items()
        for i, text in enumerate(texts)
    ]


def build(spec: RewardSpec, items: list[Sample]) -> list[Result]:
    """The engine's result builder fed in process: each component's per-sample step, then
    the groups (no workers, so every group transform can be compared quickly)."""
    functions = {name: component.build() for name, component in spec.rewards.items()}
    builder = ResultBuilder(spec, grouped=spec.needs_groups)
    out: list[Result] = []
    for sample in items:
        out += builder.push(Scored(sample, {n: f(sample) for n, f in functions.items()}))
    return out + builder.close()


@pytest.mark.parametrize("transform", sorted(GROUP_TRANSFORM_TYPES))
def test_every_group_transform_sees_the_final_votes(transform: str) -> None:
    voted = load_spec(
        {"rewards": {"vote": {"type": "majority_vote"}}, "group_transform": transform}
    )
    echoed = load_spec(
        {"rewards": {"vote": {"type": ECHO, "key": "r"}}, "group_transform": transform}
    )
    by_vote, by_hand = build(voted, samples()), build(echoed, samples())
    assert [r.reward for r in by_vote] == [float(x) for xs in REWARDS.values() for x in xs]
    assert [r.advantage for r in by_vote] == [r.advantage for r in by_hand]


def test_shaping_and_gates_see_the_final_votes() -> None:
    spec = load_spec(
        {
            "rewards": {
                "vote": {"type": "majority_vote", "transform": {"type": "min_max"}},
                "bonus": {
                    "type": ECHO,
                    "key": "r",
                    "weight": 0.5,
                    "only_if": "vote",
                    "low": 0,
                    "high": 1,
                },
            }
        }
    )
    results = build(spec, samples())
    q1 = results[:4]
    assert [r.components["vote"].score for r in q1] == [1.0, 1.0, 0.0, 1.0]
    assert [r.reward for r in q1] == [1.5, 1.5, 0.0, 1.5]  # the gate passed on the vote


def test_a_group_step_that_raises_fails_that_component_for_the_group() -> None:
    spec = load_spec({"rewards": {"b": {"type": BROKEN}, "e": {"type": ECHO, "key": "r"}}})
    results = build(spec, samples()[:4])
    assert {r.status for r in results} == {"error"}
    assert all(
        "group step: RuntimeError: group step bug" in r.components["b"].detail["reason"]
        for r in results
    )
    assert [r.components["e"].score for r in results] == [1.0, 1.0, 0.0, 1.0]


def test_a_type_named_by_path_keeps_its_flag() -> None:
    assert registry.get(SPREAD).group_scoped
    assert not registry.get(
        "tests.selection.group_rewards_for_tests:not_a_group_reward"
    ).group_scoped
    spec = load_spec({"rewards": {"s": {"type": SPREAD}}})
    items = [Sample(id=str(v), completion="", group="g", metadata={"value": v}) for v in (3, 5, 4)]
    assert [r.reward for r in build(spec, items)] == [0.0, 2.0, 1.0]


def test_through_the_engine_with_workers_in_input_order() -> None:
    spec = {"rewards": {"vote": {"type": "majority_vote"}}, "group_transform": "grpo"}
    items = [s.model_dump() for s in samples()]
    items.insert(4, {"id": "alone", "completion": r"\boxed{4}"})  # no group: not applicable
    with Engine(spec, workers=2) as engine:
        results = engine.score(items)
    assert [r.id for r in results] == [item["id"] for item in items]
    by_id = {r.id: r for r in results}
    assert by_id["alone"].status == "not_applicable" and by_id["alone"].advantage is None
    assert [by_id[f"q1-{i}"].reward for i in range(4)] == [1.0, 1.0, 0.0, 1.0]
    assert by_id["q1-0"].advantage == pytest.approx(-by_id["q1-2"].advantage / 3)
    detail = by_id["q4-3"].components["vote"].detail
    assert detail["answer"] is None and detail["majority"] == "3"
    assert detail["reason"] == "no answer: several different final answers"


def test_resume_keeps_a_group_whole(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("rewards:\n  vote: {type: majority_vote}\n")
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(s.model_dump()) + "\n" for s in samples()))
    full, cut = tmp_path / "full.jsonl", tmp_path / "cut.jsonl"
    command = [
        sys.executable,
        "-m",
        "rewardsmith.cli",
        "score",
        "--spec",
        str(spec),
        "--input",
        str(data),
        "--workers",
        "1",
        "--quiet",
        "--output",
    ]
    subprocess.run([*command, str(full)], check=True)
    lines = full.read_text().splitlines(keepends=True)
    cut.write_text("".join(lines[:6]))  # q1 whole, q2 cut after its first sample
    subprocess.run([*command, str(cut), "--resume"], check=True)
    assert cut.read_text() == full.read_text()
