"""The `math` verifiable reward: committed-answer extraction, the finished-form rule and
exact answer equivalence.

No sympy: expressions are read by our own parser (`_latex`) and compared by value with mpmath
(`_numeric`), which is light to import.
"""

from __future__ import annotations

from ._config import MathConfig
from ._equivalence import Verdict, compare, is_equivalent
from ._extract import Extraction, extract_answer
from ._grouping import (
    answer_buckets,
    answer_key,
    committed_answer,
    no_answer_left,
    same_answer,
)
from ._numeric import time_limit
from ._reward import math

__all__ = [
    "Extraction",
    "MathConfig",
    "Verdict",
    "answer_buckets",
    "answer_key",
    "committed_answer",
    "compare",
    "extract_answer",
    "is_equivalent",
    "math",
    "no_answer_left",
    "same_answer",
    "time_limit",
]
