"""Scoring every assistant turn of a trajectory (a component's `scope: turns`).

A multi-turn completion is a conversation: assistant turns, tool calls, tool results. With
`scope: final` (the default) a component scores the last assistant turn, as for any chat
completion. With `scope: turns` it scores each assistant turn on its own view of the sample:

- the turn is the view's completion, and everything before it (the prompt, the earlier
  turns, the tool results) is the view's prompt, so a judge sees the context of the step;
- the view's reference is ``metadata.turn_references[k]`` for the k-th assistant turn when
  the sample has that list (one gold per turn, e.g. the expected tool calls of each step),
  else the sample's own reference.

The component's result carries one value per turn in ``detail.steps`` (what
``combine: renorm`` reads as per-step process rewards) and, as its score, their mean; for a
penalty (a reward whose declared range tops out at or below 0, as `length` and `repetition`),
the worst turn's value instead: averaged, nine "ok" turns would cut an overlong turn's penalty
tenfold. The policy decides how many turns it takes, so neither count is an escape: a turn
past the end of ``turn_references`` scores the reward's floor (the low end of the range it
declares with `bounded`; 0 for a reward that declares none), with the reason, and a gold turn
the trajectory never reached counts the floor in the mean (or the minimum). Whatever the
trajectory, the dataset's ``turn_references`` decide validity: an empty list, a null entry or
an entry the reward's declared check refuses (`registry.checks_references`) is `invalid`
before any turn is scored. The turns of a reward that declares its range share the spec's
`timeout_s`: a turn after the first that would start past the time budget (`_budget`) scores
the floor too, as does every turn after it (their views never built), with the reason, so
slow turns end in a score, never in the engine's timeout. A reward that declares no range
gets no budget: its floor, 0, could score above its bad turns.

Views are built one at a time: each holds its whole prefix, so all of them at once would
take memory growing with the square of the number of turns.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any, Literal

from .models import FAILURE_STATUSES, Message, Sample, Score
from .registry import (
    ReferenceCheck,
    RewardFn,
    bounded,
    declared_bounds,
    declared_reference_check,
    declared_time,
    timed,
)

__all__ = ["TURN_REFERENCES", "per_turn", "turn_views"]

TURN_REFERENCES = "turn_references"
"""The metadata key holding one reference per assistant turn."""
_SPARE_S = 0.1
"""What the time budget leaves of a sample's timeout beyond its last turn's worst case:
building the views, combining the turns, sending the result."""


def _as_messages(prompt: str | list[Message] | None) -> list[Message]:
    if prompt is None:
        return []
    if isinstance(prompt, str):
        return [Message(role="user", content=prompt)]
    return list(prompt)


def _assistant_turns(sample: Sample) -> list[int]:
    """Indices of the assistant messages of a conversation; [] for text or none."""
    if isinstance(sample.completion, str):
        return []
    return [i for i, message in enumerate(sample.completion) if message.role == "assistant"]


def turn_views(sample: Sample) -> Iterator[Sample]:
    """One sample per assistant turn, built as it is asked for: the turn as completion, what
    came before as prompt.

    A text completion is one turn: itself (a chat without an assistant message is not a
    valid sample).
    """
    turns = _assistant_turns(sample)
    if not turns:
        yield sample
        return
    context = _as_messages(sample.prompt)
    completion = sample.completion
    for i in turns:
        prefix = context + completion[:i]  # type: ignore[operator]
        yield sample.model_copy(update={"prompt": prefix, "completion": [completion[i]]})


def per_turn(
    fn: RewardFn, reduce: Literal["mean", "min"] | None = None, timeout_s: float | None = None
) -> RewardFn:
    """`fn` applied to every assistant turn; per-turn values in ``detail.steps``. Missing and
    extra turns score `fn`'s floor; the result declares `fn`'s range. `reduce` turns the
    per-turn values into the score: by default ``min`` (the worst turn) for a penalty, a
    reward whose range tops out at or below 0, else ``mean``. `timeout_s` (the spec's) sets
    the time budget of `_budget` when `fn` declares its range: a turn after the first that
    would start past it scores the floor instead, and so does every later turn, so slow
    turns end in a score, not in the engine's timeout."""
    declared = declared_bounds(fn)
    floor = declared[0] if declared is not None else 0.0
    if reduce is None:
        reduce = "min" if declared is not None and declared[1] <= 0 else "mean"
    check = declared_reference_check(fn)
    turn_s = declared_time(fn)
    # a floor is a penalty only on a declared range: 0 could pay better than a bad turn
    budget = _budget(timeout_s, turn_s) if declared is not None else None

    def score(sample: Sample) -> Score:
        references = sample.metadata.get(TURN_REFERENCES)
        if references is not None:
            problem = _references_problem(references, check)
            if problem is not None:
                return Score.failed("invalid", problem)
        count = max(1, len(_assistant_turns(sample)))
        scores: list[Score] = []
        started = time.monotonic()
        for k, view in enumerate(turn_views(sample)):
            elapsed = time.monotonic() - started
            if k and budget is not None and elapsed > budget:
                scores += _over_budget(k, count, elapsed, budget, floor)
                break
            if references is None:
                scores.append(fn(view))
            elif k < len(references):
                scores.append(fn(view.model_copy(update={"reference": references[k]})))
            else:
                reason = (
                    f"no reference for assistant turn {k}: metadata.{TURN_REFERENCES} has "
                    f"{len(references)}, the trajectory {count} turns: the reward's floor"
                )
                scores.append(Score.ok(floor, reason=reason))
        missing = max(0, len(references) - count) if references is not None else 0
        return _combine_turns(scores, missing, floor, reduce)

    if turn_s is not None and budget is not None:
        timed(score, budget + turn_s)
    return bounded(score, *declared) if declared is not None else score


def _over_budget(k: int, count: int, elapsed: float, budget: float, floor: float) -> list[Score]:
    """The floor for turn `k` and every turn after it, their views never built: building
    each copies its prefix, which over many turns is quadratic."""
    reason = (
        f"assistant turns {k} and on not scored: the turns before took {elapsed:.2f}s, "
        f"over the budget of {budget:g}s: the reward's floor"
    )
    return [Score.ok(floor, reason=reason)] * (count - k)


def _budget(timeout_s: float | None, turn_s: float | None) -> float | None:
    """How long after its first turn starts a trajectory may start another: what leaves one
    more turn's declared worst case (`turn_s`) and `_SPARE_S` under `timeout_s`, so the
    sample's worst case is the budget plus one turn; half of `timeout_s` for a reward that
    declares no worst case (a slow turn can still outlive the timeout, as without turns);
    None (no budget) without a timeout. Never less than one turn's worst case: a shorter
    budget would floor turns of ordinary speed (0.15 s for `sql` under 5 s), so a timeout
    not above two turns' worst case is refused (the sample's declared worst case exceeds it)."""
    if timeout_s is None:
        return None
    if turn_s is None:
        return timeout_s / 2
    return max(turn_s, timeout_s - _SPARE_S - turn_s)


def _references_problem(references: Any, check: ReferenceCheck | None) -> str | None:
    """What makes ``metadata.turn_references`` invalid, or None: every entry is checked (with
    the reward's declared check, when it has one) before any turn is scored, so the dataset
    alone decides, never how far the trajectory goes."""
    if not isinstance(references, list) or not references:
        return f"metadata.{TURN_REFERENCES} must be a non-empty list, one reference per turn"
    for k, reference in enumerate(references):
        problem = "is null" if reference is None else check(reference) if check else None
        if problem is not None:
            return f"metadata.{TURN_REFERENCES}[{k}] {problem}"
    return None


def _combine_turns(scores: list[Score], missing: int, floor: float, reduce: str) -> Score:
    """The component's score from its turns' scores: a failure decides (the first one charged
    to the completion, else the first, with its cause), else the mean
    (or the minimum) over the turns that apply, plus `missing` unreached gold turns, which
    count `floor`."""
    turns: list[dict[str, Any]] = []
    steps: list[float | None] = []
    for k, turn in enumerate(scores):
        if not isinstance(turn, Score):
            return Score.failed("error", f"turn {k}: reward returned {type(turn).__name__}")
        if turn.status == "ok" and (turn.score is None or not math.isfinite(turn.score)):
            return Score.failed("error", f"turn {k}: non-finite score {turn.score!r}")
        turns.append({"turn": k, "score": turn.score, "status": turn.status, **turn.detail})
        steps.append(turn.score if turn.status == "ok" else None)
    failed = [(k, turn) for k, turn in enumerate(scores) if turn.status in FAILURE_STATUSES]
    if failed:  # a charged turn first: a turn left out must not hide one the completion failed
        k, turn = min(failed, key=lambda item: (item[1].cause != "completion", item[0]))
        reason = turn.detail.get("reason", turn.status)
        return Score.failed(
            turn.status, f"turn {k}: {reason}", cause=turn.cause, steps=steps, turns=turns
        )
    counted = [s for s in steps if s is not None]
    if not counted:
        return Score.failed("not_applicable", "no turn applies", steps=steps, turns=turns)
    values = [*counted, *[floor] * missing]
    value = min(values) if reduce == "min" else math.fsum(values) / len(values)
    detail: dict[str, Any] = {"steps": steps, "turns": turns, "reduce": reduce}
    if missing:
        detail["missing_turns"] = missing
    return Score.ok(value, **detail)
