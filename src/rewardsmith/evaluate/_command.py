"""The `rewardsmith evaluate` subcommand: arguments, progress bars, outputs, exit code."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from .._arguments import add_workers_option
from .._exceptions import InputError
from .._progress import progress_bar
from ._data import Format
from ._redteam import TOTAL
from ._report import render_report
from ._run import Summary, evaluate

__all__ = ["add_evaluate_command"]

EXIT_OK, EXIT_ATTACKED, EXIT_INPUT = 0, 1, 2
"""Data that cannot be evaluated exits 2, like a spec error, so a CI gate can tell it from
attacks that succeeded (1)."""


def add_evaluate_command(commands: Any) -> None:
    """Register `evaluate` on the CLI's subcommands."""
    cmd = commands.add_parser(
        "evaluate", help="measure a reward on labelled data and red-team it (HTML report)"
    )
    cmd.add_argument("--spec", help="reward spec (YAML); with --url, it only guides the attacks")
    cmd.add_argument("--data", action="append", required=True, help="data file (repeatable)")
    cmd.add_argument(
        "--format",
        default="auto",
        choices=("auto", "labelled", "pairs", "best_of_n", "judgments", "prompts"),
        help="data format (default: detected from the columns)",
    )
    cmd.add_argument("--url", help="score through a running `rewardsmith serve` at this URL")
    cmd.add_argument("--token", help="bearer token for --url (default: $REWARDSMITH_TOKEN)")
    cmd.add_argument(
        "--attacks",
        default="all",
        help="all (those aimed at the spec's reward types), none, or comma-separated attack "
        "or class names",
    )
    cmd.add_argument(
        "--attack-rows",
        type=_rows,
        default=200,
        help="most rows attacks are built from, a seeded random choice (default 200; 0: all)",
    )
    cmd.add_argument(
        "--compare", metavar="SPEC2", help="second spec: STARC distance, rank correlation"
    )
    cmd.add_argument("--report", help="write the HTML report here")
    cmd.add_argument("--json", dest="json_path", help="write the JSON summary here")
    cmd.add_argument(
        "--fail-on-attack",
        action="store_true",
        help="exit 1 when any attack raises the total reward above its baseline",
    )
    cmd.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="labelled data: a reward above this accepts the sample (default 0.5)",
    )
    add_workers_option(cmd)
    cmd.add_argument("--seed", type=int, default=0, help="seed of the attack-row choice")
    cmd.add_argument("--quiet", action="store_true", help="no progress bar or summary table")
    cmd.set_defaults(run=_evaluate)


def _rows(text: str) -> int:
    """`--attack-rows`: a whole number of rows, 0 or more (a usage error otherwise)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"a number of rows, 0 (all) or more, got {text!r}")
    return value


class _Bars:
    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.task: Any = None

    def phase(self, label: str, total: int) -> None:
        if self.task is not None:
            self.progress.update(self.task, visible=False)
        self.task = self.progress.add_task(label, total=total)

    def advance(self, n: int) -> None:
        if self.task is not None:
            self.progress.advance(self.task, n)


def _evaluate(args: argparse.Namespace) -> int:
    console = Console(stderr=True, highlight=False)
    format: Format | str = args.format
    progress = progress_bar(console, disable=args.quiet)
    with progress:
        try:
            summary = evaluate(
                args.data,
                spec=args.spec,
                url=args.url,
                token=args.token,
                format=format,  # type: ignore[arg-type]
                attacks=args.attacks,
                attack_rows=args.attack_rows or None,
                compare=args.compare,
                threshold=args.threshold,
                workers=args.workers,
                seed=args.seed,
                phases=_Bars(progress),
            )
        except (InputError, OSError) as exc:  # no readable row, a group that reappears...
            console.print(f"[red]stopped:[/] {exc}")
            return EXIT_INPUT
    for notice in summary.notices:
        console.print(f"[yellow]note:[/] {notice}")
    for line in summary.bad_lines:
        console.print(f"[yellow]skipped unreadable row[/] {line}")
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(summary.as_json(), indent=1, default=str))
    if args.report:
        Path(args.report).write_text(render_report(summary), encoding="utf-8")
    if not args.quiet:
        console.print(_table(summary))
    if summary.attacks_unmeasured:
        console.print(f"[yellow]no attack was measured:[/] {_left_out(summary)}")
        if args.fail_on_attack:
            console.print("[red]nothing was measured[/] (--fail-on-attack)")
            return EXIT_INPUT
    if args.fail_on_attack and summary.attacks_succeeded:
        console.print("[red]attacks succeeded[/] (--fail-on-attack)")
        return EXIT_ATTACKED
    return EXIT_OK


def _table(summary: Summary) -> Table:
    data = summary.as_json()
    table = Table(title=f"{summary.n} rows ({summary.format})")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for name, value in data["metrics"].items():
        table.add_row(name, f"{value:.4f}" if isinstance(value, float) else str(value))
    for outcome in summary.redteam.outcomes if summary.redteam else []:
        if outcome.component == TOTAL:
            style = "red" if outcome.successes else "green"
            table.add_row(
                f"attack {outcome.family}/{outcome.attack}",
                f"[{style}]{outcome.success_rate:.3f}[/] of {outcome.n}",
            )
    if data["attack_skipped_rows"]:
        table.add_row(
            f"rows left out of attacks ({_kinds(summary)})", str(len(data["attack_skipped_rows"]))
        )
    return table


def _kinds(summary: Summary) -> str:
    """What made the left-out rows null, counted: `2 not_applicable, 1 error caused by ...`."""
    kinds = summary.redteam.skipped_kinds if summary.redteam else {}
    return ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))


def _left_out(summary: Summary) -> str:
    """Why a run that attacked measured nothing."""
    redteam = summary.redteam
    skipped = len(redteam.skipped_rows) if redteam else 0
    if redteam is None or not redteam.rows:
        return "no attack could be built from the rows"
    if not skipped:
        return "no attack case had a baseline to compare with (an honest right answer)"
    return (
        f"{skipped} rows left out of the attacks, no completion on them scored ({_kinds(summary)})"
    )
