"""The attacks find real holes: every attack class succeeds on a deliberately weakened copy of
the reward family it targets (`weak_rewards.py`) and fails on the real reward."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.evaluate import evaluate, registered_attacks

from .conftest import needs_data
from .real_data import GSM8K, HUMANEVAL, read_jsonl

pytestmark = needs_data

WEAK = "tests.evaluate.weak_rewards:"


def _gsm8k(n: int = 6) -> list[dict[str, Any]]:
    return read_jsonl(GSM8K, n)


def _humaneval(n: int = 4) -> list[dict[str, Any]]:
    return read_jsonl(HUMANEVAL, n)


def _qa() -> list[dict[str, Any]]:
    return [
        {"prompt": "What is the capital of France?", "reference": "Paris"},
        {"prompt": "Who wrote Hamlet?", "reference": "William Shakespeare"},
    ]


def _choice() -> list[dict[str, Any]]:
    question = "Which planet is largest?\n(A) Mars\n(B) Jupiter\n(C) Venus\n(D) Earth"
    return [
        {"prompt": question, "reference": "B"},
        {"prompt": "2+2?\n(A) 4\n(B) 5", "reference": "A"},
    ]


NEGATED = [
    {
        "prompt": "Write a story of at least 50 words about a lighthouse.",
        "reference": {
            "not": {
                "id": "length_constraints:number_words",
                "kwargs": {"relation": "less than", "num_words": 50},
            }
        },
    },
    {
        "prompt": "List three fruits, separated by commas.",
        "reference": {"not": {"id": "punctuation:no_comma"}},
    },
]


def _negated() -> list[dict[str, Any]]:
    return NEGATED


Case = tuple[str, Callable[[], list[dict[str, Any]]], dict[str, Any], str]
"""(attacks, rows, spec, family)"""

WEAK_CASES: dict[str, Case] = {
    "answers": ("answers", _gsm8k, {"c": {"type": WEAK + "weak_math"}}, "answers"),
    "judges": ("judges", _gsm8k, {"j": {"type": WEAK + "weak_judge"}}, "judges"),
    "format": (
        "format",
        _gsm8k,
        {"c": {"type": "math"}, "f": {"type": WEAK + "weak_think_format", "weight": 0.2}},
        "format",
    ),
    "code": ("code", _humaneval, {"t": {"type": WEAK + "weak_code"}}, "code"),
    "instructions": (
        "instructions",
        _negated,
        {"i": {"type": WEAK + "weak_no_comma"}},
        "instructions",
    ),
    "text-f1": ("f1_hedge", _qa, {"f": {"type": WEAK + "weak_f1"}}, "text"),
    "text-choice": ("choice_hedge", _choice, {"c": {"type": WEAK + "weak_choice"}}, "text"),
    "length": (
        "length",
        _gsm8k,
        {"c": {"type": "math"}, "l": {"type": WEAK + "weak_length"}},
        "length",
    ),
    "repetition": ("repetition", _gsm8k, {"r": {"type": WEAK + "weak_repetition"}}, "repetition"),
    "failure": ("failure", _gsm8k, {"j": {"type": WEAK + "weak_json"}}, "failure"),
}

LENGTH = {"type": "length", "max_length": 300, "cache_length": 100, "unit": "words"}


REAL_CASES = [
    pytest.param(
        "answers",
        _gsm8k,
        {"c": {"type": "math"}},
        id="answers",
    ),
    pytest.param(
        "format",
        _gsm8k,
        {"c": {"type": "math"}, "f": {"type": "think_format", "weight": 0.2}},
        id="format",
    ),
    pytest.param(
        "code",
        _humaneval,
        {"t": {"type": "code"}},
        id="code",
    ),
    pytest.param(
        "empty_under_negation",
        _negated,
        {"i": {"type": "constraints"}},
        id="instructions",
    ),
    pytest.param(
        "f1_hedge",
        _qa,
        {"f": {"type": "f1"}},
        id="text-f1",
    ),
    pytest.param(
        "choice_hedge",
        _choice,
        {"c": {"type": "choice"}},
        id="text-choice",
    ),
    pytest.param(
        "length",
        _gsm8k,
        {"c": {"type": "math"}, "l": LENGTH},
        id="length",
    ),
    pytest.param(
        "repetition",
        _gsm8k,
        {"r": {"type": "repetition"}},
        id="repetition",
    ),
    pytest.param("failure", _gsm8k, {"c": {"type": "math"}}, id="failure-math"),
    pytest.param(
        "failure",
        _gsm8k,
        {"j": {"type": "json"}},
        id="failure-json",
    ),
]


def _succeeded(
    rows: list[dict[str, Any]],
    spec: dict[str, Any],
    attacks: str,
    tmp_path: Path,
    timeout_s: float = 30,
    **settings: Any,
) -> dict[str, float]:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    reward = {"rewards": spec, "timeout_s": timeout_s, **settings}
    summary = evaluate([path], spec=reward, attacks=attacks, workers=1)
    assert summary.redteam is not None
    return {o.attack: o.success_rate for o in summary.redteam.outcomes if o.component == "reward"}


def test_every_registered_class_has_a_weak_copy_case() -> None:
    families = {a.family for a in registered_attacks().values()}
    assert families == {case[3] for case in WEAK_CASES.values()}


@pytest.mark.parametrize("name", list(WEAK_CASES))
def test_attack_class_succeeds_on_weak_copy(name: str, tmp_path: Path) -> None:
    attacks, rows, spec, family = WEAK_CASES[name]
    rates = _succeeded(rows(), spec, attacks, tmp_path)
    assert rates, f"no {family} attack was built"
    assert max(rates.values()) > 0, f"{family}: no attack beat the weak copy: {rates}"


@pytest.mark.parametrize(("attacks", "rows", "spec"), REAL_CASES)
def test_attack_class_fails_on_real_reward(
    attacks: str, rows: Callable[[], list[dict[str, Any]]], spec: dict[str, Any], tmp_path: Path
) -> None:
    rates = _succeeded(rows(), spec, attacks, tmp_path)
    assert rates
    assert all(rate == 0 for rate in rates.values()), rates


@pytest.fixture
def real_judge() -> dict[str, Any]:
    """judge_pointwise on the embedded model (SmolLM2-135M)."""
    pytest.importorskip("transformers", reason="pip install 'rewardsmith[local]'")
    from rewardsmith.judges._backends import BackendError
    from rewardsmith.judges._local import default_local_model

    try:
        default_local_model()
    except BackendError as exc:
        pytest.skip(str(exc))
    return {
        "type": "judge_pointwise",
        "backend": "local",
        "n_threads": 1,
        "cache": False,
        "deadline_s": 100,
    }


def test_master_keys_fail_on_the_real_judge(real_judge: dict[str, Any], tmp_path: Path) -> None:
    """The embedded judge's guard must score every master key 0 without asking the model; the
    honest wrong answer is judged by SmolLM2-135M (a score >= 0), so no key can beat it."""
    rates = _succeeded(_gsm8k(1), {"j": real_judge}, "master_key", tmp_path, timeout_s=120)
    assert rates == {"master_key": 0.0}


def test_failures_escape_no_real_judge(real_judge: dict[str, Any], tmp_path: Path) -> None:
    """Completions past the judge's context (50,000 digits, 60,000 words, deep nesting) are
    charged to the completion: under GRPO none gets an advantage above the honest wrong
    answer's (before, the judge's refusal left them out of their group: 12 of 18 escaped)."""
    judge = {**real_judge, "n_ctx": 1024}
    rates = _succeeded(
        _gsm8k(3), {"j": judge}, "failure_escape", tmp_path, timeout_s=120, group_transform="grpo"
    )
    assert rates == {"failure_escape": 0.0}


def test_box_expression_skips_a_step_that_only_restates_the_answer() -> None:
    """GSM8K row 638's solution has `<<17=17>>`: boxing it is the honest answer, not an attack
    (it showed as a false success in `rewardsmith evaluate` on GSM8K)."""
    from rewardsmith.evaluate import Target
    from rewardsmith.verifiers.math._attacks import box_expression

    right = "He has <<4=4>>4 toys and <<17=17>>17 cards, so <<10+7=17>>17 in all.\n#### 17"
    target = Target("638", "How many?", right, {}, gold="17", right=right, wrong=None)
    steps = [c.completion for c in box_expression(target) if c.note == "the solution's step"]
    assert steps == ["The answer is \\boxed{10+7}."]
