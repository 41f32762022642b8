"""rewardsmith: a reward engine for RL post-training and test-time selection of LLMs.

import rewardsmith
results = rewardsmith.score(samples, "spec.yaml")   # list[Result], input order
"""

from ._exceptions import ConfigError, InputError, RewardsmithError, UnknownRewardError
from .engine import Engine, ascore, score
from .models import Message, Result, Sample, Score, Status
from .registry import Registry, RewardFn, RewardInfo, registry, reward
from .spec import ComponentSpec, RewardSpec, load_spec

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
]
__version__ = "0.1.0"
