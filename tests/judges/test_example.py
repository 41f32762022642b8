"""The README's main job: the hybrid example spec (math + rubric + format) on the embedded
model, no server, two workers sharing a cold judge cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from .conftest import SLOW_S

ROOT = Path(__file__).resolve().parents[2]


def test_hybrid_example_spec_on_a_cold_cache(model_path, tmp_path) -> None:
    """Through the CLI, two worker processes, a new cache folder: every judged sample is
    `ok` or an unparseable reply charged to the completion, never another `error` (two
    workers creating the SQLite cache at once used to fail one sample with `database is
    locked`)."""
    spec = yaml.safe_load((ROOT / "examples" / "hybrid_spec.yaml").read_text())
    spec["rewards"]["quality"]["deadline_s"] = SLOW_S  # what it answers, not how fast
    spec["timeout_s"] = SLOW_S + 60
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    lines = (ROOT / "examples" / "samples.jsonl").read_text().splitlines()
    inputs = tmp_path / "in.jsonl"
    inputs.write_text("\n".join(lines[:4]) + "\n")
    out = tmp_path / "results.jsonl"
    env = {**os.environ, "REWARDSMITH_CACHE_DIR": str(tmp_path / "cache")}
    subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli", "score", "--spec", str(spec_file), "--input",
         str(inputs), "--output", str(out), "--workers", "2", "--quiet"],
        check=True, env=env, cwd=ROOT, timeout=3 * SLOW_S,
    )  # fmt: skip
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in results] == ["q1-0", "q1-1", "q1-2", "q1-3"]
    for result in results:
        judged = result["components"]["quality"]
        charged = judged["detail"].get("cause") == "completion" and "replies" in judged["detail"]
        assert judged["status"] == "ok" or charged, judged["detail"]
        if judged["status"] == "ok" and "guard" not in judged["detail"]:
            assert len(judged["detail"]["criteria"]) == 3
            assert judged["detail"]["usage"]["cache_errors"] == 0
    assert results[0]["components"]["correct"]["score"] == 1.0
    assert results[2]["components"]["correct"]["score"] == 0.0
