"""Argument types and checks the command-line commands share, so `score`, `serve`,
`evaluate` and `select` refuse a bad number, or an output that is their input (or another
of their outputs), the same way: a usage error (exit 2), never a traceback or a lost file."""

from __future__ import annotations

import argparse
import os
import stat
from collections.abc import Callable
from typing import IO, Any, NamedTuple

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


class FileOption(NamedTuple):
    """A file named on the command line: the option, the name, the stream `-` means there
    (None: a file called `-`) and whether the command writes it (so it may not exist yet)."""

    option: str
    name: str
    stream: IO[Any] | None = None
    written: bool = False


def _identity(file: FileOption) -> os.stat_result:
    if file.name == "-" and file.stream is not None:
        return os.fstat(file.stream.fileno())
    return os.stat(file.name)


def _same_file(kept: FileOption, written: FileOption) -> bool:
    """Whether writing `written` would write `kept`: the same regular file (a path, a symlink
    or a hard link to it, a stream redirected from or to it), or, for a file the command has
    yet to make, the same path."""
    try:
        one, other = _identity(kept), _identity(written)
    except ValueError:  # a stream with no file behind it
        return False
    except OSError:  # a missing input is reported when it is opened
        by_path = kept.written and "-" not in (kept.name, written.name)
        return by_path and os.path.realpath(kept.name) == os.path.realpath(written.name)
    return (one.st_dev, one.st_ino) == (other.st_dev, other.st_ino) and stat.S_ISREG(one.st_mode)


def check_not_overwritten(kept: FileOption, written: FileOption) -> None:
    """Refuse to write `written` where `kept` is (the input, or another output of the run):
    opening it for writing would empty it."""
    if _same_file(kept, written):
        what = kept.option.removeprefix("--")
        raise UsageError(
            f"{written.option} {written.name} is the {what} file {kept.name}: writing there "
            f"would destroy the {what}. Choose another {written.option} file."
        )
