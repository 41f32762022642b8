"""`rewardsmith evaluate`: measure a reward on labelled data and red-team it.

    from rewardsmith.evaluate import evaluate
    summary = evaluate(["pairs.jsonl"], spec="spec.yaml")
    summary.as_json()["metrics"]["accuracy"]

Layers: `_data` (formats, detected from columns) -> `_scoring` (the engine or a server)
-> `_metrics`, `_health`, `_redteam` (attacks, registered with `attack`), `_compare` (STARC)
-> `_report` (one self-contained HTML page).
"""

from __future__ import annotations

from ._attacks import Attack, Case, Target, attack, attacks_for, honest_wrong, registered_attacks
from ._compare import starc_distance
from ._data import Dataset, Format, detect_format, load_dataset
from ._metrics import auroc, best_of_n_score
from ._report import render_report
from ._run import Summary, evaluate

__all__ = [
    "Attack",
    "Case",
    "Dataset",
    "Format",
    "Summary",
    "Target",
    "attack",
    "attacks_for",
    "auroc",
    "best_of_n_score",
    "detect_format",
    "evaluate",
    "honest_wrong",
    "load_dataset",
    "registered_attacks",
    "render_report",
    "starc_distance",
]
