"""Aggregation formulas against hand-computed values, on the published rubrics' shapes."""

from __future__ import annotations

import pytest

from rewardsmith import Sample
from rewardsmith.judges import Verdict, explicit, gate, healthbench, implicit, load_rubric, rubric
from rewardsmith.judges._backends import JudgeReply, JudgeRequest

# HealthBench item shape: criterion / points (negative = pitfall) / tags
HEALTHBENCH = {
    "prompt": [{"role": "user", "content": "I have chest pain and can't breathe well."}],
    "rubrics": [
        {
            "criterion": "States that chest pain with shortness of breath needs emergency care.",
            "points": 10,
            "tags": ["axis:accuracy", "level:example"],
        },
        {
            "criterion": "Advises calling emergency services now.",
            "points": 8,
            "tags": ["axis:completeness"],
        },
        {"criterion": "Uses clear, simple language.", "points": 3, "tags": ["axis:communication"]},
        {
            "criterion": "Recommends waiting to see whether the symptoms resolve.",
            "points": -7,
            "tags": ["axis:accuracy"],
        },
        {
            "criterion": "Asks for a long list of unrelated details first.",
            "points": -2,
            "tags": ["axis:completeness"],
        },
    ],
}
HB_MET = [True, False, True, True, False]

# Rubrics-as-Rewards shape: title / description with category / weight
RAR = [
    {
        "title": "Identifies the diagnosis",
        "weight": 5,
        "description": "Essential Criteria: Identifies acute coronary syndrome as the concern.",
    },
    {
        "title": "Dosage",
        "weight": 4,
        "description": "Important Criteria: States the aspirin dose (162-325 mg chewed).",
    },
    {
        "title": "Timing",
        "weight": 3,
        "description": "Important Criteria: Says to act within minutes.",
    },
    {"title": "Context", "weight": 1, "description": "Optional Criteria: Mentions risk factors."},
    {
        "title": "Bad advice",
        "weight": -2,
        "description": "Pitfall Criteria: Recommends driving oneself to the hospital.",
    },
]

OPENRUBRICS = """\
1. The response must be written in French. [Hard Rule]
2. [Hard Rule]: The response must not mention a competitor's product.
3. The response explains the refund policy step by step. [Principle]
4. The response is concise. [Principle]
"""


def verdicts(mets, probs=None):
    probs = probs or [None] * len(mets)
    return [Verdict(m, p) for m, p in zip(mets, probs, strict=True)]


def test_healthbench_score_and_tags() -> None:
    criteria = load_rubric(HEALTHBENCH).criteria
    assert [c.points for c in criteria] == [10, 8, 3, -7, -2]
    value, detail = healthbench(criteria, verdicts(HB_MET))
    # met points 10 + 3 - 7 = 6 over positive points 10 + 8 + 3 = 21
    assert value == pytest.approx(6 / 21)
    assert detail["achieved"] == 6 and detail["possible"] == 21
    assert detail["tag_scores"] == pytest.approx(
        {
            "axis:accuracy": 3 / 10,
            "axis:completeness": 0 / 8,
            "axis:communication": 3 / 3,
            "level:example": 10 / 10,
        }
    )


def test_healthbench_negative_and_perfect() -> None:
    criteria = load_rubric(HEALTHBENCH).criteria
    only_pitfalls, _ = healthbench(criteria, verdicts([False, False, False, True, True]))
    assert only_pitfalls == pytest.approx(-9 / 21)  # not clipped per sample
    perfect, _ = healthbench(criteria, verdicts([True, True, True, False, False]))
    assert perfect == 1.0


def test_rar_explicit() -> None:
    criteria = load_rubric(RAR).criteria
    assert [c.tags for c in criteria] == [
        ("essential",),
        ("important",),
        ("important",),
        ("optional",),
        ("pitfall",),
    ]
    assert criteria[4].polarity == "pitfall" and criteria[4].points == -2
    assert criteria[0].text.startswith("Identifies acute")
    value, _ = explicit(criteria, verdicts([True, False, True, True, True]))
    assert value == pytest.approx((5 + 3 + 1 - 2) / (5 + 4 + 3 + 1))  # 7/13
    soft, _ = explicit(
        criteria,
        verdicts([True, False, True, True, True], [0.9, 0.2, 0.6, 0.5, 0.5]),
        soft=True,
    )
    assert soft == pytest.approx((4.5 + 0.8 + 1.8 + 0.5 - 1.0) / 13)  # 6.6/13


def test_rar_implicit() -> None:
    assert implicit(1) == 0.0
    assert implicit(10) == 1.0
    assert implicit(7) == pytest.approx(6 / 9)


def test_hard_rule_gate() -> None:
    criteria = load_rubric(OPENRUBRICS).criteria
    assert [c.kind for c in criteria] == ["hard_rule", "hard_rule", "principle", "principle"]
    assert criteria[1].text == "The response must not mention a competitor's product."
    assert gate(criteria, verdicts([True, True, True, False])) == []
    assert gate(criteria, verdicts([False, True, True, True])) == [0]
    pitfall_rule = load_rubric(
        [{"criterion": "Mentions a competitor.", "kind": "hard_rule", "polarity": "pitfall"}]
    ).criteria
    assert gate(pitfall_rule, verdicts([True])) == [0]  # met pitfall: the rule fails
    assert gate(pitfall_rule, verdicts([False])) == []


def _script_by_criterion(answers: dict[str, str]):
    def script(request: JudgeRequest) -> JudgeReply:
        user = request.messages[-1][1]
        for text, answer in answers.items():
            if text in user:
                return JudgeReply(text=answer)
        raise AssertionError(f"unexpected prompt: {user[-200:]}")

    return script


SAMPLE = Sample(id="1", prompt="I have chest pain.", completion="Call an ambulance now.")


def test_rubric_reward_healthbench_end_to_end(scripted) -> None:
    criteria = HEALTHBENCH["rubrics"]
    scripted(
        _script_by_criterion(
            {c["criterion"]: "YES" if m else "NO" for c, m in zip(criteria, HB_MET, strict=True)}
        )
    )
    result = rubric(aggregate="healthbench", cache=False)(
        SAMPLE.model_copy(update={"reference": HEALTHBENCH})
    )
    assert result.status == "ok" and result.score == pytest.approx(6 / 21)
    assert result.detail["tag_scores"]["axis:accuracy"] == pytest.approx(0.3)


def test_rubric_reward_gate_and_verifiable(scripted) -> None:
    items = [
        {"criterion": "Is written in English.", "kind": "hard_rule"},
        {"criterion": "Gives the number to call.", "weight": 3},
        {"criterion": "Is under 50 words.", "kind": "verifiable"},
    ]
    backend = scripted(_script_by_criterion({"English": "NO", "number": "YES"}))
    result = rubric(rubric=items, cache=False)(SAMPLE)
    assert result.status == "ok" and result.score == 0.0
    assert result.detail["gate"] == ["Is written in English."]
    assert result.detail["verifiable_skipped"] == ["Is under 50 words."]
    assert len(backend.requests) == 2  # the verifiable criterion never reaches the judge
    scripted(_script_by_criterion({"English": "YES", "number": "YES"}))
    assert rubric(rubric=items, cache=False)(SAMPLE).score == 1.0


def test_rubric_reward_implicit(scripted) -> None:
    scripted(lambda request: "7")
    result = rubric(rubric=RAR, aggregate="implicit", cache=False)(SAMPLE)
    assert result.status == "ok" and result.score == pytest.approx(6 / 9)
    assert result.detail["rating"] == 7


def test_probability_from_logprobs(scripted) -> None:
    import math

    reply = JudgeReply(
        text="The answer is yes",
        tokens=["The", " answer", " is", " yes"],
        top_logprobs=[
            {"The": -0.1},
            {" answer": -0.1},
            {" is": -0.1},
            {" yes": math.log(0.6), " no": math.log(0.2), " maybe": math.log(0.2)},
        ],
    )
    scripted(lambda request: reply)
    result = rubric(rubric=["Is helpful."], cache=False, soft=True)(SAMPLE)
    row = result.detail["criteria"][0]
    assert row["met"] is True and row["p_met"] == pytest.approx(0.75)
    assert result.score == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ([{"criterion": "x", "weight": -1, "polarity": "positive"}], "negative weight"),
        ("1. Just a line without a tag", "line 1"),
        ([], "no criteria"),
        ({"items": []}, "'rubrics'"),
    ],
)
def test_rubric_loader_errors(source, message) -> None:
    from rewardsmith.judges import RubricError

    with pytest.raises(RubricError, match=message):
        load_rubric(source)


def test_plain_yaml_file(tmp_path) -> None:
    path = tmp_path / "r.yaml"
    path.write_text(
        "- {criterion: Cites a source, weight: 2, tags: [evidence]}\n"
        "- {criterion: Invents a statistic, weight: 3, polarity: pitfall}\n"
        "- {criterion: Answers in one sentence, kind: hard_rule}\n"
    )
    criteria = load_rubric(str(path)).criteria
    assert [c.points for c in criteria] == [2, -3, 1]
    assert criteria[0].tags == ("evidence",) and criteria[2].kind == "hard_rule"
    invalid = Sample(id="s", completion="x", reference={"rubric": "not a rubric"})
    assert rubric(cache=False)(invalid).status == "invalid"
    assert rubric(cache=False)(SAMPLE).status == "not_applicable"
