"""Argument types and checks the command-line commands share, so `score`, `serve`,
`evaluate` and `select` refuse a bad number, or an output that is their input, the same way:
a usage error (exit 2), never a traceback or a lost file."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Callable
from typing import Any

from .engine._capacity import WORKERS_ENV, worker_count


class UsageError(Exception):
    """Options that cannot work together (exit code 2, like argparse's own errors)."""


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


def check_not_the_input(input_name: str, output_name: str) -> None:
    """Refuse an output that is the input file (the same path, a symlink or a hard link to
    it, or stdin redirected from it): opening it for writing would empty the input."""
    try:
        source = os.fstat(sys.stdin.fileno()) if input_name == "-" else os.stat(input_name)
        sink = os.fstat(sys.stdout.fileno()) if output_name == "-" else os.stat(output_name)
    except (OSError, ValueError):  # a missing input is reported when it is opened
        return
    same = (source.st_dev, source.st_ino) == (sink.st_dev, sink.st_ino)
    if same and stat.S_ISREG(source.st_mode):
        raise UsageError(
            f"--output {output_name} is the input file {input_name}: writing the results "
            "there would destroy the input. Choose another output file."
        )
