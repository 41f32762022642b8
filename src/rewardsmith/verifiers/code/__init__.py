"""The `code` reward: unit tests for Python programs, run in a bubblewrap sandbox.

The layout follows the trust boundary: `_reward` (the reward function) and `_harness` (test
styles, configurations, the verdict pipe) run on the host; `_sandbox` (bwrap's command line,
limits, the memory rule), `_seccomp` (the filter) and `_zygote` (sandboxes seen from the
host) prepare and drive the sandbox; `_runtime` (the process tree of a run), `_referee` (the
dataset's tests, trusted), `_candidate` (the completion, untrusted) and `_codec` (the plain
data between them) are shipped into it as source. `_remote` runs the same processes on a
SandboxFusion server. Importing this package starts nothing; the sandbox is planned on the
first scored sample.
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
