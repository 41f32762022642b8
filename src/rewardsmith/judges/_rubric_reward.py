"""The `rubric` reward: one judge call per criterion, then an aggregation."""

from __future__ import annotations

from typing import Any, Literal

from .._exceptions import ConfigError
from ..models import Sample, Score
from ..registry import RewardFn, reward
from ._aggregate import Verdict, explicit, gate, healthbench, implicit, unweighted
from ._backends import LocalRuntime as Runtime
from ._judge import COMMON, Judge, Unparseable, gather_bounded, judge_settings, unparsed
from ._prompts import (
    criterion_messages,
    parse_yes_no,
    rating_messages,
    verdict_schema,
)
from ._rubric import Criterion, Rubric, RubricError, RubricFormat, load_rubric

__all__ = ["rubric"]

_VERDICT_TOKENS = 6
_IMPLICIT_TOKENS = 4


def _sample_rubric(sample: Sample, fmt: RubricFormat) -> Rubric | None:
    """The sample's own rubric: `reference.rubric(s)`, a list `reference`, or
    `metadata.rubric`; None when it has none."""
    ref = sample.reference
    if isinstance(ref, dict) and any(k in ref for k in ("rubric", "rubrics", "criteria")):
        return load_rubric(ref, fmt)
    if isinstance(ref, list) and ref and isinstance(ref[0], dict):
        return load_rubric(ref, fmt)
    if "rubric" in sample.metadata:
        return load_rubric(sample.metadata["rubric"], fmt)
    return None


async def judge_criterion(
    judge: Judge, conversation: str, text: str, criterion: Criterion
) -> tuple[Verdict | Unparseable, dict[str, Any]]:
    """The verdict on one criterion (the failure when unparseable), and its detail row."""
    row: dict[str, Any] = {"criterion": criterion.text, "kind": criterion.kind}
    if criterion.polarity == "pitfall":
        row["polarity"] = "pitfall"
    row["points"] = criterion.points
    try:
        (met, probability), reply = await judge.ask(
            criterion_messages(conversation, text, criterion.text),
            lambda r: parse_yes_no(r.text, r.top_logprobs, r.tokens),
            _VERDICT_TOKENS,
            retry_schema=verdict_schema(),
        )
    except Unparseable as exc:
        row.update(met=None, status="error", replies=exc.replies)
        return exc, row
    row.update(met=met, p_met=probability, cached=reply.cached)
    return Verdict(met, probability), row


@reward("rubric", preload=("httpx",))
def rubric(
    *,
    rubric: list[Any] | dict[str, Any] | str | None = None,
    rubric_format: RubricFormat = "auto",
    aggregate: Literal["healthbench", "explicit", "implicit"] = "explicit",
    soft: bool = False,
    backend: Literal["local", "openai"] = "local",
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    max_concurrency: int = 8,
    request_timeout_s: float = 20.0,
    max_retries: int = 3,
    structured_output: Literal["auto", "json_schema", "json_object", "none"] = "auto",
    cache: bool | str = True,
    parse_retries: int = 2,
    deadline_s: float = 50.0,
    temperature: float = 0.0,
    top_logprobs: int = 10,
    guard: bool = True,
    guard_openers: list[str] | None = None,
    strip_think: bool = True,
    n_ctx: int = 2048,
    n_threads: int | None = None,
    runtime: Runtime = "transformers",
) -> RewardFn:
    """Rubric reward: an LLM judge marks each criterion met / not met, then an aggregation.

    The rubric is the sample's own (`reference.rubric`, a list `reference`, or
    `metadata.rubric`) or else the spec's `rubric` (inline list, OpenRubrics text, or a file
    path). `aggregate`: `healthbench` (points of met criteria / positive points, with
    per-tag scores), `explicit` (RaR: sum w_j c_j / sum w_j; `soft` uses P(met)), `implicit`
    (RaR: one holistic 1-10 rating, (s-1)/9). Hard rules gate every aggregation; verifiable
    criteria are left to rule rewards. Any criterion the judge cannot answer parseably makes
    the whole component an `error` charged to the completion (never a 0, never left out).
    """
    settings = {k: v for k, v in locals().items() if k in COMMON}
    judge = judge_settings(**settings)
    try:
        spec_rubric = load_rubric(rubric, rubric_format) if rubric is not None else None
    except RubricError as exc:
        raise ConfigError(f"rubric: {exc}") from exc

    async def judged(sample: Sample, criteria: tuple[Criterion, ...], text: str) -> Score:
        conversation = judge.conversation(sample)
        asked = [c for c in criteria if c.kind != "verifiable"]
        skipped = [c.text for c in criteria if c.kind == "verifiable"]
        if aggregate == "implicit":
            rules = [c for c in asked if c.kind == "hard_rule"]
            results = await gather_bounded(
                [judge_criterion(judge, conversation, text, c) for c in rules], max_concurrency
            )
            rating = await _holistic(judge, conversation, text, asked)
        else:
            rules = asked
            results = await gather_bounded(
                [judge_criterion(judge, conversation, text, c) for c in asked], max_concurrency
            )
            rating = None
        rows = [row for _, row in results]
        detail: dict[str, Any] = {"criteria": rows, "aggregate": aggregate}
        if skipped:
            detail["verifiable_skipped"] = skipped
        bad = [(i, v) for i, (v, _) in enumerate(results) if isinstance(v, Unparseable)]
        if bad:  # charged to the completion (see `unparsed`)
            reason = f"{len(bad)} criteria got no parseable verdict: " + "; ".join(
                repr(rules[i].text[:60]) for i, _ in bad
            )
            return unparsed(bad[0][1], reason, **detail)
        verdicts = [v for v, _ in results if isinstance(v, Verdict)]
        failed = gate(rules, verdicts)
        if failed:
            detail["gate"] = [rules[i].text for i in failed]
            return Score.ok(0.0, reason="a hard rule failed", **detail)
        if aggregate == "implicit":
            assert rating is not None
            value, expectation, about = rating
            detail.update(rating=value, expected_rating=expectation, **about)
            return Score.ok(implicit(value), **detail)
        if aggregate == "healthbench":
            value, extra = healthbench(rules, verdicts)
        else:
            value, extra = explicit(rules, verdicts, soft=soft)
        detail.update(extra)
        if value is not None:
            return Score.ok(value, **detail)
        # hard rules and pitfalls only; HealthBench counts verdicts as met or not, never soft
        value = unweighted(rules, verdicts, soft=soft and aggregate != "healthbench")
        if value is None:
            reason = "no criterion with a positive weight, a pitfall or a hard rule"
            return Score.failed("not_applicable", reason, **detail)
        reason = "no positive weight: 1 less the weight share of the pitfalls hit"
        return Score.ok(value, reason=reason, **detail)

    def score(sample: Sample) -> Score:
        try:
            own = _sample_rubric(sample, rubric_format)
        except RubricError as exc:
            return Score.failed("invalid", f"sample rubric: {exc}")
        chosen = own or spec_rubric
        if chosen is None:
            return Score.failed("not_applicable", "no rubric (spec or sample)")
        text = judge.text_of(sample)
        guarded = judge.guarded(text)
        if guarded is not None:
            return guarded
        return judge.run(judged(sample, chosen.criteria, text))

    return score


async def _holistic(
    judge: Judge, conversation: str, text: str, criteria: list[Criterion]
) -> tuple[int, float | None, dict[str, Any]]:
    """RaR implicit: one 1-10 rating of the response against the whole rubric."""
    listed = "\n".join(
        f"- [{'pitfall, must NOT happen' if c.polarity == 'pitfall' else f'weight {c.weight:g}'}]"
        f" {c.text}"
        for c in criteria
    )
    instruction = f"Rate how well the response satisfies this rubric:\n{listed}"

    value, expected, detail, _ = await judge.rate(
        rating_messages(conversation, text, instruction, 1, 10), 1, 10, _IMPLICIT_TOKENS
    )
    return value, expected, detail
