"""Reward types for `test_redteam_hosted2.py` (imported by the reward workers)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from rewardsmith import RewardFn, Sample, Score, reward
from tests.engine.rewards_for_tests import scripted


@reward("tests.redteam2.rigged")
def rigged(*, folder: str) -> RewardFn:
    """`tests.engine.scripted`, whose build a test steers through files in `folder`:

    - `die-*`: a worker that takes one (removes it: only one worker can) dies while it
      builds, so one token kills exactly one worker (a model load OOM-killed once);
    - `build_s`: a worker sleeps that many seconds before it is ready (a model loading);
    - `late-*`: as `die-*`, after that sleep (a start that fails only after a while);
    - `exit_s`: a worker takes that many seconds to exit once its pipe closes (a library's
      exit handler).
    """
    where = Path(folder)
    _die_on_a_token(where, "die")
    build = where / "build_s"
    if build.exists():
        time.sleep(float(build.read_text() or 0))
    leave = where / "exit_s"
    if leave.exists():  # run as the worker process ends (multiprocessing's exit finalizers)
        from multiprocessing import util

        util.Finalize(None, time.sleep, args=(float(leave.read_text() or 0),), exitpriority=10)
    _die_on_a_token(where, "late")
    score = scripted()

    def run(sample: Sample) -> Score:
        return score(sample)

    return run


def _die_on_a_token(where: Path, kind: str) -> None:
    """Take one `kind-*` file, if another worker has not, and die (exit code 7)."""
    for token in sorted(where.glob(f"{kind}-*")):
        try:
            token.unlink()
        except FileNotFoundError:
            continue
        os._exit(7)
