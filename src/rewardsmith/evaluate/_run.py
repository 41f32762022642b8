"""One evaluation: read the data, score it, measure, attack, compare; return the summary.

The passes, each with its own progress phase: the data's own samples (accuracy and health),
the attacks (built from the same rows), and the samples again under `--compare`'s spec.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from .._exceptions import ConfigError
from ..models import REFERENCE_ALIASES, Result
from ..spec import RewardSpec, load_spec
from ._attacks import attacks_for
from ._compare import compare as compare_rewards
from ._data import (
    BestOfNRow,
    Dataset,
    Format,
    JudgmentRow,
    LabelledRow,
    PairRow,
    Row,
    load_dataset,
)
from ._health import health
from ._metrics import (
    Measured,
    best_of_n_metrics,
    judgment_metrics,
    labelled_metrics,
    pair_metrics,
    unscored_counts,
)
from ._redteam import TOTAL, RedTeam, run_attacks
from ._scoring import EngineScorer, HttpScorer, Scorer

__all__ = ["Phases", "Summary", "evaluate"]


class Phases(Protocol):
    """Progress of the passes (the CLI draws a bar; the default does nothing)."""

    def phase(self, label: str, total: int) -> None: ...
    def advance(self, n: int) -> None: ...


class _Quiet:
    def phase(self, label: str, total: int) -> None:
        pass

    def advance(self, n: int) -> None:
        pass


@dataclass
class Summary:
    """Everything an evaluation measured; `as_json()` is the `--json` file."""

    format: Format
    n: int
    measured: Measured
    health: dict[str, Any]
    threshold: float = 0.5
    """The `--threshold` labelled metrics and `--compare` were measured at."""
    redteam: RedTeam | None = None
    compared: dict[str, Any] | None = None
    bad_lines: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    """What the data reader did that the rows do not show (a file given twice, read once)."""
    spec_name: str = ""
    data_names: list[str] = field(default_factory=list)
    reward_values: dict[str, list[float]] = field(default_factory=dict)
    """Per component (and `reward`), the scored values, for the report's distributions."""
    reward_lengths: list[tuple[float, float]] = field(default_factory=list)
    """(completion length, reward) pairs, for the report's scatter plot."""

    @property
    def attacks_succeeded(self) -> bool:
        """Whether any attack raised the total reward above its baseline."""
        return self.redteam is not None and any(
            o.successes for o in self.redteam.outcomes if o.component == TOTAL
        )

    @property
    def attacks_unmeasured(self) -> bool:
        """Whether attacks ran but measured no case (every row left out, say): no evidence."""
        return self.redteam is not None and not any(
            o.n for o in self.redteam.outcomes if o.component == TOTAL
        )

    def as_json(self) -> dict[str, Any]:
        attacks = []
        for o in self.redteam.outcomes if self.redteam else []:
            attacks.append(
                {
                    "attack": o.attack,
                    "component": o.component,
                    "n": o.n,
                    "success_rate": o.success_rate,
                    "family": o.family,
                    "successes": o.successes,
                    "examples": o.examples,
                }
            )
        return {
            "n": self.n,
            "format": self.format,
            "threshold": self.threshold,
            "metrics": self.measured.metrics,
            "subsets": self.measured.subsets,
            "attacks": attacks,
            "attack_rows": self.redteam.rows if self.redteam else 0,
            "attack_baselines": self.redteam.baselines if self.redteam else {},
            "attack_skipped_rows": self.redteam.skipped_rows if self.redteam else {},
            "health": self.health,
            "compare": self.compared,
            "tables": self.measured.tables,
            "bad_lines": self.bad_lines,
        }


def _has_reference(base: dict[str, Any]) -> bool:
    return any(base.get(k) is not None for k in REFERENCE_ALIASES)


def _pair_samples(row: PairRow, pairwise: bool) -> list[tuple[str, dict[str, Any]]]:
    """(slot, sample) of a pair row: every response on its own, or with a pairwise judge and
    k > 1 variants, each (chosen i, rejected j) cell judged in both directions."""

    def make(slot: str, completion: str, opponent: str) -> tuple[str, dict[str, Any]]:
        sample = row.sample(completion, slot, opponent=opponent)
        sample["group"] = row.id
        if not _has_reference(row.base):
            sample["reference"] = opponent
        return slot, sample

    if pairwise and len(row.chosen) > 1:
        return [
            item
            for i, chosen in enumerate(row.chosen)
            for j, rejected in enumerate(row.rejected)
            for item in (make(f"c{i}r{j}", chosen, rejected), make(f"r{j}c{i}", rejected, chosen))
        ]
    return [make(f"c{i}", c, row.rejected[i]) for i, c in enumerate(row.chosen)] + [
        make(f"r{j}", r, row.chosen[j]) for j, r in enumerate(row.rejected)
    ]


def _row_samples(row: Row, pairwise: bool) -> list[tuple[str, dict[str, Any]]]:
    if isinstance(row, LabelledRow):
        return [("", {**row.base, "id": row.id, "completion": row.completion})]
    if isinstance(row, PairRow):
        return _pair_samples(row, pairwise)
    if isinstance(row, BestOfNRow):
        items = [(f"c{i}", c) for i, c in enumerate(row.chosen)]
        items += [(f"r{j}", r) for j, r in enumerate(row.rejected)]
        return [(slot, {**row.sample(text, slot), "group": row.id}) for slot, text in items]
    return []


def _measure(
    dataset: Dataset, slots: list[tuple[int, str]], results: list[Result], threshold: float
) -> Measured:
    rows = dataset.rows
    by_row: dict[int, dict[str, Result]] = {}
    for (index, slot), result in zip(slots, results, strict=True):
        by_row.setdefault(index, {})[slot] = result
    if dataset.format == "judgments":
        return judgment_metrics([r for r in rows if isinstance(r, JudgmentRow)])
    if dataset.format == "labelled":
        pairs = [(row, by_row[i][""]) for i, row in enumerate(rows) if i in by_row]
        return labelled_metrics([p[0] for p in pairs], [p[1] for p in pairs], threshold)  # type: ignore[misc]
    if dataset.format == "pairs":
        pair_rows, cells = [], []
        for i, row in enumerate(rows):
            if not isinstance(row, PairRow) or i not in by_row:
                continue
            got = {slot: r.reward for slot, r in by_row[i].items()}
            row_cells = {}
            for a in range(len(row.chosen)):
                for b in range(len(row.rejected)):
                    mine = got.get(f"c{a}r{b}", got.get(f"c{a}"))
                    theirs = got.get(f"r{b}c{a}", got.get(f"r{b}"))
                    row_cells[(a, b)] = mine is not None and theirs is not None and mine > theirs
            pair_rows.append(row)
            cells.append(row_cells)
        return _with_unscored(pair_metrics(pair_rows, cells), results)
    if dataset.format == "best_of_n":
        bon_rows, rewards = [], []
        for i, row in enumerate(rows):
            if not isinstance(row, BestOfNRow) or i not in by_row:
                continue
            got = by_row[i]
            chosen = [got[f"c{a}"].reward for a in range(len(row.chosen))]
            rejected = [got[f"r{b}"].reward for b in range(len(row.rejected))]
            bon_rows.append(row)
            rewards.append((chosen, rejected))
        return _with_unscored(best_of_n_metrics(bon_rows, rewards), results)
    return Measured()


def _with_unscored(measured: Measured, results: list[Result]) -> Measured:
    """A failed sample counts 0 in pairs and best_of_n; the count says how many did."""
    counts = unscored_counts(results)
    measured.metrics["failed_samples"] = counts["failed"]
    measured.metrics["not_applicable"] = counts["not_applicable"]
    return measured


def evaluate(
    data: Sequence[str | Path],
    *,
    spec: RewardSpec | dict[str, Any] | str | None = None,
    url: str | None = None,
    token: str | None = None,
    format: Format | Literal["auto"] = "auto",
    attacks: str = "all",
    attack_rows: int | None = 200,
    compare: RewardSpec | dict[str, Any] | str | None = None,
    threshold: float = 0.5,
    workers: int | None = None,
    seed: int = 0,
    phases: Phases | None = None,
) -> Summary:
    """Evaluate a reward (a spec, or a server at `url`) on labelled data, and red-team it.

    Args:
        data: data files (JSON Lines or a JSON array), all in one format.
        spec: the reward spec; with `url` it only guides the attacks (types, gates, params).
        url: a running `rewardsmith serve` to score through instead of the engine.
        token: its bearer token (default: $REWARDSMITH_TOKEN).
        format: the data format, or `auto` to detect it from the columns.
        attacks: `all`, `none`, or comma-separated attack or family names.
        attack_rows: most rows the attacks are built from (a seeded random choice).
        compare: a second spec for the STARC distance on the same samples.
        threshold: a labelled sample counts as accepted when its reward is above this.
        workers: engine worker processes (default: one per core).
        seed: the seed of the attack-row choice.
        phases: progress callbacks.
    """
    phases = phases or _Quiet()
    if attack_rows is not None and attack_rows < 0:
        raise ConfigError(f"attack_rows: a number of rows (None: all), got {attack_rows}")
    reward_spec = load_spec(spec) if spec is not None else None
    dataset = load_dataset(data, format)
    scorer: Scorer
    if url is not None:
        scorer = HttpScorer(url, token=token, spec=reward_spec)
    elif reward_spec is not None:
        scorer = EngineScorer(reward_spec, workers)
    else:
        scorer = None  # type: ignore[assignment]
    types = scorer.types if scorer is not None else None
    pairwise = bool(types) and "judge_pairwise" in (types or {}).values()
    try:
        slots: list[tuple[int, str]] = []
        samples: list[dict[str, Any]] = []
        for index, row in enumerate(dataset.rows):
            for slot, sample in _row_samples(row, pairwise):
                slots.append((index, slot))
                samples.append(sample)
        if samples and scorer is None:
            raise ConfigError("evaluate: this data needs a reward: --spec or --url")
        started = time.perf_counter()
        results: list[Result] = []
        if samples:
            phases.phase("scoring", len(samples))
            results = list(scorer.score(samples, phases.advance))
        seconds = time.perf_counter() - started
        measured = _measure(dataset, slots, results, threshold)
        summary = Summary(
            dataset.format,
            len(dataset.rows),
            measured,
            health(samples, results, seconds) if results else {"samples": 0},
            threshold=threshold,
            bad_lines=[str(e) for e in dataset.bad_lines],
            notices=dataset.notices,
            data_names=[Path(p).name for p in data],
        )
        _distributions(summary, samples, results)
        chosen = attacks_for(attacks, types.values() if types else None) if scorer else []
        attackable = [r for r in dataset.rows if not isinstance(r, JudgmentRow)]
        if chosen and attackable:
            summary.redteam = run_attacks(
                attackable,
                scorer,
                reward_spec,
                chosen,
                max_rows=attack_rows,
                seed=seed,
                advance=phases.advance,
                announce=lambda total: phases.phase("attacks", total),
            )
    finally:
        if scorer is not None:
            scorer.close()
    if compare is not None and samples:
        other = EngineScorer(load_spec(compare), workers)
        try:
            phases.phase("compare", len(samples))
            second = list(other.score(samples, phases.advance))
        finally:
            other.close()
        summary.compared = compare_rewards(samples, results, second, threshold)
    return summary


def _distributions(summary: Summary, samples: list[dict[str, Any]], results: list[Result]) -> None:
    values: dict[str, list[float]] = {TOTAL: []}
    for sample, result in zip(samples, results, strict=True):
        if result.reward is not None:
            values[TOTAL].append(result.reward)
            completion = sample.get("completion")
            if isinstance(completion, str):
                summary.reward_lengths.append((float(len(completion)), result.reward))
        for name, score in result.components.items():
            if score.score is not None:
                values.setdefault(name, []).append(score.score)
    summary.reward_values = values
