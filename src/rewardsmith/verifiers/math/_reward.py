"""The `math` reward: extract the committed answer of the completion and the gold of the
reference, check the answer is finished, then compare them exactly.

Outcomes:

* reference missing -> `not_applicable`; a reference whose gold cannot be extracted, read or
  evaluated (`\\sum` we do not evaluate, a power tower, 1,000 characters) -> `invalid`. This
  is decided from the reference alone, before the completion is read.
* otherwise `ok` with 1.0 or 0.0. Whatever the completion holds, it is `ok`: no committed
  answer (empty, unclosed `<think>`, a hedge, restating the question), an unfinished answer
  (`\\binom{31}{28}` for 4495), a pathological one (`\\boxed{9^{9^{9^9}}}`, 5,000 boxes):
  each is simply wrong, 0, with the reason. A null would be better than a 0 under group
  advantages, so the policy could learn to produce it. That holds even for a bug of ours
  while reading the completion: 0 with `internal_error: true` in the detail, and logged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import mpmath

from ...models import Message, Sample, Score
from ...registry import RewardFn, bounded, reward
from ._answer import Answer, expression_tree, parse_answer
from ._config import Fallback, Fractions, MathConfig, MultipleAnswers, Powers, Radicals, Units
from ._equivalence import MAX_ANSWER_CHARS, compare, too_complex
from ._extract import Extraction, extract_answer, extract_gold
from ._form import restated, unfinished
from ._normalize import normalize
from ._numeric import Unevaluable, time_limit, value_of

__all__ = ["math"]

_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Gold:
    answer: str | None
    problem: str | None
    """Why the reference cannot be judged (-> `invalid`), or None."""
    parts: int = 1
    candidates: tuple[str, ...] = ()


def _reference_text(reference: Any) -> str | None:
    """The reference as text: strings as they are, numbers written out, else None."""
    if isinstance(reference, str):
        return reference
    if isinstance(reference, (int, float)) and not isinstance(reference, bool):
        return str(reference)
    return None


def _prompt_text(prompt: str | list[Message] | None) -> str | None:
    if prompt is None or isinstance(prompt, str):
        return prompt
    return "\n".join(m.text for m in prompt)


def _expressions(answer: Answer) -> list[Answer]:
    if answer.kind == "expr":
        return [answer]
    if answer.kind == "chain":
        return _expressions(answer.items[-1])
    return [e for item in answer.items for e in _expressions(item)]


def _unreadable(answer: Answer) -> str | None:
    """Why a gold's expression cannot be evaluated, or None."""
    for expression in _expressions(answer):
        tree = expression.tree or expression_tree(expression.text)
        if tree is None:
            return "gold answer cannot be parsed"
        try:
            with mpmath.workdps(15):
                value_of(tree, {}) if not _has_symbols(tree) else None
        except Unevaluable as exc:
            return f"gold not evaluated: {exc}"
        except (ZeroDivisionError, OverflowError, ValueError, TypeError) as exc:
            return f"gold not evaluated: {exc}"
    return None


def _has_symbols(tree: Any) -> bool:
    return tree.kind == "sym" or any(_has_symbols(arg) for arg in tree.args)


@lru_cache(maxsize=4096)
def _gold(reference: str) -> _Gold:
    """The gold of a reference, checked once (a group's samples share it)."""
    extracted = extract_gold(reference)
    if extracted.answer is None:
        return _Gold(None, f"gold: {extracted.reason}", candidates=extracted.candidates)
    if len(extracted.answer) > MAX_ANSWER_CHARS:
        return _Gold(None, "gold not evaluated: answer too long")
    normalized = normalize(extracted.answer)
    problem = too_complex(normalized)
    if problem is not None:
        return _Gold(None, f"gold not evaluated: {problem}")
    structure = parse_answer(normalized)
    problem = _unreadable(structure)
    if problem is not None:
        return _Gold(None, problem)
    return _Gold(extracted.answer, None, structure.parts())


def _judge(pred: Extraction, gold: _Gold, config: MathConfig, prompt: str | None) -> Score:
    assert gold.answer is not None
    answer = pred.answer
    detail: dict[str, Any] = {"answer": answer, "gold": gold.answer, "source": pred.source}
    if answer is None:
        several = len(pred.candidates) > 1 and gold.parts > 1
        if not several or config.multiple_answers != "reject":
            return Score.ok(0.0, **detail, reason=pred.reason, candidates=pred.candidates)
        answer = ", ".join(pred.candidates)  # several answers for a gold with several parts
        detail["answer"] = answer
    refused = unfinished(answer, gold.answer, config)
    if refused is not None:
        return Score.ok(0.0, **detail, reason=refused)
    if prompt and config.finished_form:
        copied = restated(answer, gold.answer, prompt)
        if copied is not None:
            return Score.ok(0.0, **detail, reason=f"restates the question: {copied}")
    verdict = compare(answer, gold.answer, symbolic=config.symbolic, units=config.units)
    return Score.ok(1.0 if verdict.equal else 0.0, **detail, reason=verdict.reason)


@reward("math", preload=("mpmath",))
def math(
    *,
    fallback: Fallback = "last_number",
    multiple_answers: MultipleAnswers = "reject",
    symbolic: bool = True,
    finished_form: bool = True,
    fractions: Fractions = "reduced",
    powers: Powers = "evaluated",
    radicals: Radicals = "simplified",
    units: Units = "compare",
) -> RewardFn:
    """Verifiable math: 1 when the completion's committed answer equals the reference's, else 0.

    `fallback`: `last_number` lets an unmarked completion be read by its final line; `none`
    requires a marked answer. `multiple_answers`: `reject` scores a hedge (different committed
    answers) 0, `last` keeps the last. `symbolic`: compare expressions by value, not only
    text and numbers. `finished_form`: the answer must be as evaluated as the gold (no
    `\\binom{31}{28}` for 4495), with `fractions: reduced|any`, `powers: evaluated|any`,
    `radicals: simplified|any` for the edge cases. `units: compare|ignore`.
    """
    config = MathConfig(
        fallback=fallback,
        multiple_answers=multiple_answers,
        symbolic=symbolic,
        finished_form=finished_form,
        fractions=fractions,
        powers=powers,
        radicals=radicals,
        units=units,
    )

    def score(sample: Sample) -> Score:
        reference = _reference_text(sample.reference)
        if reference is None or not reference.strip():
            if sample.reference is None or isinstance(sample.reference, str):
                return Score.failed("not_applicable", "no reference answer")
            kind = type(sample.reference).__name__
            return Score.failed("invalid", f"reference must be text or a number, not {kind}")
        gold = _gold(reference)
        if gold.problem is not None:
            return Score.failed("invalid", gold.problem, gold_candidates=gold.candidates)
        prompt = _prompt_text(sample.prompt)
        try:
            with time_limit():  # all the numeric work this completion can cause
                pred = extract_answer(sample.text, config, prompt=prompt)
                return _judge(pred, gold, config, prompt)
        except Exception as exc:  # a bug of ours: the completion must still not earn a null
            _LOG.exception("math: reading the completion of sample %s failed", sample.id)
            reason = f"completion not read: internal error ({type(exc).__name__}: {exc})"
            return Score.ok(
                0.0, answer=None, gold=gold.answer, reason=reason[:300], internal_error=True
            )

    return bounded(score, 0.0, 1.0)
