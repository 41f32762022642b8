"""Red team (rt22, round 4) of the combination fixes d70b870 and 6a9a67d: first_pass refusing
`only_if` and transforms, the one range check on scores as received (an out-of-range `ok`
score an `error` charged to the completion), closed-gate rows left out of per-group
transforms' statistics, and `detail.raw_score` as the engine's record.

Holes are strict xfails asserting the correct behaviour; attacks that fail are passing rows.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from rewardsmith import RewardSpec, Sample, Score
from rewardsmith.combine import ResultBuilder, Scored
from rewardsmith.integrations._component_values import charged_rewards
from rewardsmith.integrations._protocol import trainer_reward
from rewardsmith.spec import load_spec
from tests.combine.helpers import UNIT, ok, row, run, spec

ROOT = Path(__file__).resolve().parents[2]
ECHO = "tests.combine.rewards_for_tests:echo"
PENALTY = {"low": -1.0, "high": 0.0}


def _results(s: RewardSpec, samples: list[Sample]) -> list[Any]:
    """Each sample scored by the spec's real reward types, then through the result builder."""
    fns = {name: component.build() for name, component in s.rewards.items()}
    builder = ResultBuilder(s, grouped=s.needs_groups)
    out: list[Any] = []
    for sample in samples:
        out += builder.push(Scored(sample, {name: fn(sample) for name, fn in fns.items()}))
    return out + builder.close()


# -- holes ---------------------------------------------------------------------------------------

TWO = [("search", {"query": "llama", "limit": 5}), ("translate", {"text": "hi", "target": "fr"})]


def _toolrl(calls: list[tuple[str, dict[str, Any]]]) -> str:
    lines = "\n".join(json.dumps({"name": n, "parameters": p}) for n, p in calls)
    return f"<think>r</think>\n<tool_call>\n{lines}\n</tool_call>"


def test_tool_call_full_credit_in_another_order_is_not_charged() -> None:
    """ToolRL, `schedule: linear`, step 46: both gold calls, right arguments, right layout,
    in the other order (not `same_calls`, but the fine-grained match is S = S_max = 7), so
    R_correct = 5.3866... * 7 / 7 - 2.69333 = 2.3066666666666675 and the total
    4.000000000000001 > 4.0 = the declared top. The honest answer scores `error` (cause
    completion) and its grpo advantage is -1 against a completion with no call at all (+1).
    It should be ok at (at most) 4.0 and rank above the answer with no call."""
    s = RewardSpec.from_dict(
        {
            "rewards": {"t": {"type": "tool_call", "schedule": "linear"}},
            "group_transform": {"type": "grpo"},
        }
    )
    ref = {"tool_calls": [{"name": n, "parameters": p} for n, p in TWO]}
    meta = {"step": 46}
    right, none = _results(
        s,
        [
            Sample(id="a", completion=_toolrl(TWO[::-1]), reference=ref, metadata=meta, group="g"),
            Sample(
                id="b",
                completion="<think>r</think>\nno call",
                reference=ref,
                metadata=meta,
                group="g",
            ),
        ],
    )
    assert right.status == "ok", right.components["t"].detail.get("reason")
    assert right.advantage > none.advantage


def test_closed_gate_samples_do_not_vote() -> None:
    """`vote: majority_vote, only_if: fmt`. Two formatted samples answer 42, three
    unformatted ones (fmt 0, their vote behind a closed gate, counted at 0) answer 7. The
    closed-gate samples still vote, so 7 is the majority and the formatted 42s lose their
    vote: 1.0 instead of 2.0, and the unformatted samples' advantage rises. 6a9a67d left
    closed-gate rows out of the per-group *transforms* (`Row.counts`), not out of
    `_groups.ResultBuilder._group_step`. A closed-gate score should not move the others'."""
    s = RewardSpec.from_dict(
        {
            "rewards": {
                "fmt": {"type": ECHO, "key": "fmt", **UNIT},
                "vote": {
                    "type": "majority_vote",
                    "cluster": "exact",
                    "answer_key": "metadata.ans",
                    "only_if": "fmt",
                },
            },
            "group_transform": {"type": "grpo"},
        }
    )
    votes = [(1, "42"), (1, "42"), (0, "7"), (0, "7"), (0, "7")]
    results = _results(
        s,
        [
            Sample(id=str(i), completion="x", group="g", metadata={"fmt": f, "ans": a})
            for i, (f, a) in enumerate(votes)
        ],
    )
    assert [r.reward for r in results[:2]] == [2.0, 2.0]


# -- attacks that fail ---------------------------------------------------------------------------


GROUP_TRANSFORMS = [
    ({**UNIT, "transform": {"type": "min_max"}}, lambda v: ok(v / 5000)),
    (
        {**UNIT, "transform": [{"type": "mean_std"}, {"type": "clip", "min": -3, "max": 3}]},
        lambda v: ok(v / 5000),
    ),
    ({**PENALTY, "transform": {"type": "kimi", "correct": "c"}}, lambda v: ok(-0.1, length=v)),
    (
        {**PENALTY, "transform": {"type": "grpo_lambda", "correct": "c"}},
        lambda v: ok(-0.1, length=v),
    ),
]


@pytest.mark.parametrize(
    ("body", "score"), GROUP_TRANSFORMS, ids=["min_max", "mean_std", "kimi", "grpo_lambda"]
)
def test_every_row_gated_off_is_finite(body: dict[str, Any], score: Any) -> None:
    """A group where every row's gate is closed: nothing to take statistics over. No crash,
    no NaN; each row counts the gated component at one constant, so the totals follow `c`."""
    s = spec(
        {"fmt": {**UNIT, "weight": 0.0}, "g": {**body, "only_if": "fmt"}, "c": UNIT},
        group_transform={"type": "grpo"},
    )
    results = run(
        s,
        [
            row("g", {"fmt": ok(0), "g": score(v), "c": ok(c)})
            for v, c in [(10, 1), (90, 0), (50, 1)]
        ],
    )
    rewards = [r.reward for r in results]
    assert all(r.status == "ok" and math.isfinite(r.advantage) for r in results)
    assert rewards[0] == rewards[2] > rewards[1]


@pytest.mark.parametrize(
    ("body", "score"), GROUP_TRANSFORMS, ids=["min_max", "mean_std", "kimi", "grpo_lambda"]
)
def test_only_counted_row_is_the_gate_passer(body: dict[str, Any], score: Any) -> None:
    """One row passes the gate, the only one in the statistics: a group of one. Its shaped
    score is finite and the closed-gate rows (same `c`) never earn more than it."""
    s = spec(
        {"fmt": {**UNIT, "weight": 0.0}, "g": {**body, "only_if": "fmt"}, "c": UNIT},
        group_transform={"type": "grpo"},
    )
    gated, _, passer = run(
        s,
        [
            row("g", {"fmt": ok(f), "g": score(v), "c": ok(1)})
            for f, v in [(0, 10), (0, 90), (1, 5000)]
        ],
    )
    assert passer.status == "ok" and math.isfinite(passer.reward)
    assert gated.reward <= passer.reward


def test_a_rewards_own_raw_score_is_ignored_without_transform() -> None:
    """A reward without a transform writing `raw_score: -3` in its detail: the gate on it
    reads its score (0.9), not the key; with a transform the engine's record replaces it."""
    for body in (UNIT, {**UNIT, "transform": {"type": "clip", "min": 0, "max": 1}}):
        s = spec({"r": body, "b": {**UNIT, "only_if": "r"}})
        (result,) = run(s, [row(None, {"r": ok(0.9, raw_score=-3.0), "b": ok(1)})])
        assert result.status == "ok" and result.reward == pytest.approx(1.9)


def test_out_of_range_is_charged_as_a_crash_under_on_error() -> None:
    """`on_error: 0.5` above an honest wrong answer: a penalty returning -7 (declared [-1, 0])
    is charged exactly as a timeout of the same reward, never above the honest -1."""
    s = spec({"c": UNIT, "pen": PENALTY}, on_error=0.5)
    timeout = Score.failed("timeout", "ran past timeout_s")
    results = run(
        s,
        [
            row("g", {"c": ok(0), "pen": ok(-1)}),
            row("g", {"c": ok(0), "pen": ok(-7)}),
            row("g", {"c": ok(0), "pen": timeout}),
        ],
    )
    honest = trainer_reward(s, results[0])
    _, broke, crash = charged_rewards(s, results)
    assert broke == crash
    assert broke is not None and broke <= honest


@pytest.mark.parametrize(
    ("body", "text", "metadata"),
    [
        (
            {"type": "length", "max_length": 10, "cache_length": 5},
            "x",
            {"completion_length": 10**9},
        ),
        ({"type": "length", "target": 3, "mode": "target"}, "x", {"completion_length": 0}),
        ({"type": "repetition", "max_penalty": 0.3}, "ha" * 5000, {}),
        ({"type": "repetition"}, "", {}),
        ({"type": "think_format"}, "<think>" * 1000, {}),
    ],
    ids=["overlong", "target", "loop", "empty", "think_format"],
)
def test_builtin_edges_stay_in_their_declared_range(
    body: dict[str, Any], text: str, metadata: dict[str, Any]
) -> None:
    """Built-in rewards on edge inputs return `ok` inside the range they declare, so the one
    range check charges no honest completion."""
    s = RewardSpec.from_dict({"rewards": {"r": body}})
    (result,) = _results(s, [Sample(id="e", completion=text, metadata=metadata)])
    assert result.status in {"ok", "not_applicable"}, result.components["r"].detail


def test_shipped_specs_load() -> None:
    """first_pass's refusals break no shipped spec: every spec under examples/ and every
    README yaml block with `rewards:` loads."""
    import re

    blocks = re.findall(r"```yaml\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    specs = [yaml.safe_load(b) for b in blocks]
    specs += [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "examples").glob("*.yaml"))]
    loaded = [load_spec(d) for d in specs if isinstance(d, dict) and "rewards" in d]
    assert len(loaded) >= 5
