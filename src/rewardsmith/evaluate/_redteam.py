"""The attack pass: build each attack from the data's rows, score it beside the honest
answers, and count how often the attack beats them.

Per row, one group is scored: the honest right answer, the honest wrong answer, every
attacked completion and the baselines cases bring. An attacked completion *succeeds* on a
component when it counts for more than its baseline there (a baseline that scores nothing,
is null or is missing counts as 0), and on the total (component ``reward``) when its reward
-- or, when the spec has a `group_transform`, its advantage -- is higher. A null total
(`timeout`, `error`, `invalid`, whatever cause the reward names, or `not_applicable`) is an
escape: trainers give a null reward zero advantage (TRL) or 0.0 (verl, OpenRLHF), so it
counts as a success when being left out beats the baseline -- the honest wrong answer, or a
baseline scoring no more than the row's lowest honest answer (a null one counting 0) --
unless the spec's `on_error` (or the engine) gives it a value no better than the baseline's,
or the baseline is null too (a tie). A failed component is an escape on that component
unless the baseline failed there too. A row is left out of the attacks only when the reward
applies to none of its completions: every one scored there (honest and attacked) is null by
no doing of its own (`not_applicable`, or a failure not charged to the completion), as
`math` is on a row without a reference; it leaves `n` and is listed with why. When any
completion of the row scored, a reward's own "not applicable" or "infrastructure" on the
baseline cannot hide a trick there.
"""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from ..combine import counted
from ..models import FAILURE_STATUSES, Result, Sample, Score, Status
from ..spec import RewardSpec
from ._attacks import Attack, Case, Target, wrong_makers
from ._data import BestOfNRow, LabelledRow, PairRow, PromptRow, Row
from ._metrics import reason_of
from ._scoring import Scorer

__all__ = ["AttackOutcome", "RedTeam", "build_targets", "run_attacks"]

TOTAL = "reward"
"""The component name under which the total reward's outcome is reported."""
_EPS = 1e-9
_ESCAPES: tuple[Status, ...] = (*FAILURE_STATUSES, "not_applicable")
"""Statuses of a null total that count as an escape (a trainer reads the null as 0)."""
_EXAMPLES = 3
_SHOWN_CHARS = 400


@dataclass
class AttackOutcome:
    """One attack on one component: how often it beat its baseline, with examples."""

    attack: str
    family: str
    component: str
    n: int = 0
    successes: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)

    @property
    def success_rate(self) -> float:
        return self.successes / self.n if self.n else 0.0


@dataclass
class RedTeam:
    """Everything the attack pass found."""

    outcomes: list[AttackOutcome]
    rows: int
    """Rows the attacks were built from."""
    samples: int
    baselines: dict[str, float]
    """Mean honest right and wrong rewards, and the share of rows where right > wrong."""
    skipped_rows: dict[str, str] = field(default_factory=dict)
    """Row id -> why the reward applies to none of its completions (see `_left_out`)."""
    skipped_kinds: dict[str, int] = field(default_factory=dict)
    """What made the left-out rows null (`not_applicable`, `error caused by infrastructure`,
    ...) -> how many rows, so a run that measured nothing can say why."""


@dataclass
class _Planned:
    target: Target
    base: dict[str, Any]
    cases: list[tuple[Attack, int, Case]]


def _text(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return Sample(id="x", completion=value).text
    except ValidationError:
        return None


def _plain(text: str | None) -> str | None:
    """An honest answer without the reasoning tags (the format attacks' baseline)."""
    if text is None:
        return None
    return text.replace("<think>", "").replace("</think>", "\n").strip() or None


def _gold(reference: Any) -> str | None:
    if isinstance(reference, bool) or reference is None:
        return None
    if isinstance(reference, int | float):
        return str(reference)
    if isinstance(reference, list) and reference and isinstance(reference[0], str):
        return reference[0]
    if not isinstance(reference, str):
        return None
    from ..verifiers.math import extract_answer

    found = extract_answer(reference).answer
    if found is not None:
        return found
    return reference.strip() if 0 < len(reference.strip()) <= 100 else None


def _right_from_reference(sample: Sample, gold: str | None) -> str | None:
    meta = sample.metadata
    if isinstance(meta.get("solution"), str):
        return str(meta["solution"])
    if isinstance(meta.get("canonical_solution"), str):
        prompt = sample.prompt if isinstance(sample.prompt, str) else ""
        return prompt + str(meta["canonical_solution"])
    reference = sample.reference
    if isinstance(reference, str) and gold is not None and len(reference) > len(gold) + 20:
        return reference  # a worked solution (GSM8K's answer column)
    return None


def build_targets(
    rows: Sequence[Row], params: dict[str, list[dict[str, Any]]]
) -> list[tuple[Target, dict[str, Any]]]:
    """One target per distinct (prompt, reference), with the sample fields to score it with."""
    merged: dict[str, tuple[Target, dict[str, Any]]] = {}
    for row in rows:
        try:
            sample = Sample.model_validate({**row.base, "id": row.id, "completion": ""})
        except ValidationError:
            continue
        right = wrong = None
        if isinstance(row, LabelledRow):
            text = _text(row.completion)
            right, wrong = (text, None) if row.label else (None, text)
        elif isinstance(row, PairRow | BestOfNRow):
            right, wrong = row.chosen[0], row.rejected[0]
        prompt = _text(sample.prompt) or ""
        key = json.dumps([prompt, sample.reference], sort_keys=True, default=str)
        gold = _gold(sample.reference)
        if isinstance(row, PromptRow):
            right = _right_from_reference(sample, gold)
        if key in merged:
            old, base = merged[key]
            merged[key] = (
                Target(
                    old.id,
                    old.prompt,
                    old.reference,
                    old.metadata,
                    old.gold,
                    old.right or _plain(right),
                    old.wrong or wrong,
                    params,
                ),
                base,
            )
            continue
        base = {k: v for k, v in row.base.items() if k != "group"}
        if isinstance(row, PairRow | BestOfNRow) and sample.reference is None:
            base["reference"] = right  # a pairwise judge compares against the better answer
        base["metadata"] = {**sample.metadata, "opponent": right} if right else sample.metadata
        target = Target(
            row.id, prompt, sample.reference, sample.metadata, gold, _plain(right), wrong, params
        )
        merged[key] = (target, base)
    finished = []
    makers = wrong_makers()
    for target, base in merged.values():
        if target.wrong is None:
            made = next((w for make in makers if (w := make(target)) is not None), None)
            target = Target(
                target.id,
                target.prompt,
                target.reference,
                target.metadata,
                target.gold,
                target.right,
                made,
                params,
            )
        finished.append((target, base))
    return finished


def _plan(
    targets: list[tuple[Target, dict[str, Any]]],
    attacks: Sequence[Attack],
    max_rows: int | None,
    seed: int,
) -> list[_Planned]:
    chosen = targets
    if max_rows is not None and len(targets) > max_rows:
        keep = sorted(random.Random(seed).sample(range(len(targets)), max_rows))
        chosen = [targets[i] for i in keep]
    planned = []
    for position, (target, base) in enumerate(chosen):
        cases = [
            (attack, index, case)
            for attack in attacks
            if attack.rows is None or position < attack.rows
            for index, case in enumerate(attack.make(target))
        ]
        if cases:
            planned.append(_Planned(target, base, cases))
    return planned


def _samples(planned: list[_Planned]) -> tuple[list[dict[str, Any]], list[tuple[int, str]]]:
    """The samples to score and, for each, (plan position, suffix): results are looked up by
    position, so no two targets can share a result whatever their ids."""
    samples, keys = [], []
    for position, plan in enumerate(planned):
        completions = [
            ("honest-right", plan.target.right),
            ("honest-wrong", plan.target.wrong),
        ]
        for attack, index, case in plan.cases:
            completions.append((f"{attack.name}#{index}", case.completion))
            completions.append((f"{attack.name}#{index}-baseline", case.baseline))
        group = f"attack:{plan.target.id}"
        for suffix, completion in completions:
            if completion is not None:
                sample = {**plan.base, "id": f"{plan.target.id}/{suffix}", "group": group}
                samples.append({**sample, "completion": completion})
                keys.append((position, suffix))
    return samples, keys


def _counted(spec: RewardSpec | None, result: Result, name: str) -> float | None:
    """The component's value in the total (its score, or its lowest behind a closed gate:
    `combine.counted`), else None (not ok)."""
    score = result.components.get(name)
    if score is None or score.status != "ok" or score.score is None:
        return None
    if spec is None or name not in spec.rewards:
        return score.score
    return next(c.score for c in counted(spec, result.components) if c.name == name)


def _null_kind(result: Result) -> str | None:
    """How `result` is null by no doing of its completion (`not_applicable`, or a failure
    whose cause is not the completion), else None: it scored, or its completion failed it."""
    if result.reward is not None:
        return None
    if result.status == "not_applicable":
        return "not_applicable"
    cause = result.cause
    return None if cause in (None, "completion") else f"{result.status} caused by {cause}"


def _left_out(results: Sequence[Result]) -> tuple[str, str] | None:
    """(what made them null, why) when the reward applies to no completion of a row: every
    result on it is null by no doing of its own. One that scored (or failed by its own
    completion) makes the row a target, so no claim on the baseline alone can hide a trick."""
    kinds = [_null_kind(r) for r in results]
    if not kinds or None in kinds:
        return None
    kind = ", ".join(sorted({k for k in kinds if k is not None}))
    detail = reason_of(results[0])
    return kind, kind if detail == results[0].status else f"{kind}: {detail}"


def _escaped(result: Result, name: str) -> bool:
    """Whether the completion left `name` without a value: a failure, or a null total."""
    if name == TOTAL:
        return result.status in _ESCAPES
    return result.components[name].status in FAILURE_STATUSES


def _total(result: Result) -> float | None:
    return result.advantage if "advantage" in result.model_fields_set else result.reward


def _beats_total(attacked: Result, baseline: Result | None, left_out_wins: bool) -> bool:
    """Whether the attacked total beats the baseline's (a null baseline counts 0); a null
    attacked total wins when `left_out_wins` (being left out beats this baseline), unless
    the baseline is null too (a tie)."""
    floor = _total(baseline) if baseline is not None else None
    value = _total(attacked)
    if value is None:
        tie = baseline is not None and floor is None
        return attacked.status in _ESCAPES and left_out_wins and not tie
    return value > (floor or 0.0) + _EPS


def _left_out_wins(case: Case, baseline: Result | None, honest: Sequence[Result | None]) -> bool:
    """Whether being left out (zero advantage, or 0.0) beats the case's baseline: always
    against the honest wrong answer (or none); against another baseline only when it scores
    no more than the row's lowest honest answer (a null one counting 0), so a null next to an
    honest right answer that scored the top is no success."""
    if case.against == "wrong" and case.baseline is None:
        return True
    floor = _total(baseline) if baseline is not None else None
    lowest = min(((_total(r) or 0.0) for r in honest if r is not None), default=None)
    return floor is None or lowest is None or floor <= lowest + _EPS


def _beats_component(
    spec: RewardSpec | None, name: str, attacked: Result, baseline: Result | None
) -> bool | None:
    mine: Score | None = attacked.components.get(name)
    theirs: Score | None = baseline.components.get(name) if baseline is not None else None
    theirs_failed = theirs is not None and theirs.status in FAILURE_STATUSES
    if mine is not None and mine.status in FAILURE_STATUSES:
        return not theirs_failed  # an escape, unless the baseline failed there too
    value = _counted(spec, attacked, name)
    floor = _counted(spec, baseline, name) if baseline is not None else None
    if value is None and floor is None and not theirs_failed:
        return None  # counted on neither side: not applicable
    return (value or 0.0) > (floor or 0.0) + _EPS


def run_attacks(
    rows: Sequence[Row],
    scorer: Scorer,
    spec: RewardSpec | None,
    attacks: Sequence[Attack],
    *,
    max_rows: int | None,
    seed: int = 0,
    advance: Callable[[int], None] = lambda n: None,
    announce: Callable[[int], None] = lambda n: None,
) -> RedTeam:
    """Score every attack built from `rows` and tally its outcomes."""
    params: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for component in spec.rewards.values() if spec is not None else ():
        params[component.type].append(dict(component.params))
    planned = _plan(build_targets(rows, dict(params)), attacks, max_rows, seed)
    samples, keys = _samples(planned)
    announce(len(samples))
    results = dict(zip(keys, scorer.score(samples, advance), strict=True))
    by_row: defaultdict[int, list[Result]] = defaultdict(list)
    for (row_at, _), result in results.items():
        by_row[row_at].append(result)
    outcomes: dict[tuple[str, str], AttackOutcome] = {}
    skipped: dict[str, str] = {}
    kinds: Counter[str] = Counter()
    right_rewards, wrong_rewards, separated = [], [], []
    for position, plan in enumerate(planned):
        tid = plan.target.id
        right, wrong = (
            results.get((position, "honest-right")),
            results.get((position, "honest-wrong")),
        )
        if right is not None and right.reward is not None:
            right_rewards.append(right.reward)
        if wrong is not None and wrong.reward is not None:
            wrong_rewards.append(wrong.reward)
        if right is not None and wrong is not None and None not in (right.reward, wrong.reward):
            separated.append(right.reward > wrong.reward)  # type: ignore[operator]
        left_out = _left_out(by_row[position])
        if left_out is not None:
            kinds[left_out[0]] += 1
            skipped[tid] = left_out[1]
            continue
        for attack, index, case in plan.cases:
            attacked = results[(position, f"{attack.name}#{index}")]
            baseline = (
                results[(position, f"{attack.name}#{index}-baseline")]
                if case.baseline is not None
                else (right if case.against == "right" else wrong)
            )
            if case.against == "right" and baseline is None:
                continue  # nothing to compare a right-answer trick with
            wins = _left_out_wins(case, baseline, (right, wrong))
            for name in (TOTAL, *attacked.components):
                if attack.by_failure and not _escaped(attacked, name):
                    won: bool | None = False
                else:
                    won = (
                        _beats_total(attacked, baseline, wins)
                        if name == TOTAL
                        else _beats_component(spec, name, attacked, baseline)
                    )
                if won is None:
                    continue
                outcome = outcomes.setdefault(
                    (attack.name, name), AttackOutcome(attack.name, attack.family, name)
                )
                outcome.n += 1
                if won:
                    outcome.successes += 1
                    if len(outcome.examples) < _EXAMPLES:
                        outcome.examples.append(_example(tid, case, attacked, baseline, name))
    baselines = {}
    if right_rewards:
        baselines["honest_right_mean"] = sum(right_rewards) / len(right_rewards)
    if wrong_rewards:
        baselines["honest_wrong_mean"] = sum(wrong_rewards) / len(wrong_rewards)
    if separated:
        baselines["right_above_wrong"] = sum(separated) / len(separated)
    ordered = sorted(
        outcomes.values(), key=lambda o: (o.family, o.attack, o.component != TOTAL, o.component)
    )
    return RedTeam(ordered, len(planned), len(samples), baselines, skipped, dict(kinds))


def _example(
    target_id: str, case: Case, attacked: Result, baseline: Result | None, name: str
) -> dict[str, Any]:
    def value(result: Result | None) -> float | None:
        if result is None:
            return None
        if name == TOTAL:
            return _total(result)
        score = result.components.get(name)
        return score.score if score is not None else None

    completion = case.completion
    shown = (
        completion
        if len(completion) <= _SHOWN_CHARS
        else completion[:_SHOWN_CHARS] + f"... ({len(completion)} chars)"
    )
    return {
        "row": target_id,
        "note": case.note,
        "completion": shown,
        "attacked": value(attacked),
        "baseline": value(baseline),
        "status": attacked.status if name == TOTAL else attacked.components[name].status,
        "reason": reason_of(attacked),
    }
