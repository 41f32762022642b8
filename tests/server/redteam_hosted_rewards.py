"""Reward types for `test_redteam_hosted.py` (imported by the reward workers)."""

from __future__ import annotations

import os
import time

from rewardsmith import RewardFn, Sample, Score, reward
from tests.engine.rewards_for_tests import scripted


@reward("tests.redteam.fragile")
def fragile(*, flag: str, build_s: float = 0.0) -> RewardFn:
    """`tests.engine.scripted` whose worker dies while it builds when the file `flag` exists
    (a model reward whose replacement worker is OOM-killed while it loads), and which takes
    `build_s` to build otherwise."""
    if os.path.exists(flag):
        os._exit(7)
    time.sleep(build_s)
    score = scripted()

    def run(sample: Sample) -> Score:
        return score(sample)

    return run
