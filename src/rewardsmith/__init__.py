"""rewardsmith: a reward engine for RL post-training and test-time selection of LLMs.

import rewardsmith
results = rewardsmith.score(samples, "spec.yaml")   # list[Result], input order
selection = rewardsmith.select(samples, "majority")  # one choice per group
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._exceptions import ConfigError, InputError, RewardsmithError, UnknownRewardError
from .engine import Engine, ascore, score
from .models import Message, Result, Sample, Score, Status
from .registry import Registry, RewardFn, RewardInfo, registry, reward
from .spec import ComponentSpec, RewardSpec, load_spec

if TYPE_CHECKING:
    from .selection import Selection

__all__ = [
    "ComponentSpec",
    "ConfigError",
    "Engine",
    "InputError",
    "Message",
    "Registry",
    "Result",
    "RewardFn",
    "RewardInfo",
    "RewardSpec",
    "RewardsmithError",
    "Sample",
    "Score",
    "Status",
    "UnknownRewardError",
    "ascore",
    "load_spec",
    "registry",
    "reward",
    "score",
    "select",
]
__version__ = "0.1.0"


def select(samples: Iterable[Any], method: str = "majority", **options: Any) -> Selection:
    """Choose one candidate per group (`rewardsmith.selection.select`; imported on first use,
    so `import rewardsmith` stays light)."""
    from .selection import select as run

    return run(samples, method, **options)
