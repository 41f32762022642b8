"""Catastrophic-backtracking (ReDoS) scan of every regex in rewardsmith.

Collects every compiled pattern it can find -- module-level `re.Pattern`/`regex.Pattern`
objects (also inside module-level tuples, lists, dicts and classes), patterns held in the
closures of a few reward factories and the judge guard, and literal patterns passed to
`re.compile/match/search/fullmatch/sub/subn/findall/finditer/split` inside functions (found
by parsing the sources) -- and times `match`, `search` and `fullmatch` on adversarial
strings: long runs of spaces, letters, `word `, digits, mixed classes, and the pattern's own
literal fragments, and each fragment followed by a long run of spaces (`answer` then 20,000
blanks), each followed by a character that makes the match fail.

Each case runs in a worker process the parent kills past `--cap` seconds (the `re` engine
does not check for signals), so an exponential pattern costs the cap, not forever.

    python benchmarks/redos_scan.py [--cap 3] [--flag 0.1] [--only SUBSTRING] [--lengths 5000,20000]

Prints one line per flagged (pattern, op, input shape) with the worst time, then a summary.
Times depend on the machine's load; anything near the flag threshold should be rerun alone.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import json
import os
import pkgutil
import re
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

try:
    import regex as _regex_module
except ImportError:  # pragma: no cover
    _regex_module = None

ROOT = Path(__file__).resolve().parent.parent / "src"
PACKAGE = "rewardsmith"
CALLS = {"compile", "match", "search", "fullmatch", "sub", "subn", "findall", "finditer", "split"}
TAILS = ("?", "!", "\x00", "")
OPS = ("match", "search", "fullmatch")


def _is_pattern(obj: Any) -> bool:
    if isinstance(obj, re.Pattern):
        return True
    return _regex_module is not None and isinstance(obj, _regex_module.Pattern)


def _walk(obj: Any, name: str, out: dict, depth: int = 0, seen: set | None = None) -> None:
    seen = set() if seen is None else seen
    if id(obj) in seen or depth > 4:
        return
    seen.add(id(obj))
    if _is_pattern(obj):
        key = (type(obj).__module__, obj.pattern, obj.flags)
        out.setdefault(key, (name, obj))
    elif isinstance(obj, (tuple, list, frozenset, set)):
        for i, item in enumerate(obj):
            _walk(item, f"{name}[{i}]", out, depth + 1, seen)
    elif isinstance(obj, dict):
        for k, v in list(obj.items())[:200]:
            _walk(v, f"{name}[{k!r}]", out, depth + 1, seen)
    elif callable(obj) and getattr(obj, "__closure__", None):
        for var, cell in zip(obj.__code__.co_freevars, obj.__closure__, strict=True):
            with contextlib.suppress(ValueError):  # an empty cell
                _walk(cell.cell_contents, f"{name}.<{var}>", out, depth + 1, seen)


def _literal_calls(path: Path, modname: str, out: dict) -> None:
    """Literal patterns passed to re.<call>(...) anywhere in a source file."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in ("re", "regex")
            and node.func.attr in CALLS
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            continue
        flags = 0
        flag_nodes = [kw.value for kw in node.keywords if kw.arg == "flags"]
        if node.func.attr == "compile" and len(node.args) > 1:
            flag_nodes.append(node.args[1])
        for flag_node in flag_nodes:
            with contextlib.suppress(Exception):  # flags that are not `re.X | re.Y` literals
                flags |= eval(compile(ast.Expression(flag_node), "<flags>", "eval"), {"re": re})
        module = _regex_module if node.func.value.id == "regex" else re
        try:
            compiled = module.compile(node.args[0].value, flags)
        except Exception:
            continue
        key = (type(compiled).__module__, compiled.pattern, compiled.flags)
        out.setdefault(key, (f"{modname}:{node.lineno} re.{node.func.attr}", compiled))


def _extras(out: dict) -> None:
    """Patterns built at run time from configuration, with their default configuration."""
    try:
        from rewardsmith.judges._guard import Guard

        _walk(Guard()._only_openers, "rewardsmith.judges._guard.Guard()._only_openers", out)
    except Exception as exc:  # pragma: no cover
        print(f"# skipped Guard: {exc!r}", file=sys.stderr)
    try:
        from rewardsmith.verifiers.text import choice

        _walk(choice(), "rewardsmith.verifiers.text.choice()", out)
    except Exception as exc:  # pragma: no cover
        print(f"# skipped choice: {exc!r}", file=sys.stderr)


def collect() -> tuple[list[tuple[str, Any]], list[str]]:
    sys.path.insert(0, str(ROOT))
    out: dict = {}
    skipped = []
    for info in sorted(
        pkgutil.walk_packages([str(ROOT / PACKAGE)], prefix=f"{PACKAGE}."), key=lambda i: i.name
    ):
        try:
            module = importlib.import_module(info.name)
        except Exception as exc:
            skipped.append(f"{info.name}: {exc!r}"[:160])
            continue
        for attr, value in sorted(vars(module).items()):
            if isinstance(value, type) and value.__module__ == info.name:
                for cattr, cvalue in vars(value).items():
                    _walk(cvalue, f"{info.name}.{attr}.{cattr}", out)
            elif not callable(value) or _is_pattern(value):
                _walk(value, f"{info.name}.{attr}", out)
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        modname = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        _literal_calls(path, modname, out)
    _extras(out)
    return sorted(out.values(), key=lambda pair: pair[0]), skipped


def _fragments(pattern: str) -> list[str]:
    """Literal runs of the pattern (what its escapes and plain characters spell)."""
    runs = re.findall(r"(?:\\[^A-Za-z0-9]|[^\\()\[\]{}*+?|^$.])+", pattern)
    cleaned = {re.sub(r"\\(.)", r"\1", r) for r in runs}
    cleaned |= set(re.findall(r"\\([a-zA-Z]{2,})", pattern))  # latex command names
    return sorted(f for f in cleaned if f.strip() or f == " ")[:12]


def cases(pattern: str, length: int) -> list[tuple[str, str]]:
    units = {
        "spaces": " ",
        "letters": "a",
        "Letters": "A",
        "word_": "word ",
        "digits": "1",
        "a1_.": "a1 .",
        "a_": "a ",
        "1_": "1 ",
        "tabs_nl": " \t\n",
        "newlines": "\n",
        "a.": "a.",
        "1,": "1,",
        "\\a{": "\\a{",
        "{": "{",
        "(": "(",
        "<": "<",
        "$": "$",
        "*": "*",
        "-": "-",
    }
    for i, frag in enumerate(_fragments(pattern)):
        units[f"frag{i}:{frag[:20]!r}"] = frag
        units[f"frag{i}_:{frag[:20]!r}"] = frag + " "
        units[f"frag{i}a:{frag[:20]!r}"] = frag + "a"
    bodies = {
        f"{name}x{length}": (unit * (length // len(unit) + 1))[:length]
        for name, unit in units.items()
    }
    for i, frag in enumerate(_fragments(pattern)):  # a literal piece, then a long blank run
        bodies[f"frag{i}+spacesx{length}:{frag[:20]!r}"] = frag + " " * length
    return [(f"{name}+{tail!r}", body + tail) for name, body in bodies.items() for tail in TAILS]


def _worker(table: str, start_pattern: int, start_case: int, lengths: list[int]) -> None:
    rows = json.loads(Path(table).read_text())
    out = sys.stdout
    for p, (_, module, source, flags) in enumerate(rows):
        if p < start_pattern:
            continue
        compiled = (_regex_module if "regex" in module else re).compile(source, flags)
        case_list = [c for n in lengths for c in cases(source, n)]
        for c, (_, text) in enumerate(case_list):
            if p == start_pattern and c < start_case:
                continue
            for op in OPS:
                out.write(json.dumps(["B", p, c, op]) + "\n")
                out.flush()
                t0 = time.perf_counter()
                getattr(compiled, op)(text)
                out.write(json.dumps(["E", p, c, op, time.perf_counter() - t0]) + "\n")
                out.flush()
    out.write(json.dumps(["DONE"]) + "\n")
    out.flush()


def _run(table: str, n_patterns: int, args: argparse.Namespace) -> tuple[dict, int]:
    """Times every case in workers, restarting past a kill; returns {(p, op, c): seconds}."""
    flagged: dict[tuple[int, str, int], float] = {}
    per_pattern: dict[int, int] = {}
    start = (0, 0)
    n_calls = 0
    while start[0] < n_patterns:
        proc = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--worker",
                str(start[0]),
                str(start[1]),
                "--table",
                table,
                "--lengths",
                args.lengths,
            ],
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        assert proc.stdout is not None
        current, began, restart = None, time.perf_counter(), None
        while restart is None:
            ready, _, _ = select.select([proc.stdout], [], [], 0.2)
            if ready:
                line = proc.stdout.readline()
                if not line:  # the worker died: go on after the case it was on
                    restart = (current[0] + 1, 0) if current else (n_patterns, 0)
                    break
                msg = json.loads(line)
                if msg[0] == "DONE":
                    restart = (n_patterns, 0)
                elif msg[0] == "B":
                    current, began = msg[1:], time.perf_counter()
                else:
                    _, p, c, op, dt = msg
                    n_calls += 1
                    current = None
                    if dt > args.flag:
                        flagged[(p, op, c)] = dt
                        per_pattern[p] = per_pattern.get(p, 0) + 1
                        if per_pattern[p] >= args.enough:
                            restart = (p + 1, 0)  # flagged enough: next pattern
            elif current is not None and time.perf_counter() - began > args.cap:
                p, c, op = current
                flagged[(p, op, c)] = float("inf")
                restart = (p + 1, 0)  # past the cap: next pattern
        proc.kill()
        proc.wait()
        start = restart
    return flagged, n_calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cap", type=float, default=2.0, help="seconds before a case is killed")
    ap.add_argument("--flag", type=float, default=0.1, help="seconds that flag a case")
    ap.add_argument("--enough", type=int, default=3, help="flagged cases that end a pattern")
    ap.add_argument("--only", default="", help="scan patterns whose name contains this")
    ap.add_argument("--lengths", default="5000,20000")
    ap.add_argument("--list", action="store_true", help="list the patterns found and stop")
    ap.add_argument("--table")
    ap.add_argument("--worker", nargs=2, type=int)
    args = ap.parse_args()
    lengths = [int(n) for n in args.lengths.split(",")]
    if args.worker:
        _worker(args.table, *args.worker, lengths)
        return
    patterns, skipped = collect()
    patterns = [(n, c) for n, c in patterns if args.only in n]
    for s in skipped:
        print(f"# not imported: {s}")
    if args.list:
        for name, compiled in patterns:
            print(f"{name}\t{compiled.pattern!r}")
        print(f"{len(patterns)} patterns")
        return
    t_start = time.time()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        rows = [(n, type(c).__module__, c.pattern, c.flags) for n, c in patterns]
        json.dump(rows, fh)
    try:
        flagged, n_calls = _run(fh.name, len(patterns), args)
    finally:
        os.unlink(fh.name)
    worst: dict[tuple[int, str], tuple[float, str]] = {}
    for (p, op, c), dt in sorted(flagged.items()):
        shape = [cs for n in lengths for cs in cases(patterns[p][1].pattern, n)][c][0]
        if (p, op) not in worst or dt > worst[(p, op)][0]:
            worst[(p, op)] = (dt, shape)
    by_pattern: dict[int, list[str]] = {}
    for (p, op), (dt, shape) in sorted(worst.items()):
        shown = f">{args.cap:g}s (killed)" if dt == float("inf") else f"{dt:.2f}s"
        by_pattern.setdefault(p, []).append(f"{op} {shown} on {shape}")
    for p, lines in by_pattern.items():
        name, compiled = patterns[p]
        print(f"FLAG {name}  {compiled.pattern[:110]!r}")
        for line in lines:
            print(f"     {line}")
    print(
        f"{len(patterns)} patterns, {n_calls} timed calls, {len(by_pattern)} flagged "
        f"(> {args.flag:g}s), {time.time() - t_start:.0f}s"
    )


if __name__ == "__main__":
    main()
