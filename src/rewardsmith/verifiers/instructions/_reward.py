"""The `ifeval` and `ifbench` rewards: official instruction checks, strict or loose.

A sample's `reference` (or, failing that, its `metadata`) carries ``instruction_id_list``
and ``kwargs`` as in the official data (a JSON string of that object is accepted too, as in
RLVR datasets)::

    {"instruction_id_list": ["punctuation:no_comma", "detectable_format:title"],
     "kwargs": [{}, {}]}
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from ...models import Sample, Score
from ...registry import RewardFn, bounded, reward
from ._attempt import MIN_PROSE_WORDS, AttemptRule, attempt_rule, prompt_text
from ._base import Builder, Check, InstructionError, build
from ._evaluate import Evaluator
from ._ifbench import IFBENCH
from ._ifeval import IFEVAL

__all__ = ["MAX_INSTRUCTIONS", "MAX_RESPONSE_CHARS", "ifbench", "ifeval", "parse_instructions"]

MAX_INSTRUCTIONS = 64
"""Most instructions one sample may carry (the official sets have at most 6)."""

MAX_RESPONSE_CHARS = 200_000
"""Longest response checked (several checkers run regular expressions and tokenizers whose
cost grows with the text); a longer one is what the policy wrote: 0, with the reason."""

Mode = Literal["strict", "loose"]
RewardKind = Literal["fraction", "all"]

_PRELOAD = (
    "nltk.tokenize.punkt",
    "nltk.tokenize.destructive",
    "langdetect",
    "langdetect_rs",  # optional: the fork server passes over modules that are not installed
    "punkt.data.english",
)


def _decode(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def parse_instructions(sample: Sample) -> tuple[list[str], list[Any]] | Score:
    """The (ids, kwargs) the sample asks for, or the failed score saying why there are none."""
    source: Any = _decode(sample.reference)
    if not (isinstance(source, Mapping) and "instruction_id_list" in source):
        source = sample.metadata if "instruction_id_list" in sample.metadata else None
    if source is None:
        return Score.failed("not_applicable", "no instruction_id_list in reference or metadata")
    ids = _decode(source.get("instruction_id_list"))
    kwargs = _decode(source.get("kwargs"))
    if not isinstance(ids, list) or not ids:
        return Score.failed("invalid", f"instruction_id_list must be a non-empty list: {ids!r}")
    if len(ids) > MAX_INSTRUCTIONS:
        return Score.failed("invalid", f"{len(ids)} instructions, over {MAX_INSTRUCTIONS}")
    if kwargs is None:
        kwargs = [{} for _ in ids]
    if not isinstance(kwargs, list) or len(kwargs) != len(ids):
        return Score.failed(
            "invalid",
            f"kwargs must be a list with one entry per instruction ({len(ids)}), got {kwargs!r}",
        )
    return ids, kwargs


def build_checks(
    registry: Mapping[str, Builder], ids: Sequence[Any], kwargs: Sequence[Any]
) -> list[tuple[str, Check]] | Score:
    checks = []
    for index, (instruction_id, raw) in enumerate(zip(ids, kwargs, strict=True)):
        try:
            checks.append((instruction_id, build(registry, instruction_id, raw)))
        except InstructionError as exc:
            return Score.failed(
                exc.status,  # type: ignore[arg-type]
                str(exc),
                cause=exc.cause,  # type: ignore[arg-type]
                instruction_index=index,
            )
    return checks


def too_long(response: str) -> Score | None:
    """The 0 score of a response over `MAX_RESPONSE_CHARS` (never checked), else None."""
    if len(response) <= MAX_RESPONSE_CHARS:
        return None
    return Score.ok(0.0, reason=f"response is {len(response)} chars, over {MAX_RESPONSE_CHARS}")


def checker_failed(errors: list[str], training: bool, **detail: Any) -> Score:
    """The score of a sample on which a checker raised (never read as followed or not
    followed): `error` charged to the completion that made it raise, or in training 0 with
    the reason (a policy must not earn a null by crashing a checker)."""
    first = errors[0] if errors else "a checker raised"
    reason = f"checker raised: {first}"
    if training:
        return Score.ok(0.0, reason=reason, checker_errors=sorted(set(errors)), **detail)
    return Score.failed(
        "error", reason, cause="completion", checker_errors=sorted(set(errors)), **detail
    )


def _instructions_reward(
    registry: Mapping[str, Builder], mode: Mode, kind: RewardKind, rule: AttemptRule | None
) -> RewardFn:
    def score(sample: Sample) -> Score:
        parsed = parse_instructions(sample)
        if isinstance(parsed, Score):
            return parsed
        ids, kwargs = parsed
        checks = build_checks(registry, ids, kwargs)
        if isinstance(checks, Score):
            return checks
        response = sample.text
        over = too_long(response)
        if over is not None:
            return over
        if rule is not None:
            why = rule.why_not(response, prompt_text(sample.prompt), ids, kwargs)
            if why is not None:
                return Score.ok(0.0, reason=f"no attempt at the task: {why}", training=True)
        evaluator = Evaluator(response, mode, rule is not None)
        follow = evaluator.all(checks)
        detail: dict[str, Any] = {
            "mode": mode,
            "instruction_id_list": list(ids),
            "follow_instruction_list": follow,
        }
        if evaluator.lookalikes:
            detail["lookalikes"] = evaluator.lookalikes
        if any(verdict is None for verdict in follow):
            return checker_failed(evaluator.errors, rule is not None, **detail)
        value = sum(map(bool, follow)) / len(follow) if kind == "fraction" else float(all(follow))
        return Score.ok(value, **detail, follow_all_instructions=all(follow))

    return bounded(score, 0.0, 1.0)


@reward("ifeval", preload=_PRELOAD)
def ifeval(
    *,
    mode: Mode = "strict",
    reward: RewardKind = "fraction",
    training: bool = False,
    min_words: int = MIN_PROSE_WORDS,
    require_topic: bool = False,
) -> RewardFn:
    """IFEval's 25 instruction checks, verdict-exact with the official code.

    `mode` ``strict`` checks the response as is; ``loose`` passes an instruction if it holds
    on any official variant (first and/or last line dropped, ``*`` removed). `reward` is the
    fraction of instructions followed or 1/0 for all followed. Detail holds
    `instruction_id_list` and `follow_instruction_list` (same order, repeats kept), as in the
    official result files. Unknown ids or kwargs that the official code would fill at random
    give status `invalid` naming the id. A checker that raises on the response (where the
    official code would crash) gives `error`, its verdict None.

    `training: true` is for RL: a response that does not attempt the task (empty, invisible,
    filler, only the prompt's words, under `min_words` words where the prompt asks for prose;
    see `_attempt`) scores 0, and a language check that langdetect cannot decide fails. The
    official checkers alone pay "OK" for "do not use commas". An instruction is followed only
    if it also holds on the response as a reader sees it (`as_read`: "no commas" is not followed
    with U+201A, nor "avoid Eiffel" with a Cyrillic e; `detail.lookalikes` names those that
    differ), and a checker that raises scores 0 with the reason, not `error`.
    `require_topic: true` (with `training`) also scores 0 a reply of `min_words`+ words
    sharing no stem with the prompt's topic (a fixed filler), at the price of some honest
    replies (see `_attempt`).
    """
    return _instructions_reward(
        IFEVAL, mode, reward, attempt_rule(training, min_words, require_topic)
    )


@reward("ifbench", preload=(*_PRELOAD, "emoji", "syllapy"))
def ifbench(
    *,
    mode: Mode = "strict",
    reward: RewardKind = "fraction",
    training: bool = False,
    min_words: int = MIN_PROSE_WORDS,
    require_topic: bool = False,
) -> RewardFn:
    """IFBench's 58 instruction checks, verdict-exact with the official code at c94da02.

    Same options and detail as `ifeval`. ``words:start_verb`` needs NLTK's
    ``averaged_perceptron_tagger_eng`` data installed locally; without it that instruction
    gives status `error` (it is never downloaded and never guessed).
    """
    return _instructions_reward(
        IFBENCH, mode, reward, attempt_rule(training, min_words, require_topic)
    )
