"""The `math` verifiable reward: final-answer extraction and exact answer equivalence.

Importing this package does not import sympy; the symbolic comparison loads it on first use.
"""

from __future__ import annotations

from ._config import MathConfig
from ._equivalence import Verdict, compare, is_equivalent
from ._extract import Extraction, extract_answer
from ._reward import math

__all__ = [
    "Extraction",
    "MathConfig",
    "Verdict",
    "compare",
    "extract_answer",
    "is_equivalent",
    "math",
]
