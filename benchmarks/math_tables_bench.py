"""Math reward vs math-verify on math-verify's own published test tables, in one run.

    python benchmarks/math_tables_bench.py [--write BENCHMARKS.md]

The rows (`math_verify_tables.json`: gold, prediction, expected, the options the published
test gives math-verify, and our per-row policy) are scored by both tools: math-verify with
the row's options, ours with the `math` reward's defaults (reference = gold, completion =
prediction). Agreement is counted on every row and on the rows where both tools mean to
apply the same policy; every row where we differ from the expected value is listed with our
reason.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _report import write_section

from rewardsmith import ComponentSpec, Sample

HERE = Path(__file__).resolve().parent
TABLES = HERE / "math_verify_tables.json"


def math_verify_verdict(row: dict[str, Any]) -> int:
    """math-verify on one row, configured as the published test configures it."""
    from math_verify import ExprExtractionConfig, LatexExtractionConfig, parse, verify

    options = row["options"]
    if options["via"] == "parse_verify":
        return int(verify(parse(row["gold"]), parse(row["pred"])))
    targets = [
        LatexExtractionConfig(boxed_match_priority=0) if kind == "latex" else ExprExtractionConfig()
        for kind in options.get("match_types", ["latex", "expr"])
    ]
    return int(
        verify(
            parse(row["gold"], targets),
            parse(row["pred"], targets),
            float_rounding=options.get("precision", 6),
            strict=options.get("strict", True),
            allow_set_relation_comp=options.get("allow_set_relation_comp", False),
        )
    )


def short(text: str, limit: int = 60) -> str:
    """One table cell: whitespace collapsed, control characters shown as escapes."""
    text = re.sub(r"[\x00-\x08\x0b-\x1f]", lambda m: f"\\x{ord(m.group()):02x}", text)
    text = re.sub(r"\s+", " ", text).strip().replace("|", "\\|").replace("`", "'")
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", type=Path, help="update this BENCHMARKS.md section")
    args = parser.parse_args()

    rows = json.loads(TABLES.read_text())["rows"]
    reward = ComponentSpec(type="math").build()
    ours, theirs, details, seconds = {}, {}, {}, []
    for row in rows:
        started = time.perf_counter()
        result = reward(Sample(id=row["id"], completion=row["pred"], reference=row["gold"]))
        seconds.append(time.perf_counter() - started)
        ours[row["id"]] = int(result.status == "ok" and result.score == 1.0)
        details[row["id"]] = (result.status, (result.detail or {}).get("reason", ""))
        theirs[row["id"]] = math_verify_verdict(row)

    same = [r for r in rows if r["policy"] == "same"]

    def agree(verdicts: dict[str, int], subset: list[dict[str, Any]]) -> int:
        return sum(verdicts[r["id"]] == r["expected"] for r in subset)

    n, m = len(rows), len(same)
    lines = [
        "## Math reward vs math-verify on math-verify's test tables",
        "",
        f"Run `python benchmarks/math_tables_bench.py --write BENCHMARKS.md` on {date.today()}: "
        f"the {n} (gold, prediction, expected) rows of the parametrized tables in "
        "huggingface/Math-Verify `tests/` (math-verify 0.9.0 sdist; data and per-row policy in "
        "`benchmarks/math_verify_tables.json`). math-verify runs with each row's published "
        "options; ours with the `math` defaults (gold as reference, prediction as completion).",
        "",
        "| tool | all rows | same-policy rows |",
        "|---|---|---|",
        f"| rewardsmith `math` | {agree(ours, rows)}/{n} ({agree(ours, rows) / n:.1%}) "
        f"| **{agree(ours, same)}/{m} ({agree(ours, same) / m:.1%})** |",
        f"| math-verify 0.9.0 | {agree(theirs, rows)}/{n} ({agree(theirs, rows) / n:.1%}) "
        f"| {agree(theirs, same)}/{m} ({agree(theirs, same) / m:.1%}) |",
        "",
        f"Slowest row for us: {max(seconds) * 1e3:.1f} ms (timeout 5 s). "
        f"Same-policy rows: the {m} rows where we mean to decide as math-verify does; the other "
        f"{n - m} are deliberate differences, each with its reason below. Every row where our "
        "verdict differs from the table's expected value:",
        "",
        "| row | gold | prediction | expected | ours | our reason | policy |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if ours[row["id"]] == row["expected"]:
            continue
        status, reason = details[row["id"]]
        verdict = f"{ours[row['id']]}" if status == "ok" else f"`{status}`"
        policy = "same policy: a miss" if row["policy"] == "same" else row["policy"]
        lines.append(
            f"| `{row['id']}` | `{short(row['gold'])}` | `{short(row['pred'])}` "
            f"| {row['expected']} | {verdict} | {short(reason, 80)} | {policy} |"
        )
    write_section(args.write, "math-tables-bench", "\n".join(lines))


if __name__ == "__main__":
    main()
