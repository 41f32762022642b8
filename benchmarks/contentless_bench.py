"""What contentless replies earn from `ifeval` / `ifbench`, official verdicts vs `training: true`.

On the real prompts of IFEval (541) and IFBench (294), each contentless reply -- "", "OK",
"\\u200b", and the prompt's keywords (the instructions' keyword kwargs where there are some,
else the prompt's five longest words) -- is scored beside the real responses, with the
training option off (the official verdicts) and on. It also checks that, with the option off,
the per-instruction verdicts on the real responses still equal the official ones (strict and
loose), and lists every real response whose score the option changes, with the reason.

    python benchmarks/contentless_bench.py [--write BENCHMARKS.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _report import write_section

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from rewardsmith.models import Sample, Score  # noqa: E402
from rewardsmith.verifiers._words import words  # noqa: E402
from rewardsmith.verifiers.instructions import ifbench, ifeval  # noqa: E402

DATA = HERE.parents[1] / "shared" / "data"
SETS = {
    "IFEval": (
        ifeval,
        DATA / "ifeval" / "input_data.jsonl",
        DATA / "ifeval" / "input_response_data_gpt4_20231107_145030.jsonl",
        DATA / "ifeval" / "reference_verdicts_{mode}.jsonl",
    ),
    "IFBench": (
        ifbench,
        DATA / "ifbench" / "IFBench_test.jsonl",
        DATA / "ifbench" / "sample_output.jsonl",
        DATA / "ifbench" / "eval_results_{mode}.jsonl",
    ),
}
KEYWORD_KWARGS = ("keywords", "keyword", "keyword1", "keyword2", "keyword3", "keyword4",
                  "keyword5", "word", "forbidden_words", "first_word", "end_phrase")  # fmt: skip
LOREM = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor"
"""A fixed twelve-word filler sent to every prompt (red team rt17)."""
REPLIES = ["", "OK", "\u200b", "keywords", LOREM, "real"]
OPTIONS: dict[str, Callable[[Callable[..., Any]], Callable[[Sample], Score]]] = {
    "training": lambda factory: factory(training=True),
    "+topic": lambda factory: factory(training=True, require_topic=True),
}
"""The training options compared with the official verdicts."""
LABELS = {
    "": '`""`',
    "OK": "`OK`",
    "\u200b": "`\\u200b`",
    LOREM: "lorem ipsum (12 words, the same for every prompt)",
    "keywords": "the prompt's keywords",
    "real": "**real responses**",
}


def lines(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def keywords(row: dict[str, Any]) -> str:
    """The instructions' keywords, or else the prompt's five longest words."""
    found: list[str] = []
    for kwargs in row["kwargs"]:
        for key in KEYWORD_KWARGS:
            value = kwargs.get(key)
            found += value if isinstance(value, list) else [value] if value else []
    if found:
        return " ".join(found)
    longest = sorted({w for w in words(row["prompt"]) if len(w) >= 4}, key=lambda w: (-len(w), w))
    return " ".join(longest[:5])


def score_all(
    reward: Callable[[Sample], Score], rows: list[dict[str, Any]], reply: str, real: dict[str, str]
) -> list[Score]:
    out = []
    for row in rows:
        text = {"real": real[row["prompt"]], "keywords": keywords(row)}.get(reply, reply)
        reference = {"instruction_id_list": row["instruction_id_list"], "kwargs": row["kwargs"]}
        sample = Sample(id=str(row["key"]), completion=text, prompt=row["prompt"],
                        reference=reference)  # fmt: skip
        out.append(reward(sample))
    return out


def summary(scores: list[Score]) -> str:
    ok = [s.score for s in scores if s.status == "ok" and s.score is not None]
    full = sum(v == 1.0 for v in ok)
    failed = len(scores) - len(ok)
    note = f" ({failed} error)" if failed else ""
    return f"{sum(ok) / len(ok):.3f} / {full}{note}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", type=Path, help="put the section into this markdown file")
    args = parser.parse_args()

    table: dict[str, dict[str, str]] = {reply: {} for reply in REPLIES}
    checks, changed = [], []
    real_by_set: dict[str, dict[str, str]] = {}
    for name, (factory, prompts, responses, verdicts) in SETS.items():
        rows = lines(prompts)
        real: dict[str, str] = {}
        for item in lines(responses):
            real[item["prompt"]] = item["response"]
            real.setdefault(item["prompt"].strip(), item["response"])
        real = {row["prompt"]: real.get(row["prompt"], real.get(row["prompt"].strip(), ""))
                for row in rows}  # fmt: skip
        real_by_set[name] = real
        for reply in REPLIES:
            official = score_all(factory(), rows, reply, real)
            table[reply][f"{name} official"] = summary(official)
            for option, reward in OPTIONS.items():
                scores = score_all(reward(factory), rows, reply, real)
                table[reply][f"{name} {option}"] = summary(scores)
                if reply == "real":
                    changed += [
                        (option, name, row, a, b)
                        for row, a, b in zip(rows, official, scores, strict=True)
                        if (a.status, a.score) != (b.status, b.score)
                    ]
        for mode in ("strict", "loose"):
            gold = {g["prompt"]: g["follow_instruction_list"]
                    for g in lines(Path(str(verdicts).format(mode=mode)))}  # fmt: skip
            scores = score_all(factory(mode=mode), rows, "real", real)
            compared = [(s, gold[row["prompt"]]) for row, s in zip(rows, scores, strict=True)
                        if s.status == "ok"]  # fmt: skip
            same = sum(s.detail["follow_instruction_list"] == g for s, g in compared)
            skipped = len(rows) - len(compared)
            note = (
                f" ({skipped} `error`: `words:start_verb` needs NLTK's tagger)" if skipped else ""
            )
            checks.append(f"{name} {mode}: {same}/{len(compared)} prompts identical{note}")

    columns = [f"{n} {m}" for n in SETS for m in ("official", *OPTIONS)]
    body = [
        "## Contentless replies: IFEval and IFBench, official vs `training: true`",
        "",
        "Every real prompt of IFEval (541) and IFBench (294) answered with a contentless reply, "
        "beside the real responses shipped with each set. Each cell is the mean reward "
        "(`reward: fraction`, strict) / the number of prompts with full marks: official "
        "(the default), `training: true`, and `training: true, require_topic: true` (+topic). "
        "The prompt's keywords are the instructions' keyword kwargs where there are some, "
        "else the prompt's five longest words. `python benchmarks/contentless_bench.py`.",
        "",
        "| reply | " + " | ".join(columns) + " |",
        "|---|" + "---:|" * len(columns),
    ]
    for reply in REPLIES:
        body.append(f"| {LABELS[reply]} | " + " | ".join(table[reply][c] for c in columns) + " |")
    body += [
        "",
        "Official verdicts with the option off (the default), on the real responses: "
        + "; ".join(checks)
        + ".",
    ]
    labels = {"training": "`training: true`", "+topic": "`training: true, require_topic: true`"}
    for option, label in labels.items():
        moved = [c for c in changed if c[0] == option]
        body += ["", f"Real responses whose reward {label} changes: {len(moved)} of 835."]
        body += [line(real_by_set, *c[1:]) for c in moved]
    write_section(args.write, "contentless-bench", "\n".join(body))


def line(
    real_by_set: dict[str, dict[str, str]], name: str, row: dict[str, Any], a: Score, b: Score
) -> str:
    """One real response whose reward the option changes, with the reason."""
    reason = b.detail.get("reason", "")
    response = " ".join(real_by_set[name][row["prompt"]].split())
    return (
        f"- {name} {row['key']} ({', '.join(row['instruction_id_list'])}): "
        f"{a.score:g} -> {b.score:g}, {reason}. The prompt: {row['prompt'][:90]!r}...; "
        f"the whole response: {response[:120]!r}"
    )


if __name__ == "__main__":
    main()
