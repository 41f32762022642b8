"""Runs Qwen2.5-Math's own `extract_answer` and `group_pred` in a process of their own.

    python benchmarks/_qwen_group_pred.py DIR

`selection_bench.py --qwen-eval DIR` starts this and kills it when a group takes too long.
DIR holds Qwen2.5-Math's `evaluation/rm_maj_eval.py`, `grader.py` and `parser.py`, fetched
by the user (they are not in this repository), and `DIR/site`, their pinned dependencies
(`pip install --target DIR/site ...`, see the benchmark's docstring), which come first on the
path here so that Qwen's sympy and antlr never meet ours. Their `utils.py` is only needed by
their file loaders (and needs their `examples.py`): without it an empty `utils` module stands in.

Protocol: one JSON line in per group, `{"completions": [...]}`; one JSON line out,
`{"preds", "groups", "majority", "extract_s", "group_s", "comparisons", "alarms"}`; a first
line `{"ready": seconds to import}`. Qwen's code prints; its prints are read, not passed on.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
import types
from pathlib import Path


def load(directory: Path) -> tuple[types.ModuleType, types.ModuleType, dict[str, int]]:
    """Qwen's `rm_maj_eval` and `parser`, and a counter of the comparisons group_pred makes."""
    sys.path[:0] = [str(directory / "site"), str(directory)]
    if not (directory / "utils.py").exists():
        stand_in = types.ModuleType("utils")
        stand_in.load_jsonl = None  # type: ignore[attr-defined]
        sys.modules["utils"] = stand_in
    # Qwen's parser.py and rm_maj_eval.py, found through DIR
    import parser as qwen_parser
    import rm_maj_eval

    counted = {"comparisons": 0}
    math_equal = rm_maj_eval.math_equal

    def counting(prediction: str, reference: str) -> bool:
        counted["comparisons"] += 1
        return math_equal(prediction, reference)

    rm_maj_eval.math_equal = counting  # what its `math_equal_timeout` calls
    return rm_maj_eval, qwen_parser, counted


def main() -> int:
    start = time.perf_counter()
    rm_maj_eval, qwen_parser, counted = load(Path(sys.argv[1]))
    out = sys.stdout
    out.write(json.dumps({"ready": time.perf_counter() - start}) + "\n")
    out.flush()
    for line in sys.stdin:
        completions = json.loads(line)["completions"]
        printed = io.StringIO()
        counted["comparisons"] = 0
        with contextlib.redirect_stdout(printed):
            start = time.perf_counter()
            preds = [qwen_parser.extract_answer(c, "math") for c in completions]
            extracted = time.perf_counter()
            groups, majority = rm_maj_eval.group_pred(preds, use_symbol=True)
            grouped = time.perf_counter()
        chosen = next(ids[0] for ids in groups.values() if preds[ids[0]] == majority)
        reply = {
            "preds": preds,
            "groups": [list(ids) for ids in groups.values()],
            "majority": chosen,
            "extract_s": extracted - start,
            "group_s": grouped - extracted,
            "comparisons": counted["comparisons"],
            "alarms": printed.getvalue().count("Timeout error:"),
        }
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
