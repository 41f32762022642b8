"""Our exception hierarchy.

* RewardsmithError
  x ConfigError          -- a reward spec that cannot be used (unknown type, key, value)
    + UnknownRewardError -- a reward type nobody registered
  x InputError           -- an input line that is not a valid sample

Failures *inside* a reward on one sample are not exceptions for the caller: they become a
`Score` with status `timeout`, `error` or `invalid`, so one bad sample never stops a batch.
"""

from __future__ import annotations

__all__ = ["ConfigError", "InputError", "RewardsmithError", "UnknownRewardError"]


class RewardsmithError(Exception):
    """Base class of every error rewardsmith raises on purpose."""


class ConfigError(RewardsmithError, ValueError):
    """A reward spec that cannot be used; the message names the offending key."""


class UnknownRewardError(ConfigError):
    """A reward type that is not registered."""


class InputError(RewardsmithError, ValueError):
    """An input record that is not a valid sample; carries the 1-based line number, and the
    record's own id when it could be read (its result keeps it)."""

    def __init__(self, message: str, line: int | None = None, sample_id: str | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.line = line
        self.sample_id = sample_id
