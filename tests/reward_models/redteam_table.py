"""What the later reward-model red-team tables (`test_redteam_models2.py` onward) share: the
row type of their `CASES` and the warnings their tiny models raise, filtered."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

QUIET_TINY_MODELS = [
    pytest.mark.filterwarnings("ignore:.*BOS token:UserWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]
"""A table's `pytestmark`: the warnings running the tiny models raises (a BOS token, an
unraisable exception), filtered as the first table filters them."""


@dataclass(frozen=True)
class Attack:
    attack: str
    """The input."""
    today: str
    """What it earns today."""
    should: str
    """What it should earn."""
    check: Callable[..., None]
    """Asserts the "should" (a hole's check fails today)."""
