"""`select`: choose one candidate per group, in one pass through the engine.

The candidates go through the engine once, with the user's spec (the scores and the judge of
correctness) plus one more component, `majority_vote`, whose per-sample step reads every
answer in a worker, under the hard timeout, and whose group step clusters the group's answers.
Groups come out as they complete (a group's candidates must be contiguous, as for any
group-scoped work), so memory holds one group, not the file.

Where the numbers come from:

- answers and clusters: the completion read per `cluster` mode, or `answer_key`;
- scores: `score_key` (a number, or a list of per-step scores, in the metadata), or a
  `component` of the spec (its score, its `detail.steps`), or else the spec's total reward;
  PRM methods read `metadata.step_scores` when neither is given;
- correctness: `correct_key` (a stored verdict: true/false or 1/0), or else the spec's first
  component (correct when it passes, score > 0; wrong when it failed on the completion,
  cause `completion`), the `math` reward when no spec is given.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from .._exceptions import ConfigError, InputError
from ..combine import GroupOrder, combine_scores
from ..engine import Engine
from ..io import Record
from ..models import Cause, Result, Sample, Score
from ..spec import RewardSpec, load_spec
from ._methods import DEFAULT_WEIGHTS, METHODS, Candidate, Weights
from ._metrics import GroupOutcome, summarize
from ._votes import ClusterMode, metadata_path, metadata_value

__all__ = ["ANSWER_COMPONENT", "Choice", "Selection", "Selector", "select"]

ANSWER_COMPONENT = "_select_answer"
"""The engine component that reads and clusters answers (not part of any total)."""

DEFAULT_JUDGE: dict[str, Any] = {"rewards": {"correct": {"type": "math"}}}
"""The judge of correctness when no spec is given."""

STEP_SCORES = "metadata.step_scores"
"""Where PRM methods read per-step scores when no other source is named."""

SampleLike = Sample | dict[str, Any] | InputError


@dataclass(frozen=True)
class Choice:
    """One group's selection: one line of `rewardsmith select`'s output."""

    group: str | None
    method: str
    id: str | None
    """The chosen candidate's id; None when nothing could be chosen (see `reason`)."""
    answer: str | None
    score: float | None
    """The method's value for the choice: votes, score, summed weight, PRM value..."""
    correct: bool | None
    """Whether the chosen answer is right (None: unknown or nothing chosen)."""
    reason: str
    candidates: int
    clusters: list[tuple[str, int]] = field(default_factory=list)
    """(answer, votes) of each answer cluster, largest first (ties in order of appearance)."""
    no_answer: int = 0
    """Candidates without an answer."""

    def as_json(self) -> dict[str, Any]:
        """The output line."""
        return {
            "group": self.group,
            "id": self.id,
            "answer": self.answer,
            "method": self.method,
            "score": self.score,
            "correct": self.correct,
            "reason": self.reason,
            "candidates": self.candidates,
            "clusters": [{"answer": a, "size": n} for a, n in self.clusters],
            "no_answer": self.no_answer,
        }


@dataclass
class Selection:
    """Every group's choice, in input order, and the summary (None without correctness)."""

    choices: list[Choice]
    summary: dict[str, Any] | None
    skipped: list[str] = field(default_factory=list)
    """Inputs that were not valid samples, with their line (or position) and why."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _steps(value: Any) -> tuple[float, ...] | None:
    if not isinstance(value, list) or not value:
        return None
    steps = tuple(_number(v) for v in value)
    return None if any(s is None for s in steps) else steps  # type: ignore[return-value]


def _verdict(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    return None


class Selector:
    """Selects among candidates with one method; reuse it (its engine's workers stay up).

    >>> with Selector("majority", cluster="math") as selector:     # doctest: +SKIP
    ...     selection = selector.select(samples)
    """

    def __init__(
        self,
        method: str = "majority",
        *,
        spec: RewardSpec | dict[str, Any] | str | None = None,
        score_key: str | None = None,
        component: str | None = None,
        cluster: ClusterMode = "math",
        answer_key: str | None = None,
        correct_key: str | None = None,
        weights: Weights = DEFAULT_WEIGHTS,
        temperature: float = 1.0,
        k: int | None = None,
        workers: int | None = None,
    ) -> None:
        """Check the options and the spec; the workers start on first use.

        Args:
            method: a name in `METHODS`.
            spec: the reward spec whose components give scores and judge correctness.
            score_key: `metadata.KEY` holding each candidate's score (or step scores).
            component: the spec component whose score (or `detail.steps`) is the score.
            cluster: how answers are told apart: `math`, `exact` or `normalized`.
            answer_key: `metadata.KEY` holding each candidate's answer, instead of reading it.
            correct_key: `metadata.KEY` holding each candidate's verdict, instead of judging.
            weights: `weighted_majority`'s weights: `sigmoid` (the default), `softmax` or
                `raw` (scores >= 0 only: a group with a negative score gets no pick).
            temperature: the softmax temperature.
            k: use the first `k` candidates of each group.
            workers: worker processes (default: one per core).
        """
        if method not in METHODS:
            raise ConfigError(f"unknown method {method!r}. Allowed: {', '.join(METHODS)}")
        if score_key is not None and component is not None:
            raise ConfigError("give --score-key or --component, not both")
        if k is not None and k < 1:
            raise ConfigError(f"k must be at least 1, got {k}")
        if not temperature > 0:
            raise ConfigError(f"temperature must be above 0, got {temperature}")
        self.method = METHODS[method]
        self.cluster = cluster
        self.k = k
        self.weights: Weights = weights
        self.temperature = temperature
        user = load_spec(spec) if spec is not None else None
        if self.method.needs == "steps" and score_key is None and component is None:
            score_key = STEP_SCORES
        if self.method.needs == "scores" and score_key is None and component is None and not user:
            raise ConfigError(
                f"{method} needs scores: --score-key metadata.KEY, --component NAME or a --spec"
            )
        if component is not None and (user is None or component not in user.rewards):
            allowed = ", ".join(user.rewards) if user is not None else "none (no --spec)"
            raise ConfigError(f"--component {component!r} is not in the spec. Allowed: {allowed}")
        try:
            self._score_path = metadata_path(score_key) if score_key is not None else None
            self._correct_path = metadata_path(correct_key) if correct_key is not None else None
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        self._component = component
        self._user = user
        self._judge = load_spec(DEFAULT_JUDGE) if user is None else user
        if ANSWER_COMPONENT in self._judge.rewards:
            raise ConfigError(f"the spec may not name a component {ANSWER_COMPONENT!r}")
        reader = load_spec(
            {
                "rewards": {
                    ANSWER_COMPONENT: {
                        "type": "majority_vote",
                        "cluster": cluster,
                        "answer_key": answer_key,
                        "ties": "first",
                    }
                }
            }
        )
        engine_spec = RewardSpec.model_validate(
            {
                "rewards": {**self._judge.rewards, **reader.rewards},
                "timeout_s": self._judge.timeout_s,
            }
        )
        self._engine = Engine(engine_spec, workers=workers)

    # -- per candidate ---------------------------------------------------------------------

    def _candidate(self, sample: Sample, result: Result) -> Candidate:
        reading = result.components[ANSWER_COMPONENT]
        answer = reading.detail.get("answer")
        cluster = reading.detail.get("cluster")
        score, steps, failed_by = self._score(sample, result)
        return Candidate(
            id=sample.id,
            answer=answer if isinstance(answer, str) else None,
            cluster=cluster if isinstance(cluster, int) and isinstance(answer, str) else None,
            score=score,
            steps=steps,
            correct=self._correct(sample, result),
            failed_by=failed_by,
        )

    def _score(
        self, sample: Sample, result: Result
    ) -> tuple[float | None, tuple[float, ...] | None, Cause | None]:
        """The score, the step scores, and who made them fail when the scoring failed."""
        if self._score_path is not None:
            value = metadata_value(sample, self._score_path)
            return _number(value), _steps(value), None
        if self._component is not None:
            own: Score = result.components[self._component]
            if own.status != "ok":
                return None, None, own.cause
            return own.score, _steps(own.detail.get("steps")), None
        if self._user is not None:
            scores = {name: result.components[name] for name in self._user.rewards}
            combined = combine_scores(self._user, scores)
            if combined.status == "ok":
                return combined.reward, None, None
            total = Result(
                id=sample.id, reward=None, status=combined.status, components=combined.components
            )
            return None, None, total.cause
        return None, None, None

    def _correct(self, sample: Sample, result: Result) -> bool | None:
        """The verdict; a judge that failed on what the completion wrote (cause `completion`)
        is wrong, as a failed score is: else a model could leave `accuracy` by making its
        judge crash. A judge failing for another reason gives no verdict."""
        if self._correct_path is not None:
            return _verdict(metadata_value(sample, self._correct_path))
        judge = result.components[next(iter(self._judge.rewards))]
        if judge.status == "ok":
            return judge.passed
        return False if judge.cause == "completion" else None

    # -- per group -------------------------------------------------------------------------

    def _choose(
        self, group: str | None, candidates: list[Candidate]
    ) -> tuple[Choice, GroupOutcome]:
        pick = self.method.choose(candidates, self.weights, self.temperature)
        majority = METHODS["majority"].choose(candidates, self.weights, self.temperature)
        sizes: dict[int, int] = {}
        answers: dict[int, str] = {}
        for candidate in candidates:
            if candidate.cluster is not None and candidate.answer is not None:
                sizes[candidate.cluster] = sizes.get(candidate.cluster, 0) + 1
                answers.setdefault(candidate.cluster, candidate.answer)
        clusters = sorted(sizes, key=lambda c: (-sizes[c], c))
        chosen = candidates[pick.index] if pick.index is not None else None
        choice = Choice(
            group=group,
            method=self.method.name,
            id=chosen.id if chosen else None,
            answer=chosen.answer if chosen else None,
            score=pick.score,
            correct=chosen.correct if chosen else (False if pick.wrong else None),
            reason=pick.reason,
            candidates=len(candidates),
            clusters=[(answers[c], sizes[c]) for c in clusters],
            no_answer=sum(c.cluster is None for c in candidates),
        )
        return choice, GroupOutcome(candidates, pick, majority)

    # -- the run ---------------------------------------------------------------------------

    def iter_select(
        self, samples: Iterable[SampleLike], skipped: Callable[[str], None] | None = None
    ) -> Iterator[tuple[Choice, GroupOutcome]]:
        """Each group's choice (and what the summary needs), in input order, as groups
        complete. Inputs that are not valid samples are passed to `skipped` and left out."""
        fed: deque[tuple[object, Sample]] = deque()

        def feed() -> Iterator[Sample]:
            """The samples the engine scores: each group's first k, and a sample whose group
            reappears after another, whatever its count, so that the engine stops the run
            there (dropped past k, it would hide the unsorted input)."""
            counts: dict[object, int] = {}
            order = GroupOrder()
            for position, item in enumerate(samples, start=1):
                sample = _as_sample(item, position, skipped)
                if sample is None:
                    continue
                key = _group_key(sample, position)
                counts[key] = counts.get(key, 0) + 1
                reappears = order.check(sample) is not None
                if self.k is not None and counts[key] > self.k and not reappears:
                    continue
                fed.append((key, sample))
                yield sample

        current: object = None
        members: list[Candidate] = []
        group: str | None = None
        try:
            for result in self._engine.iter_score(feed()):
                key, sample = fed.popleft()
                if members and key != current:
                    yield self._choose(group, members)
                    members = []
                current, group = key, sample.group
                members.append(self._candidate(sample, result))
        except InputError:  # a group reappears: the groups before it are complete
            if members:
                yield self._choose(group, members)
            raise
        if members:
            yield self._choose(group, members)

    def select(self, samples: Iterable[SampleLike]) -> Selection:
        """Every group's choice, in input order, and the summary."""
        skipped: list[str] = []
        choices, outcomes = [], []
        for choice, outcome in self.iter_select(samples, skipped.append):
            choices.append(choice)
            outcomes.append(outcome)
        return Selection(choices, self.summary(outcomes), skipped)

    def summary(self, outcomes: list[GroupOutcome]) -> dict[str, Any] | None:
        """Accuracy metrics of a run (None when no candidate's correctness is known)."""
        return summarize(outcomes, method=self.method.name, cluster=self.cluster, k=self.k)

    def close(self) -> None:
        """Stop the workers."""
        self._engine.close()

    def __enter__(self) -> Selector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _group_key(sample: Sample, position: int) -> object:
    """Samples without a group are groups of their own, keyed by input position as the
    engine keys them (ids need not be unique: two such samples must not merge)."""
    return sample.group if sample.group is not None else ("no group", position)


def _as_sample(
    item: SampleLike, position: int, skipped: Callable[[str], None] | None
) -> Sample | None:
    if isinstance(item, Sample):
        return item
    if isinstance(item, InputError):
        if skipped is not None:
            skipped(str(item))
        return None
    try:
        if not isinstance(item, dict):
            raise TypeError(f"not a JSON object: {item!r:.80}")
        return Sample.model_validate(item if "id" in item else {**item, "id": str(position)})
    except (ValidationError, TypeError) as exc:
        if skipped is not None:  # a line of a file by its number there, as `score` names it
            where = f"line {item.line}" if isinstance(item, Record) else f"input {position}"
            skipped(f"{where}: {str(exc).splitlines()[0]}")
        return None


def select(samples: Iterable[SampleLike], method: str = "majority", **options: Any) -> Selection:
    """Select one candidate per group in one call (starts and stops a worker pool).

    `options` are those of `Selector` (`spec`, `score_key`, `component`, `cluster`, `k`...).

    >>> chosen = select(samples, "best_of_n", score_key="metadata.rm")  # doctest: +SKIP
    >>> chosen.summary["accuracy"]                                      # doctest: +SKIP
    """
    with Selector(method, **options) as selector:
        return selector.select(samples)
