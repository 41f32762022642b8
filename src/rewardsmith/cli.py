"""The `rewardsmith` command line.

rewardsmith score --spec SPEC --input IN.jsonl --output OUT.jsonl [--workers N] [--resume]
rewardsmith serve --spec SPEC [--host 127.0.0.1] [--port 8000] [--token T] [--backend ray]
rewardsmith evaluate --spec SPEC --data DATA.jsonl [--attacks all] [--report R.html] [--json S.json]
rewardsmith select --input CANDS.jsonl --output SELECTED.jsonl --method majority [--cluster math]
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import __version__
from ._arguments import (
    FileOption,
    UsageError,
    add_workers_option,
    check_not_overwritten,
    checked,
    positive,
)
from ._exceptions import ConfigError, InputError
from ._progress import progress_bar
from .engine import Engine
from .evaluate._command import add_evaluate_command
from .io import count_lines, read_samples, resume_point, write_result
from .models import Result
from .selection._command import add_select_command
from .spec import RewardSpec, load_spec

__all__ = ["main"]

EXIT_OK, EXIT_INPUT, EXIT_CONFIG = 0, 1, 2


def _stderr() -> Console:
    """Messages on stderr, never hard-wrapped (paths and ids stay whole for copy and grep)."""
    return Console(stderr=True, highlight=False, soft_wrap=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except ConfigError as exc:
        _stderr().print(f"[red]spec error:[/] {escape(str(exc))}")
        return EXIT_CONFIG
    except UsageError as exc:
        _stderr().print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_CONFIG
    except OSError as exc:  # a missing or unreadable input or output file
        _stderr().print(f"[red]error:[/] {escape(str(exc))}")
        return EXIT_INPUT


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rewardsmith", description=__doc__.split("\n")[1])
    parser.add_argument("--version", action="version", version=f"rewardsmith {__version__}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")
    score = commands.add_parser("score", help="score a JSONL file of samples against a spec")
    score.add_argument("--spec", required=True, help="reward spec (YAML)")
    score.add_argument("--input", required=True, help="samples, JSON Lines ('-' for stdin)")
    score.add_argument("--output", required=True, help="results, JSON Lines ('-' for stdout)")
    add_workers_option(score)
    score.add_argument("--resume", action="store_true", help="continue an interrupted run")
    score.add_argument("--strict", action="store_true", help="stop at the first malformed line")
    score.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    _add_backend_options(score)
    score.add_argument(
        "--group-transform",
        metavar="NAME",
        default=None,
        help="add an `advantage` to each result: grpo, dr_grpo, rloo, whiten, rank, gdpo, "
        "tournament, or YAML like '{type: grpo, std: unbiased}' (overrides the spec's)",
    )
    score.set_defaults(run=_score)
    _add_serve_command(commands)
    convert = commands.add_parser(
        "convert", help="IFEval / IFBench / Qwen2.5-Math evaluation files -> data contract JSONL"
    )
    convert.add_argument("benchmark", choices=["ifeval", "ifbench", "qwen-math"])
    convert.add_argument(
        "input", help="official prompt file (instruction_id_list, kwargs), or Qwen's output"
    )
    convert.add_argument("output", help="samples for `rewardsmith score`, JSON Lines")
    convert.add_argument("--responses", help="official response file (prompt, response)")
    convert.set_defaults(run=_convert)
    add_evaluate_command(commands)
    add_select_command(commands)
    return parser


def _convert(args: argparse.Namespace) -> int:
    from .selection._qwen import convert_qwen_math
    from .verifiers.instructions.convert import ConversionError, convert

    try:
        if args.benchmark == "qwen-math":
            written = convert_qwen_math(args.input, args.output)
        else:
            written = convert(args.benchmark, args.input, args.output, args.responses)
    except ConversionError as exc:
        _stderr().print(f"[red]convert:[/] {exc}")
        return EXIT_INPUT
    _stderr().print(f"wrote {written} samples to {args.output}")
    return EXIT_OK


def _add_backend_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--backend",
        choices=("local", "ray"),
        default="local",
        help="where rewards run: a process pool here (local) or Ray actors (ray)",
    )
    parser.add_argument(
        "--ray-address",
        default=None,
        help="Ray cluster to join (e.g. ray://head:10001 or auto); default: start a local one",
    )


def _add_serve_command(commands: Any) -> None:
    from .server._config import (
        DEFAULT_BODY_TIMEOUT_S,
        DEFAULT_HEADER_TIMEOUT_S,
        DEFAULT_MAX_BODY_BYTES,
        DEFAULT_MAX_QUEUE_SAMPLES,
        TOKEN_ENV,
        positive_seconds,
    )

    seconds = checked(positive_seconds)

    serve = commands.add_parser("serve", help="serve a spec over HTTP (and OpenRLHF's API)")
    serve.add_argument("--spec", required=True, help="reward spec (YAML)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    serve.add_argument("--port", type=int, default=8000, help="port (default: 8000)")
    serve.add_argument(
        "--token",
        default=None,
        help=f"bearer token clients must send (default: ${TOKEN_ENV}); required off loopback",
    )
    add_workers_option(serve, "worker processes or actors")
    _add_backend_options(serve)
    serve.add_argument(
        "--max-body-bytes",
        type=positive,
        default=DEFAULT_MAX_BODY_BYTES,
        help="larger request bodies get 413",
    )
    serve.add_argument(
        "--max-queue",
        type=positive,
        default=DEFAULT_MAX_QUEUE_SAMPLES,
        help="samples accepted and not yet answered; beyond it requests get 503",
    )
    serve.add_argument(
        "--graceful-timeout",
        type=seconds,
        default=60,
        help="seconds to finish in-flight requests on shutdown",
    )
    serve.add_argument(
        "--header-timeout",
        type=seconds,
        default=DEFAULT_HEADER_TIMEOUT_S,
        help="seconds a connection has to send a request's headers (then 408 and closed)",
    )
    serve.add_argument(
        "--body-timeout",
        type=seconds,
        default=DEFAULT_BODY_TIMEOUT_S,
        help="seconds a request has to send its body (then 408)",
    )
    serve.add_argument(
        "--keep-alive",
        type=seconds,
        default=5.0,
        help="seconds an idle connection stays open between requests",
    )
    serve.add_argument("--access-log", action="store_true", help="log every request")
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="the server's log level (default: info)",
    )
    serve.set_defaults(run=_serve)


def _serve(args: argparse.Namespace) -> int:
    try:
        from .server import serve
    except ImportError as exc:
        raise ConfigError(
            f"rewardsmith serve needs the server extra ({exc.name} is missing): "
            'pip install "rewardsmith[server]"'
        ) from None
    serve(
        args.spec,
        host=args.host,
        port=args.port,
        token=args.token,
        backend=args.backend,
        ray_address=args.ray_address,
        workers=args.workers,
        max_body_bytes=args.max_body_bytes,
        max_queue_samples=args.max_queue,
        graceful_timeout_s=args.graceful_timeout,
        header_timeout_s=args.header_timeout,
        body_timeout_s=args.body_timeout,
        keep_alive_s=args.keep_alive,
        log_level=args.log_level,
        access_log=args.access_log,
    )
    return EXIT_OK


def _score(args: argparse.Namespace) -> int:
    console = _stderr()
    to_stdout = args.output == "-"
    if args.resume:
        _check_resumable(args.input, args.output)
    check_not_overwritten(
        FileOption("--input", args.input, sys.stdin),
        FileOption("--output", args.output, sys.stdout, written=True),
    )
    spec = load_spec(args.spec)
    if args.group_transform is not None:
        spec = spec.with_group_transform(args.group_transform)
    _warn_whole_input(spec, console)
    engine = Engine(spec, workers=args.workers, backend=args.backend, ray_address=args.ray_address)
    done = _resume(spec, Path(args.input), Path(args.output)) if args.resume else []
    summary = _Summary(list(engine.spec.rewards))
    with ExitStack() as stack:
        stack.enter_context(engine)
        source: IO[bytes] = (
            sys.stdin.buffer if args.input == "-" else stack.enter_context(open(args.input, "rb"))
        )
        if done:
            console.print(f"resuming after {len(done)} finished samples")
        sink: IO[str] = (
            sys.stdout
            if to_stdout
            else stack.enter_context(open(args.output, "a" if done else "w", encoding="utf-8"))
        )
        records = _report_bad_lines(read_samples(source, skip=len(done)), console, args.strict)
        counted = None if args.input == "-" else count_lines(Path(args.input))  # None: a pipe
        total = None if counted is None else counted - len(done)
        progress = progress_bar(console, disable=args.quiet)
        with progress:
            bar = progress.add_task("scoring", total=total)
            try:
                for result in engine.iter_score(records):
                    write_result(sink, result)
                    summary.add(result)
                    progress.advance(bar)
            except _StrictStop as stop:
                console.print(f"[red]stopped:[/] {stop} (--strict)")
                return EXIT_INPUT
            except InputError as exc:  # e.g. a group id that reappears after other groups
                console.print(f"[red]stopped:[/] {exc}")
                return EXIT_INPUT
    if not args.quiet:
        console.print(summary.table())
    return EXIT_OK


class _StrictStop(Exception):
    pass


def _check_resumable(input_name: str, output_name: str) -> None:
    """--resume reads the input twice (to check the output belongs to it, then to score the
    rest) and the output before appending: both must be regular files, not stdin, stdout, a
    pipe or a FIFO, which can be read only once."""
    for name in (input_name, output_name):
        try:
            regular = name != "-" and stat.S_ISREG(os.stat(name).st_mode)
        except OSError:  # a missing input is reported when it is opened; a new output is fine
            regular = True
        if not regular:
            raise UsageError(
                f"--resume needs --input and --output to be regular files ({name} is not)"
            )


def _warn_whole_input(spec: RewardSpec, console: Console) -> None:
    """Batch whitening over the whole input holds every result until the input ends."""
    transform = spec.group_transform
    if transform is None or transform.batch is None or transform.batch.size is not None:
        return
    console.print(
        f"[yellow]warning:[/] group_transform {transform.type!r} normalises over the whole "
        "input: no result is written before every sample is scored, and memory grows with "
        "the input. Set its batch_size (e.g. '{type: "
        f"{transform.type}, batch_size: 4096}}') to normalise in runs of that many samples."
    )


def _report_bad_lines(
    records: Iterator[dict[str, Any] | InputError], console: Console, strict: bool
) -> Iterator[dict[str, Any] | InputError]:
    for record in records:
        if isinstance(record, InputError):
            if strict:
                raise _StrictStop(str(record))
            console.print(f"[yellow]malformed input, scored invalid:[/] {record}")
        yield record


def _resume(spec: RewardSpec, input_path: Path, output_path: Path) -> list[str]:
    """Ids of the finished samples to skip, after checking the output belongs to the input
    (every finished id is the input's id at the same position).

    With group transforms, a group cut by the interruption would be normalised on its own
    when resumed, so the output is first cut back to the end of the last complete group.
    An output that is refused is left as it was.
    """
    done = resume_point(output_path, cut=False)
    if not done:
        return resume_point(output_path)  # at most a partly written first line, cut off
    if spec.group_transform is not None and spec.group_transform.batch is not None:
        raise ConfigError(
            f"--resume: group_transform {spec.group_transform.type!r} whitens across the whole "
            "batch, so a resumed run cannot reproduce it; rerun without --resume"
        )
    groups: list[str | None] = []
    with input_path.open("rb") as handle:
        for written, record in zip(done, read_samples(handle), strict=False):
            if isinstance(record, InputError):  # written under its own id, else its line's
                found = record.sample_id or str(record.line)
            else:
                found = str(record["id"])
            group = None if isinstance(record, InputError) else record.get("group")
            groups.append(None if group is None else str(group))
            if found != written:  # every id: a reordered input would lose samples
                raise ConfigError(
                    f"--resume: output line {len(groups)} has id {written!r} but input "
                    f"sample {len(groups)} has id {found!r}; not the same input (or not "
                    "in the same order)"
                )
    if len(groups) < len(done):
        raise ConfigError(f"--resume: the output has {len(done)} results, more than the input has")
    keep = len(done)
    if spec.needs_groups and groups[-1] is not None:
        while keep > 0 and groups[keep - 1] == groups[-1]:
            keep -= 1
    return resume_point(output_path, keep_lines=keep)


class _Summary:
    """Mean per component, status counts and speed, for the end of a run."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.started = time.perf_counter()
        self.count = 0
        self.sums: Counter[str] = Counter()
        self.oks: Counter[str] = Counter()
        self.statuses: dict[str, Counter[str]] = {n: Counter() for n in ["reward", *names]}

    def add(self, result: Result) -> None:
        self.count += 1
        self.statuses["reward"][result.status] += 1
        if result.reward is not None:
            self.sums["reward"] += result.reward
            self.oks["reward"] += 1
        for name, score in result.components.items():
            self.statuses[name][score.status] += 1
            if score.score is not None:
                self.sums[name] += score.score
                self.oks[name] += 1

    def table(self) -> Table:
        elapsed = time.perf_counter() - self.started
        rate = self.count / elapsed if elapsed > 0 else 0.0
        digits = 0 if rate >= 10 else 2
        title = f"{self.count} samples in {elapsed:.1f}s ({rate:,.{digits}f} samples/s)"
        table = Table(title=title)
        table.add_column("component")
        table.add_column("mean", justify="right")
        for status in ("ok", "not_applicable", "invalid", "error", "timeout"):
            table.add_column(status, justify="right")
        for name in ["reward", *self.names]:
            mean = f"{self.sums[name] / self.oks[name]:.4f}" if self.oks[name] else "-"
            counts = self.statuses[name]
            table.add_row(
                name,
                mean,
                *(str(counts[s]) for s in ("ok", "not_applicable", "invalid", "error", "timeout")),
            )
        return table


if __name__ == "__main__":
    sys.exit(main())
