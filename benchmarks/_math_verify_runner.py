"""Runs math-verify (parse + verify, defaults) over a JSONL of pairs, one after another.

Invoked by math_bench.py as its own process so its memory is measured alone. Writes one JSON
line per pair: {"id", "verdict", "seconds"} and a last line {"total_seconds"}.
"""

from __future__ import annotations

import json
import sys
import time

from math_verify import parse, verify


def main(inp: str, out: str) -> None:
    with open(inp, encoding="utf-8") as source:
        pairs = [json.loads(line) for line in source]
    started = time.perf_counter()
    with open(out, "w", encoding="utf-8") as sink:
        for pair in pairs:
            t0 = time.perf_counter()
            try:
                verdict = bool(verify(parse(pair["reference"]), parse(pair["completion"])))
            except Exception:
                verdict = False
            seconds = time.perf_counter() - t0
            sink.write(
                json.dumps({"id": pair["id"], "verdict": verdict, "seconds": seconds}) + "\n"
            )
        sink.write(json.dumps({"total_seconds": time.perf_counter() - started}) + "\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
