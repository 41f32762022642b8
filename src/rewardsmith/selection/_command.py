"""The `rewardsmith select` subcommand: arguments, progress, output lines, summary."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.table import Table

from .._arguments import FileOption, add_workers_option, check_not_overwritten, positive
from .._exceptions import InputError
from .._progress import progress_bar
from ..io import read_samples
from ._methods import DEFAULT_WEIGHTS, METHODS
from ._select import Selector

__all__ = ["add_select_command"]

EXIT_OK, EXIT_INPUT = 0, 1


def add_select_command(commands: Any) -> None:
    """Register `select` on the CLI's subcommands."""
    cmd = commands.add_parser(
        "select", help="choose one candidate per group: majority, best-of-N, PRM, oracle"
    )
    cmd.add_argument("--input", required=True, help="candidates, JSON Lines ('-' for stdin)")
    cmd.add_argument("--output", required=True, help="one line per group ('-' for stdout)")
    cmd.add_argument(
        "--method",
        default="majority",
        choices=list(METHODS),
        metavar="METHOD",
        help=f"one of: {', '.join(METHODS)} (default: majority)",
    )
    cmd.add_argument("--spec", help="reward spec: its components score and judge the candidates")
    source = cmd.add_mutually_exclusive_group()
    source.add_argument("--score-key", help="metadata.KEY holding each candidate's score")
    source.add_argument("--component", help="the spec component whose score is the score")
    cmd.add_argument(
        "--cluster",
        default="math",
        choices=("math", "exact", "normalized"),
        help="how answers are told apart (default: math)",
    )
    cmd.add_argument("--answer-key", help="metadata.KEY holding each answer (else read)")
    cmd.add_argument("--correct-key", help="metadata.KEY holding each verdict (else judged)")
    cmd.add_argument(
        "--weights",
        default=DEFAULT_WEIGHTS,
        choices=("sigmoid", "softmax", "raw"),
        help=f"weighted_majority's weights (default: {DEFAULT_WEIGHTS}; raw needs scores >= 0)",
    )
    cmd.add_argument("--temperature", type=float, default=1.0, help="softmax temperature")
    cmd.add_argument(
        "--k", type=positive, default=None, help="use the first K candidates per group"
    )
    cmd.add_argument("--json", dest="json_path", help="write the accuracy summary here")
    add_workers_option(cmd)
    cmd.add_argument("--quiet", action="store_true", help="no progress bar or summary table")
    cmd.set_defaults(run=_select)


def _select(args: argparse.Namespace) -> int:
    _check_files(args)
    console = Console(stderr=True, highlight=False)
    selector = Selector(
        args.method,
        spec=args.spec,
        score_key=args.score_key,
        component=args.component,
        cluster=args.cluster,
        answer_key=args.answer_key,
        correct_key=args.correct_key,
        weights=args.weights,
        temperature=args.temperature,
        k=args.k,
        workers=args.workers,
    )
    outcomes = []
    with ExitStack() as stack:
        stack.enter_context(selector)
        source: IO[bytes] = (
            sys.stdin.buffer if args.input == "-" else stack.enter_context(open(args.input, "rb"))
        )
        sink: IO[str] = (
            sys.stdout
            if args.output == "-"
            else stack.enter_context(open(args.output, "w", encoding="utf-8"))
        )
        progress = stack.enter_context(progress_bar(console, disable=args.quiet))
        bar = progress.add_task("selecting (groups)", total=None)

        def skipped(reason: str) -> None:
            console.print(f"[yellow]skipped malformed input[/] {reason}")

        try:
            for choice, outcome in selector.iter_select(read_samples(source), skipped):
                line = json.dumps(choice.as_json(), ensure_ascii=False, allow_nan=False)
                sink.write(line + "\n")  # strict JSON: the methods never score inf or NaN
                outcomes.append(outcome)
                progress.advance(bar)
        except InputError as exc:  # a group that reappears after other groups
            console.print(f"[red]stopped:[/] {exc}")
            return EXIT_INPUT
    summary = selector.summary(outcomes)
    if args.json_path:
        body = summary if summary is not None else {"groups": len(outcomes), "accuracy": None}
        text = json.dumps(body, indent=1, allow_nan=False)
        Path(args.json_path).write_text(text + "\n", encoding="utf-8")
    if not args.quiet:
        console.print(_table(summary, len(outcomes)))
    return EXIT_OK


def _check_files(args: argparse.Namespace) -> None:
    """Before anything is written: no output (`--output`, `--json`) may be the input or the
    other output, where opening it would empty it."""
    source = FileOption("--input", args.input, sys.stdin)
    output = FileOption("--output", args.output, sys.stdout, written=True)
    check_not_overwritten(source, output)
    if args.json_path:
        summary = FileOption("--json", args.json_path, written=True)
        check_not_overwritten(source, summary)
        check_not_overwritten(output, summary)


def _table(summary: dict[str, Any] | None, groups: int) -> Table | str:
    if summary is None:
        return f"{groups} groups selected (no references or verdicts: accuracy not measured)"
    table = Table(title=f"{summary['method']} over {groups} groups (cluster: {summary['cluster']})")
    table.add_column("metric")
    table.add_column("%", justify="right")
    table.add_column("graded groups", justify="right")
    for name, graded in summary["graded"].items():
        value = summary[name]
        table.add_row(name, "-" if value is None else f"{value:.1f}", str(graded))
    return table
