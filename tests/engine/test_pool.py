"""The hard-timeout pool and the engine over it, with real worker processes."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rewardsmith import Engine, Sample, ascore, score

SCRIPTED = "tests.engine.rewards_for_tests:scripted"


def spec(timeout_s: float = 1.0, **extra: object) -> dict[str, object]:
    return {"rewards": {"s": {"type": SCRIPTED}}, "timeout_s": timeout_s, **extra}


@pytest.fixture(scope="module")
def engine() -> Engine:
    with Engine(spec(), workers=2) as engine:
        yield engine


def test_results_keep_input_order_and_ids(engine: Engine) -> None:
    texts = [f"sleep 0.0{i % 3}" if i % 7 == 0 else "x" * i for i in range(300)]
    results = engine.score([{"id": f"s{i}", "completion": t} for i, t in enumerate(texts)])
    assert [r.id for r in results] == [f"s{i}" for i in range(300)]
    assert results[5].reward == 5.0


@pytest.mark.parametrize(
    ("text", "status", "reason"),
    [
        ("hang", "timeout", "exceeded 1s"),
        ("die", "error", "worker died (exit code 3)"),
        ("raise", "error", "ValueError: raised on purpose"),
        ("nan", "error", "non-finite"),
        ("not a score", "error", "not a Score"),
        ("invalid", "invalid", "bad reference"),
    ],
)
def test_failures_get_their_status_never_zero(
    engine: Engine, text: str, status: str, reason: str
) -> None:
    bad, good = engine.score([{"completion": text}, {"completion": "ok"}])
    assert bad.status == status
    assert bad.reward is None
    assert bad.components["s"].score is None
    assert reason in bad.components["s"].detail["reason"]
    assert good.status == "ok" and good.reward == 2.0


def test_a_hung_sample_does_not_stall_the_batch(engine: Engine) -> None:
    samples = [{"completion": "hang"}] * 3 + [{"completion": "abc"}] * 200
    started = time.monotonic()
    results = engine.score(samples)
    elapsed = time.monotonic() - started
    assert [r.status for r in results[:3]] == ["timeout"] * 3
    assert all(r.reward == 3.0 for r in results[3:])
    # 3 hangs on 2 workers: at most two timeouts in sequence on one worker, plus restarts.
    assert elapsed < 2 * 1.0 + 3.0


def test_each_timeout_is_bounded_by_timeout_plus_one_second() -> None:
    with Engine(spec(timeout_s=0.5), workers=1) as engine:
        for _ in range(2):
            started = time.monotonic()
            (result,) = engine.score([{"completion": "hang"}])
            assert result.status == "timeout"
            assert time.monotonic() - started < 0.5 + 1.0


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="a Linux scheduling policy")
def test_workers_run_as_batch_jobs_and_their_caller_does_not(engine: Engine) -> None:
    """A batch job woken by new tasks does not preempt the process that sent them (the
    server's event loop); a replacement after a kill is one too."""
    texts = ["policy", "die", "policy", "policy"]
    results = engine.score([{"id": str(i), "completion": t} for i, t in enumerate(texts)])
    assert results[1].status == "error"
    assert {r.reward for r in results if r.id != "1"} == {float(os.SCHED_BATCH)}
    assert os.sched_getscheduler(0) == os.SCHED_OTHER


def test_engine_can_be_reused_after_worker_replacement(engine: Engine) -> None:
    before = engine.pool.replaced
    engine.score([{"completion": "die"}])
    assert engine.pool.replaced == before + 1
    assert engine.score([{"completion": "abcd"}])[0].reward == 4.0


def test_invalid_samples_are_reported_in_place(engine: Engine) -> None:
    results = engine.score([{"completion": "a"}, {"id": "x", "prompt": "no completion"}, "text"])
    assert [r.status for r in results] == ["ok", "invalid", "invalid"]
    assert results[1].id == "x"
    assert "completion" in results[1].components["s"].detail["reason"]
    assert results[2].id == "3"


def test_window_bounds_samples_in_flight() -> None:
    consumed = []

    def stream():
        for i in range(100):
            consumed.append(i)
            yield Sample(id=str(i), completion="x")

    with Engine(spec(), workers=1, window=10) as engine:
        iterator = engine.iter_score(stream())
        next(iterator)
        assert len(consumed) <= 11


def test_module_level_score_and_ascore() -> None:
    samples = [{"completion": "ab"}, {"completion": "abc"}]
    assert [r.reward for r in score(samples, spec(), workers=1)] == [2.0, 3.0]
    results = asyncio.run(ascore(samples, spec(), workers=1))
    assert [r.reward for r in results] == [2.0, 3.0]


def test_on_error_value_replaces_a_failed_total_but_keeps_the_status() -> None:
    (result,) = score([{"completion": "raise"}], spec(on_error=-1.0), workers=1)
    assert result.reward == -1.0
    assert result.status == "error"


def test_a_none_item_is_an_invalid_result_not_the_end_of_the_input(engine: Engine) -> None:
    results = engine.score([{"id": "a", "completion": "x"}, None, {"id": "c", "completion": "yy"}])
    assert [(r.id, r.status) for r in results] == [("a", "ok"), ("2", "invalid"), ("c", "ok")]


def test_an_abandoned_run_does_not_leak_results_into_the_next() -> None:
    with Engine(spec(), workers=2) as engine:
        stream = engine.iter_score(
            {"id": f"old{i}", "completion": "sleep 0.002"} for i in range(500)
        )
        next(stream)
        stream.close()  # a trainer step interrupted mid-run
        fresh = [{"id": f"new{i}", "completion": "x" * (i % 7)} for i in range(300)]
        results = engine.score(fresh)
        assert [r.id for r in results] == [f"new{i}" for i in range(300)]
        assert [r.reward for r in results] == [float(i % 7) for i in range(300)]


SEMAPHORE_SCRIPT = """
from rewardsmith import Engine
spec = "rewards:\\n  r: {type: 'tests.engine.rewards_for_tests:holds_a_semaphore'}\\n"
if __name__ == "__main__":
    with Engine(spec, workers=2) as engine:
        print(engine.score([{"id": "a", "completion": "x"}])[0].reward)
"""


def test_closing_lets_idle_workers_exit_so_their_semaphores_are_released(tmp_path) -> None:
    """Workers killed at close left the semaphore a library made in them (tqdm's lock) to the
    resource tracker, which printed "leaked semaphore objects" after every run of the
    README's main job."""
    script = tmp_path / "run.py"
    script.write_text(SEMAPHORE_SCRIPT)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "src")])}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1.0"
    assert "leaked semaphore" not in done.stderr, done.stderr


def test_a_pipe_is_let_go_of_before_the_pool_closes_it() -> None:
    """An event loop watching a worker's pipe must stop before it is closed: a replacement's
    pipe may get the same number, and the loop would never hear from it (`Front.host`)."""
    from rewardsmith.engine._pool import Task, TimeoutPool
    from rewardsmith.spec import load_spec

    plan = load_spec(spec(timeout_s=0.3)).rewards
    told: list[tuple[int, bool]] = []

    def closing(fd: int) -> None:
        try:
            os.fstat(fd)
            told.append((fd, True))
        except OSError:
            told.append((fd, False))

    with TimeoutPool(plan, workers=1) as pool:
        pool.closing = closing
        old = pool.watched() or [pool._workers[0].conn.fileno()]
        pool.submit([Task("k", "s", Sample(id="1", completion="hang"), 0.3)])
        done: list = []
        while not done:
            done += pool.poll(0.1)
        assert [score.status for _, score in done] == ["timeout"]
    assert told[0] == (old[0], True)  # told while still open
    assert all(is_open for _, is_open in told)


SENT = [
    {"id": "text", "completion": "The answer is \\boxed{42}.", "reference": "42"},
    {"id": "defaults only", "completion": ""},
    {
        "id": "chat",
        "prompt": [{"role": "user", "content": "What is 6 x 7?"}],
        "completion": [
            {"role": "assistant", "content": [{"type": "text", "text": "42"}]},
        ],
        "reference": {"answer": 42, "tests": ["assert f() == 42"]},
        "metadata": {"source": "gsm8k", "nested": [{"a": [1, 2.5, None, True]}]},
        "group": "g1",
    },
    {"id": "unicode", "completion": "ß \u00e9 \U0001f600 \ufffd", "metadata": {}},
]


def test_a_sample_reaches_its_worker_as_it_was_given() -> None:
    """The pool sends a sample's fields and rebuilds it in the worker (`_fields`, `built`):
    the reward sees the same sample, with the same fields given (what a dump with
    `exclude_unset` writes)."""
    samples = [Sample.model_validate(s) for s in SENT]
    with Engine({"rewards": {"e": {"type": "tests.engine.rewards_for_tests:echo"}}}) as engine:
        results = engine.score(samples)
    for sample, result in zip(samples, results, strict=True):
        detail = result.components["e"].detail
        assert detail["type"] == "Sample"
        assert detail["seen"] == {
            "dump": sample.model_dump(mode="json"),
            "given": sorted(sample.model_fields_set),
        }
