"""Argument types the command-line commands share, so `score`, `serve`, `evaluate` and
`select` refuse a bad number the same way: a usage error (exit 2), never a traceback."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from .engine._capacity import WORKERS_ENV, worker_count


def checked(check: Callable[[object, str], Any]) -> Callable[[str], Any]:
    """An argparse type from a check that raises ValueError naming what it checks."""

    def parse(text: str) -> Any:
        try:
            return check(text, "value")
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc).removeprefix("value ")) from None

    return parse


positive = checked(worker_count)
"""argparse type: a whole number >= 1."""


def add_workers_option(command: argparse.ArgumentParser, what: str = "worker processes") -> None:
    """`--workers N`, defaulting as the engine does."""
    command.add_argument(
        "--workers",
        type=positive,
        default=None,
        help=f"{what} (default: ${WORKERS_ENV}, else a share of the node's cores)",
    )
