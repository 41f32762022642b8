"""The `math` reward: extract the answer from the completion and the gold from the reference,
then compare them exactly.

Outcomes:

* reference missing -> `not_applicable`; reference whose gold cannot be extracted, or that
  trips a safety limit (power tower, 1,000-character answer) -> `invalid`;
* otherwise `ok` with 1.0 or 0.0. A completion with no committed answer (empty, unclosed
  `<think>`, hedging, restating the question) scores 0 with a reason starting "no answer";
  a pathological prediction (`\\boxed{9^{9^{9^9}}}`, 5,000 boxes) is simply wrong: 0, with
  the limit it tripped as the reason. Only the gold can make a sample `invalid`.
"""

from __future__ import annotations

from typing import Any

from ...models import Message, Sample, Score
from ...registry import RewardFn, reward
from ._config import Fallback, MathConfig, MultipleAnswers
from ._equivalence import MAX_ANSWER_CHARS, compare, too_complex
from ._extract import extract_answer
from ._normalize import normalize

__all__ = ["math"]


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


@reward("math", preload=("sympy", "latex2sympy2_extended"))
def math(
    *,
    fallback: Fallback = "last_number",
    multiple_answers: MultipleAnswers = "reject",
    symbolic: bool = True,
) -> RewardFn:
    """Verifiable math: 1 when the completion's final answer equals the reference's, else 0.

    `fallback`: `last_number` lets an unmarked completion be read by the last number of its
    final line; `none` requires a marked answer. `multiple_answers`: `reject` scores hedging
    (several different final answers) 0, `last` keeps the last. `symbolic`: allow the sympy
    comparison beyond exact strings and numbers.
    """
    config = MathConfig(fallback=fallback, multiple_answers=multiple_answers, symbolic=symbolic)

    def score(sample: Sample) -> Score:
        reference = _reference_text(sample.reference)
        if reference is None or not reference.strip():
            if sample.reference is None or isinstance(sample.reference, str):
                return Score.failed("not_applicable", "no reference answer")
            kind = type(sample.reference).__name__
            return Score.failed("invalid", f"reference must be text or a number, not {kind}")
        gold = extract_answer(reference, config)
        if gold.answer is None:
            return Score.failed("invalid", f"gold: {gold.reason}", gold_candidates=gold.candidates)
        refused = "answer too long" if len(gold.answer) > MAX_ANSWER_CHARS else None
        refused = refused or too_complex(normalize(gold.answer))
        if refused is not None:
            return Score.failed("invalid", f"gold not evaluated: {refused}", gold=gold.answer)
        pred = extract_answer(sample.text, config, prompt=_prompt_text(sample.prompt))
        if pred.answer is None:
            return Score.ok(
                0.0, answer=None, gold=gold.answer, reason=pred.reason, candidates=pred.candidates
            )
        verdict = compare(pred.answer, gold.answer, symbolic=config.symbolic)
        if verdict.gold_unparseable:
            return Score.failed("invalid", "gold answer cannot be parsed", gold=gold.answer)
        return Score.ok(
            1.0 if verdict.equal else 0.0,
            answer=pred.answer,
            gold=gold.answer,
            reason=verdict.reason,
            source=pred.source,
        )

    return score
