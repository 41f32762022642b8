"""Row builders shared by the red-team tables (`tests/*/test_redteam_*.py`): a row is
`(name, attack, should, today)`, where `attack()` returns (what the attack earns, what the
honest comparison earns) and `should(attack, honest)` says what must hold between them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

AT_MOST_HONEST: Callable[[float, float], bool] = lambda attack, honest: attack <= honest + 1e-9  # noqa: E731


def guard(name: str, attack: Any, should: Any, today: str) -> Any:
    """An attack that fails today."""
    return pytest.param(name, attack, should, today, id=name)
