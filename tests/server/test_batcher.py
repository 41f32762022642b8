"""The micro-batcher without HTTP: requests share engine calls only when that is invisible."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from rewardsmith import Engine, InputError, Sample
from rewardsmith.server._batcher import Batcher
from rewardsmith.server._metrics import Metrics

SCRIPTED = "tests.engine.rewards_for_tests:scripted"


def dumped(results: list) -> list[dict]:
    return [json.loads(r.model_dump_json(exclude_unset=True)) for r in results]


def run_concurrently(batcher: Batcher, requests: list[list[Sample]]) -> list:
    async def main() -> list:
        return await asyncio.gather(*(batcher.score(r) for r in requests), return_exceptions=True)

    return asyncio.run(main())


def test_requests_with_group_transforms_are_never_mixed() -> None:
    spec = {"rewards": {"s": {"type": SCRIPTED}}, "group_transform": "grpo"}
    first = [Sample(id=f"a{i}", completion="x" * i, group="q1") for i in range(1, 4)]
    second = [Sample(id=f"b{i}", completion="y" * i * 2, group="q1") for i in range(1, 5)]
    batcher = Batcher(lambda: Engine(spec, workers=1))
    batcher.start()
    try:
        got = run_concurrently(batcher, [first, second])
    finally:
        batcher.close()
    with Engine(spec, workers=1) as engine:
        alone = [dumped(engine.score(first)), dumped(engine.score(second))]
    assert [dumped(g) for g in got] == alone  # each request is its own group of "q1"
    assert sum(r["advantage"] for r in alone[0]) == pytest.approx(0.0)


def test_a_request_with_a_broken_group_order_fails_alone() -> None:
    spec = {"rewards": {"s": {"type": SCRIPTED}}, "group_transform": "grpo"}
    broken = [
        Sample(id="1", completion="a", group="g1"),
        Sample(id="2", completion="b", group="g2"),
        Sample(id="3", completion="c", group="g1"),
    ]
    fine = [Sample(id="4", completion="abc", group="g1")]
    batcher = Batcher(lambda: Engine(spec, workers=1))
    batcher.start()
    try:
        bad, good = run_concurrently(batcher, [broken, fine])
    finally:
        batcher.close()
    assert isinstance(bad, InputError) and "reappears" in str(bad)
    assert [r.reward for r in good] == [3.0]


def test_plain_requests_share_one_engine_call() -> None:
    spec = {"rewards": {"s": {"type": SCRIPTED}}}
    requests = [
        [Sample(id=f"{j}-{i}", completion="z" * (i + j)) for i in range(5)] for j in range(8)
    ]
    metrics = Metrics()
    batcher = Batcher(lambda: Engine(spec, workers=2), metrics=metrics)
    batcher.start()
    try:
        got = run_concurrently(batcher, requests)
    finally:
        batcher.close()
    for j, results in enumerate(got):
        assert [r.id for r in results] == [f"{j}-{i}" for i in range(5)]
        assert [r.reward for r in results] == [float(i + j) for i in range(5)]
    assert batcher.admitted == 0
    batches = re.search(r"^rewardsmith_batches_total (\d+)$", metrics.render(), re.M)
    assert batches is not None and int(batches[1]) < len(requests)  # requests shared calls


def test_two_drivers_give_the_same_results() -> None:
    spec = {"rewards": {"s": {"type": SCRIPTED}}, "timeout_s": 1}
    requests = [
        [Sample(id=f"{j}-{i}", completion="q" * (i + j)) for i in range(3)] for j in range(6)
    ]
    requests[2][1] = Sample(id="2-1", completion="hang")
    batcher = Batcher(lambda: Engine(spec, workers=1), drivers=2)
    batcher.start()
    try:
        got = run_concurrently(batcher, requests)
    finally:
        batcher.close()
    assert got[2][1].status == "timeout"
    assert [[r.reward for r in g] for j, g in enumerate(got) if j != 2] == [
        [float(i + j) for i in range(3)] for j in range(6) if j != 2
    ]


class PoisonedEngine(Engine):
    """An engine that fails any batch holding a sample whose completion is "poison"."""

    def iter_score(self, samples, on_result=None):  # type: ignore[no-untyped-def, override]
        samples = list(samples)
        if any(isinstance(s, Sample) and s.completion == "poison" for s in samples):
            raise RuntimeError("this batch cannot be scored")
        return super().iter_score(samples, on_result)


def test_a_batch_that_fails_fails_only_the_request_that_caused_it() -> None:
    spec = {"rewards": {"s": {"type": SCRIPTED}}}
    requests = [
        [Sample(id=f"{j}-{i}", completion="w" * (i + j)) for i in range(3)] for j in range(5)
    ]
    requests.insert(2, [Sample(id="p", completion="poison")])
    batcher = Batcher(lambda: PoisonedEngine(spec, workers=1))
    batcher.start()
    try:
        got = run_concurrently(batcher, requests)
    finally:
        batcher.close()
    poisoned = got.pop(2)
    assert isinstance(poisoned, RuntimeError)
    assert [[r.reward for r in g] for g in got] == [
        [float(i + j) for i in range(3)] for j in range(5)
    ]
    assert batcher.admitted == 0
