"""Execution: the engine and its hard-timeout worker pool."""

from ._engine import Engine, ascore, invalid_result, score
from ._front import EngineClosed, QueueFull
from ._pool import Task, TimeoutPool, default_workers

__all__ = [
    "Engine",
    "EngineClosed",
    "QueueFull",
    "Task",
    "TimeoutPool",
    "ascore",
    "default_workers",
    "invalid_result",
    "score",
]
