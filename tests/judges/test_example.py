"""The hybrid example spec (math + rubric + format) on the embedded model, no server."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from rewardsmith import score

ROOT = Path(__file__).resolve().parents[2]


def test_hybrid_example_spec(model_path, tmp_path, monkeypatch) -> None:
    spec = yaml.safe_load((ROOT / "examples" / "hybrid_spec.yaml").read_text())
    quality = spec["rewards"]["quality"]
    quality["cache"] = str(tmp_path / "judge.sqlite3")
    monkeypatch.chdir(ROOT)  # the spec names its rubric file relative to the repo
    lines = (ROOT / "examples" / "samples.jsonl").read_text().splitlines()
    samples = [json.loads(line) for line in lines[:3]]
    results = score(samples, spec, workers=1)
    assert [r.id for r in results] == ["q1-0", "q1-1", "q1-2"]
    for result in results:
        judged = result.components["quality"]
        assert judged.status in ("ok", "invalid"), judged.detail
        if judged.status == "ok":
            assert len(judged.detail["criteria"]) == 3
    assert results[0].components["correct"].score == 1.0
    assert results[2].components["correct"].score == 0.0
