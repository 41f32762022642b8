"""Judged rewards: LLM judges and rubric rewards over an OpenAI-compatible server or an
embedded local model (SmolLM2-135M-Instruct through llama-cpp-python).

Reward types: `rubric`, `judge_pointwise`, `judge_pairwise`, `judge_group`,
`judge_reference`, `judge_principles`. Every one of them takes the same backend options
(`backend: local | openai`, `base_url`, `model`, ...; see `judge_settings`).
"""

from ._aggregate import Verdict, explicit, gate, healthbench, implicit
from ._backends import BackendConfig, BackendError, JudgeReply, JudgeRequest, make_backend
from ._cache import JudgeCache, default_cache_path
from ._guard import DEFAULT_OPENERS, Guard
from ._modes import (
    judge_group,
    judge_pairwise,
    judge_pointwise,
    judge_principles,
    judge_reference,
)
from ._rubric import Criterion, Rubric, RubricError, load_rubric
from ._rubric_reward import rubric

__all__ = [
    "DEFAULT_OPENERS",
    "BackendConfig",
    "BackendError",
    "Criterion",
    "Guard",
    "JudgeCache",
    "JudgeReply",
    "JudgeRequest",
    "Rubric",
    "RubricError",
    "Verdict",
    "default_cache_path",
    "explicit",
    "gate",
    "healthbench",
    "implicit",
    "judge_group",
    "judge_pairwise",
    "judge_pointwise",
    "judge_principles",
    "judge_reference",
    "load_rubric",
    "make_backend",
    "rubric",
]
