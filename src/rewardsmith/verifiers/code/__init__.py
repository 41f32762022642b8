"""The `code` reward: unit tests for Python programs, run in a bubblewrap sandbox.

Importing this package starts nothing; the sandbox is planned on the first scored sample.
"""

from __future__ import annotations

from ._extract import extract_code
from ._harness import Suite, outputs_match, parse_reference
from ._reward import CodeConfig, code
from ._sandbox import BWRAP_MISSING, Limits, SandboxUnavailable

__all__ = [
    "BWRAP_MISSING",
    "CodeConfig",
    "Limits",
    "SandboxUnavailable",
    "Suite",
    "code",
    "extract_code",
    "outputs_match",
    "parse_reference",
]
