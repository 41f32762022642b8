"""The engine's continuous front: many callers, one pool, no batch boundaries."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from typing import Any, TypeVar

import pytest

import rewardsmith
from rewardsmith import Engine, InputError, Sample
from rewardsmith.engine import EngineClosed, QueueFull
from rewardsmith.engine._front import Front
from rewardsmith.models import Score

SCRIPTED = "tests.engine.rewards_for_tests:scripted"
PLAIN = {"rewards": {"s": {"type": SCRIPTED}}, "timeout_s": 1}
GROUPED = {"rewards": {"s": {"type": SCRIPTED}}, "group_transform": "grpo"}
T = TypeVar("T")


def dumped(results: list) -> list[dict]:
    return [json.loads(r.model_dump_json(exclude_unset=True)) for r in results]


def concurrently(engine: Engine, requests: list[list[Sample]]) -> list:
    async def main() -> list:
        calls = (engine.ascore(r) for r in requests)
        return await asyncio.gather(*calls, return_exceptions=True)

    return asyncio.run(main())


def test_calls_with_group_transforms_are_never_mixed() -> None:
    first = [Sample(id=f"a{i}", completion="x" * i, group="q1") for i in range(1, 4)]
    second = [Sample(id=f"b{i}", completion="y" * i * 2, group="q1") for i in range(1, 5)]
    with Engine(GROUPED, workers=1) as engine:
        got = concurrently(engine, [first, second])
        alone = [dumped(engine.score(first)), dumped(engine.score(second))]
    assert [dumped(g) for g in got] == alone  # each call is its own group of "q1"
    assert sum(r["advantage"] for r in alone[0]) == pytest.approx(0.0)


def test_a_call_with_a_broken_group_order_fails_alone() -> None:
    broken = [
        Sample(id="1", completion="a", group="g1"),
        Sample(id="2", completion="b", group="g2"),
        Sample(id="3", completion="c", group="g1"),
    ]
    fine = [Sample(id="4", completion="abc", group="g1")]
    with Engine(GROUPED, workers=1) as engine:
        bad, good = concurrently(engine, [broken, fine])
        assert engine.admitted == 0
    assert isinstance(bad, InputError) and "reappears" in str(bad)
    assert [r.reward for r in good] == [3.0]


def test_callers_on_many_threads_get_the_results_of_one_call() -> None:
    requests = [
        [Sample(id=f"{j}-{i}", completion="z" * (i + j)) for i in range(5)] for j in range(12)
    ]
    requests[4][2] = Sample(id="4-2", completion="hang")
    requests[7][0] = Sample(id="7-0", completion="die")
    with Engine(PLAIN, workers=2) as engine:
        expected = dumped(engine.score([s for r in requests for s in r]))
        got: dict[int, list] = {}

        def call(j: int) -> None:
            got[j] = engine.score(requests[j])

        threads = [threading.Thread(target=call, args=(j,)) for j in range(len(requests))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert engine.admitted == 0
    flat = [row for j in range(len(requests)) for row in dumped(got[j])]
    for row in flat + expected:  # worker pids differ between the runs
        row["components"]["s"]["detail"].pop("traceback", None)
    assert flat == expected
    assert got[4][2].status == "timeout" and got[7][0].status == "error"


def test_a_small_call_does_not_wait_for_a_slow_one_in_front_of_it() -> None:
    with Engine(PLAIN, workers=2) as engine:
        engine.start()
        (slow,) = engine.submit([{"completion": "sleep 0.8"}])
        time.sleep(0.1)  # the slow sample is running on one worker
        (quick,) = engine.submit([{"completion": "abc"}])
        wait([quick, slow], return_when="FIRST_COMPLETED")
        assert quick.done() and not slow.done()  # no batch boundary held it back
        assert quick.result().reward == 3.0
        assert slow.result().reward == len("sleep 0.8")


def test_admission_control_refuses_what_passes_the_limit() -> None:
    with Engine(PLAIN, workers=1, max_queue_samples=4) as engine:
        engine.start()
        held = engine.submit([{"completion": "sleep 0.3"}] * 3)
        with pytest.raises(QueueFull, match="limit of 4"):
            engine.submit([{"completion": "a"}] * 2)
        assert engine.admitted == 3
        assert [f.result().status for f in held] == ["ok"] * 3
        assert engine.admitted == 0
        assert [f.result().reward for f in engine.submit([{"completion": "ab"}] * 4)] == [2.0] * 4


@pytest.mark.parametrize(
    "call",
    [
        lambda engine, samples: asyncio.ensure_future(engine.ascore(samples)),
        lambda engine, samples: engine.asubmit(samples),
    ],
    ids=["ascore", "asubmit"],
)
def test_a_cancelled_call_gives_back_its_place_and_leaks_nothing(
    call: Callable[[Engine, list], asyncio.Future],
) -> None:
    async def main(engine: Engine) -> list:
        held = call(engine, [{"completion": "sleep 0.05"}] * 40)
        await asyncio.sleep(0.2)
        held.cancel()
        await asyncio.sleep(0.3)
        return await engine.ascore([{"id": f"n{i}", "completion": "x" * i} for i in range(6)])

    with Engine(PLAIN, workers=1, max_queue_samples=100) as engine:
        engine.start()
        results = asyncio.run(main(engine))
        assert engine.admitted == 0
    assert [(r.id, r.reward) for r in results] == [(f"n{i}", float(i)) for i in range(6)]


def test_closing_the_engine_fails_the_calls_in_flight_and_it_starts_again() -> None:
    engine = Engine(PLAIN, workers=1)
    futures = engine.submit([{"completion": "sleep 5"}])
    time.sleep(0.2)
    engine.close()
    with pytest.raises(EngineClosed):
        futures[0].result(timeout=5)
    assert engine.admitted == 0
    try:
        assert [r.reward for r in engine.score([{"completion": "abcd"}])] == [4.0]
    finally:
        engine.close()


class BrokenPoolEngine(Engine):
    """An engine whose worker pool fails to start (as when workers cannot import)."""

    def _start_pool(self):  # type: ignore[no-untyped-def, override]
        raise RuntimeError("a reward worker failed to start")


def test_a_worker_pool_that_cannot_start_fails_the_call_with_the_reason() -> None:
    with BrokenPoolEngine(PLAIN, workers=1) as engine:
        with pytest.raises(RuntimeError, match="failed to start"):
            engine.score([{"completion": "a"}])
        assert engine.admitted == 0
        with pytest.raises(RuntimeError, match="failed to start"):  # tried again, not stuck
            asyncio.run(engine.ascore([{"completion": "a"}]))


def test_engines_that_come_and_go_leave_no_file_descriptors_behind() -> None:
    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    rewardsmith.score([{"completion": "a"}], PLAIN, workers=1)  # imports, fork server
    before = open_fds()
    for _ in range(5):
        assert [r.reward for r in rewardsmith.score([{"completion": "ab"}], PLAIN, workers=1)] == [
            2.0
        ]
    assert open_fds() <= before


def test_asubmit_queues_at_once_and_refuses_at_the_call() -> None:
    async def main(engine: Engine) -> list:
        held = engine.asubmit([{"completion": "a" * i} for i in range(30)])  # before any await
        assert isinstance(held, asyncio.Future) and engine.admitted == 30
        with pytest.raises(QueueFull):  # at the call, not at the await
            engine.asubmit([{"completion": "a"}] * 11)
        return await held

    with Engine(PLAIN, workers=1, max_queue_samples=40) as engine:
        results = asyncio.run(main(engine))
        assert engine.admitted == 0
    assert [r.reward for r in results] == [float(i) for i in range(30)]


def test_calls_added_while_every_worker_is_busy_do_not_wake_the_driver() -> None:
    """They only join the queue; the driver takes them when the worker answers, and nothing
    is lost or late beyond that. An invalid input, ready as it is, wakes it."""
    with Engine({**PLAIN, "timeout_s": 5}, workers=1) as engine:
        engine.start()
        (slow,) = engine.submit([{"completion": "sleep 1.5"}])
        time.sleep(0.2)  # the one worker is on it
        front = engine.front
        quick = engine.submit([{"id": f"q{i}", "completion": "y" * i} for i in range(5)])
        assert not front._woken and front._inbox  # queued, the driver left asleep
        started = time.monotonic()
        (invalid,) = engine.submit([{"completion": 5}])  # nothing to score: ready at once
        assert front._woken or not front._inbox  # woken (or already awake and done)
        assert invalid.result(timeout=5).status == "invalid"
        assert time.monotonic() - started < 1.0 and not slow.done()
        assert [f.result(timeout=5).reward for f in quick] == [0.0, 1.0, 2.0, 3.0, 4.0]
        assert slow.result().reward == len("sleep 1.5")
        assert engine.admitted == 0


def test_results_for_an_event_loop_cost_it_one_wake_up_per_batch() -> None:
    from rewardsmith.engine._engine import _Handover

    loop = asyncio.new_event_loop()
    wakes: list[object] = []
    threadsafe = loop.call_soon_threadsafe

    def counting(callback, *args):  # type: ignore[no-untyped-def]
        wakes.append(callback)
        return threadsafe(callback, *args)

    loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
    handover, ran = _Handover(loop), []
    try:
        batch = threading.Thread(target=lambda: [handover.call(ran.append, i) for i in range(3)])
        batch.start()
        batch.join()
        loop.run_until_complete(asyncio.sleep(0.01))
        assert ran == [0, 1, 2] and len(wakes) == 1
        handover.call(ran.append, 3)  # a later batch wakes the loop again
        loop.run_until_complete(asyncio.sleep(0.01))
        assert ran == [0, 1, 2, 3] and len(wakes) == 2
    finally:
        loop.close()
    handover.call(ran.append, 4)  # a closed loop: dropped, no error


def test_event_loops_that_are_done_with_leave_nothing_behind() -> None:
    import gc
    import weakref

    loops: list[weakref.ref] = []

    async def call(engine: Engine) -> float:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        return (await engine.ascore([{"completion": "abc"}]))[0].reward

    with Engine(PLAIN, workers=1) as engine:
        assert [asyncio.run(call(engine)) for _ in range(3)] == [3.0] * 3
        engine.score([{"completion": "a"}])  # the driver lets go of its last commands
        gc.collect()
        assert [ref() for ref in loops] == [None] * 3
        assert len(engine._handovers) == 0


# -- a front hosted on an event loop (what the server does) ---------------------------------


MIXED = [[{"id": f"{j}-{i}", "completion": "z" * (i + j)} for i in range(4)] for j in range(10)]
MIXED[3][1] = {"id": "3-1", "completion": "hang"}  # timeout: the loop's deadline timer
MIXED[6][0] = {"id": "6-0", "completion": "die"}  # the worker's pipe ends under a task
MIXED[8][2] = {"id": "8-2", "completion": 7}  # invalid: ready at once


def test_a_hosted_front_gives_what_a_driver_thread_gives_and_starts_no_thread() -> None:
    with Engine(PLAIN, workers=2) as engine:
        expected = [dumped(engine.score(r)) for r in MIXED]

    async def main(engine: Engine) -> tuple[list, list, bool]:
        engine.host(asyncio.get_running_loop())
        calls = [engine.ascore(r) for r in MIXED[:-1]]
        from_a_thread = asyncio.to_thread(engine.score, MIXED[-1])  # wakes the loop
        got = await asyncio.gather(*calls, from_a_thread)
        threads = engine.front._thread is not None
        engine.close()  # on the loop
        return got, [engine.admitted], threads

    engine = Engine(PLAIN, workers=2)
    got, admitted, threads = asyncio.run(main(engine))
    assert [dumped(g) for g in got] == expected
    assert {r["status"] for g in expected for r in g} == {"ok", "timeout", "error", "invalid"}
    assert admitted == [0] and not threads


def test_a_hosted_front_closed_from_another_thread_fails_its_calls_and_works_again() -> None:
    """The server's way: `close` in a thread while the loop runs; then a driver thread."""

    async def main(engine: Engine) -> BaseException | list:
        engine.host(asyncio.get_running_loop())
        await asyncio.to_thread(engine.start)
        held = asyncio.ensure_future(engine.ascore([{"completion": "sleep 5"}]))
        await asyncio.sleep(0.2)
        await asyncio.to_thread(engine.close)
        return (await asyncio.gather(held, return_exceptions=True))[0]

    engine = Engine(PLAIN, workers=1)
    try:
        assert isinstance(asyncio.run(main(engine)), EngineClosed)
        assert engine.admitted == 0
        assert [r.reward for r in engine.score([{"completion": "abcd"}])] == [4.0]
        assert engine.front._thread is not None
    finally:
        engine.close()


def test_a_blocking_call_on_the_hosting_loop_raises_rather_than_hangs() -> None:
    """`score` or `start` on the thread of the loop that drives the engine would wait for
    that loop, forever: it is refused, and the engine goes on."""
    outcome: list = []

    async def main(engine: Engine) -> None:
        engine.host(asyncio.get_running_loop())
        for call in (lambda: engine.score([{"completion": "a"}]), engine.start):
            with pytest.raises(RuntimeError, match="would wait for itself"):
                call()
        begun = engine.iter_score([{"completion": "sleep 0.05"}, {"completion": "sleep 0.5"}])
        assert (await asyncio.to_thread(next, begun)).reward == 10.0  # begun in a thread,
        with pytest.raises(RuntimeError, match="would wait for itself"):  # read on here
            list(begun)
        outcome.append([r.reward for r in await engine.ascore([{"completion": "ab"}])])
        outcome.append(engine.admitted)
        engine.close()

    engine = Engine(PLAIN, workers=1)
    # in a thread: without the check the loop hangs, and the test must fail, not hang
    thread = threading.Thread(target=asyncio.run, args=(main(engine),), daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive() and outcome == [[2.0], 0]


def test_a_loop_hosted_before_it_runs_elsewhere_refuses_its_own_thread_not_the_host() -> None:
    """helper-64: `host` on the main thread, then the loop run by another: the main thread
    may wait for results (and wakes the loop from outside it), the loop's own may not."""
    engine = Engine(PLAIN, workers=1)
    loop = asyncio.new_event_loop()
    engine.host(loop)
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:  # once the loop runs (before, the hosting thread is the one that would run it)
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop).result(timeout=60)
        assert [r.reward for r in engine.score([{"completion": "ab"}])] == [2.0]

        async def on_the_loop() -> str:
            try:
                engine.score([{"completion": "ab"}])
            except RuntimeError as exc:
                return str(exc)
            return "scored"

        refused = asyncio.run_coroutine_threadsafe(on_the_loop(), loop).result(timeout=60)
        assert "would wait for itself" in refused
    finally:
        _stop_hosted(engine, loop, thread)


def test_hosting_from_another_thread_than_the_loops_is_refused() -> None:
    """The loop's thread is what `score` checks against: a wrong one would let it hang."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        engine = Engine(PLAIN, workers=1)
        with pytest.raises(RuntimeError, match="thread its loop runs on"):
            await asyncio.to_thread(engine.host, loop)

    asyncio.run(main())


def test_an_engine_whose_hosting_loop_closed_goes_on_with_a_thread() -> None:
    async def main(engine: Engine) -> list:
        engine.host(asyncio.get_running_loop())
        return await engine.ascore([{"completion": "ab"}])

    with Engine(PLAIN, workers=1) as engine:
        assert [r.reward for r in asyncio.run(main(engine))] == [2.0]
        assert [r.reward for r in engine.score([{"completion": "abc"}])] == [3.0]
        assert engine.front._thread is not None


def test_hosting_comes_before_first_use_and_a_ray_pool_keeps_its_thread() -> None:
    async def host(engine: Engine) -> None:
        engine.host(asyncio.get_running_loop())

    with Engine(PLAIN, workers=1) as engine:
        engine.start()
        with pytest.raises(RuntimeError, match="before its first use"):
            asyncio.run(host(engine))
    ray = Engine(PLAIN, backend="ray")  # no cluster starts before the first call
    asyncio.run(host(ray))
    assert ray.front._host is None


@pytest.mark.parametrize("hosted", [False, True], ids=["thread", "hosted"])
def test_while_a_killed_worker_is_replaced_the_others_go_on(hosted: bool) -> None:
    """A replacement builds its rewards (seconds, for a model) without holding up the pool,
    nor, hosted, the event loop."""
    spec = {
        "rewards": {
            "s": {"type": SCRIPTED},
            "w": {"type": "tests.engine.rewards_for_tests:slow_start"},
        },
        "timeout_s": 0.5,
    }

    async def main(engine: Engine) -> tuple[list, list, bool]:
        if hosted:
            engine.host(asyncio.get_running_loop())
        await asyncio.to_thread(engine.start)
        hung = asyncio.ensure_future(engine.ascore([{"completion": "hang"}]))
        while engine.pool.replaced == 0:
            await asyncio.sleep(0.05)
        quick = await engine.ascore([{"id": str(i), "completion": "ab"} for i in range(8)])
        starting = any(w.starting is not None for w in engine.pool._workers)
        hung_results = await hung
        await asyncio.to_thread(engine.close)
        return hung_results, quick, starting

    engine = Engine(spec, workers=2)
    hung, quick, starting = asyncio.run(main(engine))
    assert starting  # the quick call was answered while the replacement still built
    assert [r.components["s"].status for r in hung] == ["timeout"]
    assert [r.reward for r in quick] == [3.0] * 8


def test_a_hosting_loop_goes_on_while_the_pool_starts() -> None:
    spec = {"rewards": {"w": {"type": "tests.engine.rewards_for_tests:slow_start"}}}

    async def main(engine: Engine) -> tuple[int, list]:
        engine.host(asyncio.get_running_loop())
        call = asyncio.ensure_future(engine.ascore([{"completion": "a"}]))
        ticks = 0
        for _ in range(10):  # within the 3 s the workers take to build their rewards
            await asyncio.sleep(0.05)
            ticks += 1
        ticked = ticks if not call.done() else -1
        results = await call
        await asyncio.to_thread(engine.close)
        return ticked, results

    ticked, results = asyncio.run(main(Engine(spec, workers=1)))
    assert ticked == 10 and [r.reward for r in results] == [1.0]


def test_a_hosted_pool_that_cannot_start_fails_each_call_and_hangs_none() -> None:
    async def main(engine: Engine) -> list:
        engine.host(asyncio.get_running_loop())
        calls = [engine.ascore([{"completion": "a"}]) for _ in range(2)]
        got = await asyncio.gather(*calls, return_exceptions=True)
        got += await asyncio.gather(engine.ascore([{"completion": "b"}]), return_exceptions=True)
        await asyncio.to_thread(engine.close)
        return got

    got = asyncio.run(asyncio.wait_for(main(BrokenPoolEngine(PLAIN, workers=1)), 30))
    assert [str(e) for e in got] == ["a reward worker failed to start"] * 3


def test_a_hosting_uvloop_leaves_the_pipes_blocking_and_large_samples_go_through() -> None:
    """uvloop (libuv) makes the fds it watches non-blocking; the pool writes whole messages
    on its pipes, so a large sample failed half-sent: its worker was replaced, the call
    stuck (found by the rtHTTP2 rows of 12 MB answers)."""
    uvloop = pytest.importorskip("uvloop")

    async def main(engine: Engine) -> tuple[list, bool, int]:
        engine.host(asyncio.get_running_loop())
        rewards = []
        for size in (100_000, 3_000_000) * 3:
            call = engine.ascore([{"id": "i" * size, "completion": "abc"}])
            rewards += [r.reward for r in await asyncio.wait_for(call, 60)]
        blocking = os.get_blocking(engine.pool._workers[0].conn.fileno())
        replaced = engine.pool.replaced
        await asyncio.to_thread(engine.close)
        return rewards, blocking, replaced

    loop = uvloop.new_event_loop()
    try:
        rewards, blocking, replaced = loop.run_until_complete(main(Engine(PLAIN, workers=1)))
    finally:
        loop.close()
    assert rewards == [3.0] * 6 and blocking and replaced == 0


def outcome_in_thread(call: Callable[[], object], timeout: float = 30) -> list:
    """`call()`'s value or exception, run in a thread: a row fails, rather than hangs, if it
    hangs (the list is then empty)."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    return outcome


def test_a_thread_waiting_when_the_hosting_loop_closes_gets_its_results() -> None:
    """helper-65: a thread's `score` in flight when the hosting loop's `asyncio.run` ended
    waited forever (only a next call started a thread to take over)."""
    engine = Engine(PLAIN, workers=1)
    outcome: list = []

    def call() -> None:
        outcome.append([r.reward for r in engine.score([{"completion": "sleep 0.5"}])])

    async def main() -> threading.Thread:
        engine.host(asyncio.get_running_loop())
        await asyncio.to_thread(engine.start)
        thread = threading.Thread(target=call, daemon=True)
        thread.start()
        await asyncio.sleep(0.2)
        return thread

    try:
        thread = asyncio.run(main())
        thread.join(30)
        assert outcome == [[9.0]] and engine.admitted == 0
    finally:
        engine.close()


def test_the_thread_that_ran_a_hosting_loop_is_refused_once_the_loop_stops() -> None:
    """helper-65: hosted on the main thread, run by another; once the loop stopped, that
    thread's `score` waited for a loop only it would run again."""
    engine = Engine(PLAIN, workers=1)
    loop = asyncio.new_event_loop()
    engine.host(loop)

    def runner() -> object:
        loop.run_until_complete(engine.ascore([{"completion": "ab"}]))
        return engine.score([{"completion": "abc"}])

    try:
        outcome = outcome_in_thread(runner)
        assert len(outcome) == 1 and isinstance(outcome[0], RuntimeError)
        assert "would wait for itself" in str(outcome[0])
    finally:
        loop.close()
        engine.close()


def test_a_blocking_call_in_a_submit_callback_raises_rather_than_hangs_the_engine() -> None:
    """helper-65: a `submit` future's callbacks run on the driver thread; `score` there
    waited for that thread, and every later call of the engine hung with it."""
    engine = Engine(PLAIN, workers=1)
    got: list = []

    def callback(_: object) -> None:
        for call in (lambda: engine.score([{"completion": "abc"}]), engine.start):
            try:
                call()
            except RuntimeError as exc:
                got.append(str(exc))

    try:
        engine.submit([{"completion": "a"}])[0].add_done_callback(callback)
        outcome = outcome_in_thread(lambda: engine.score([{"completion": "ab"}]))
        assert [r.reward for r in outcome[0]] == [2.0]
        assert len(got) == 2 and all("driver would wait for itself" in g for g in got)
    finally:
        if outcome:
            engine.close()


@pytest.mark.parametrize("hosted", [False, True], ids=["thread", "hosted"])
def test_close_in_a_result_callback_leaves_a_working_engine_and_no_admission(
    hosted: bool,
) -> None:
    """helper-65: `close` in a `submit` future's callback, on the driver thread, let that
    driver go on with the closed pool (the next call hung); hosted, it released the run's
    samples twice (`admitted` ended at -1, letting a limit be passed)."""

    async def main(engine: Engine) -> tuple[object, list, int]:
        if hosted:
            engine.host(asyncio.get_running_loop())
        await asyncio.to_thread(engine.start)
        futures = engine.submit([{"completion": "a"}, {"completion": "sleep 1"}])
        futures[0].add_done_callback(lambda _: engine.close())
        results = await asyncio.gather(*map(asyncio.wrap_future, futures), return_exceptions=True)
        after = await engine.ascore([{"completion": "abc"}])
        admitted = engine.admitted
        await asyncio.to_thread(engine.close)
        return results[1], [r.reward for r in after], admitted

    engine = Engine(PLAIN, workers=2)
    outcome = outcome_in_thread(lambda: asyncio.run(main(engine)))
    assert len(outcome) == 1, "the engine hung"
    second, after, admitted = outcome[0]
    assert isinstance(second, EngineClosed) and after == [3.0] and admitted == 0


def test_a_callback_of_a_future_close_fails_may_score_anew() -> None:
    """helper-66: `close` told the runs it failed while it was still closing, so a callback
    that scored again (a retry) waited for a driver that could not start: `close` never
    returned, and from a result callback, every later call of the engine hung too."""
    engine = Engine(PLAIN, workers=1)
    retried: list = []

    def retry(_: object) -> None:
        retried.append([r.reward for r in engine.score([{"completion": "abc"}])])

    try:
        future = engine.submit([{"completion": "sleep 1"}])[0]
        future.add_done_callback(retry)
        assert outcome_in_thread(engine.close) == [None]
        assert isinstance(future.exception(0), EngineClosed) and retried == [[3.0]]
        futures = engine.submit([{"completion": "a"}, {"completion": "sleep 1"}])
        futures[1].add_done_callback(retry)
        futures[0].add_done_callback(lambda _: engine.close())  # on the driver thread
        assert isinstance(futures[1].exception(timeout=30), EngineClosed)
        later = outcome_in_thread(lambda: [r.reward for r in engine.score([{"completion": "ab"}])])
        deadline = time.monotonic() + 30  # the callback runs after the future is set, and
        while (len(retried) < 2 or engine.admitted) and time.monotonic() < deadline:
            time.sleep(0.01)  # the failed run's samples leave the count once it returns
        assert later == [[2.0]] and retried == [[3.0], [3.0]] and engine.admitted == 0
    finally:
        engine.close()


def test_neither_the_hosting_thread_nor_the_last_runner_waits_on_a_stopped_loop() -> None:
    """helper-66: the hosting thread of a loop another thread ran, then stopped, waited for
    ever (c2ccf89 refused only the thread that ran it last)."""
    engine = Engine(PLAIN, workers=1)
    loop = asyncio.new_event_loop()

    def hosting_thread() -> object:
        engine.host(loop)
        runner = threading.Thread(
            target=loop.run_until_complete, args=(engine.ascore([{"completion": "ab"}]),)
        )
        runner.start()
        runner.join(30)
        return engine.score([{"completion": "abc"}])

    try:
        outcome = outcome_in_thread(hosting_thread)
        assert len(outcome) == 1 and isinstance(outcome[0], RuntimeError)
    finally:
        loop.close()
        engine.close()


def test_a_close_and_a_retry_on_the_driver_during_another_close_leave_a_working_engine() -> None:
    """helper-67: a thread closed the engine while the driver ran a result callback that
    closed it too and submitted again: that submit's new driver made a pool, which the
    first close then closed under it (the next call hung, its driver spinning)."""
    engine = Engine(PLAIN, workers=2)
    closing = threading.Event()
    retried: list = []

    def callback(_: object) -> None:
        closing.wait(5)
        time.sleep(0.3)  # the other thread is in `close`, waiting for this driver
        engine.close()
        retried.append(engine.submit([{"completion": "ab"}])[0])

    def close_from_another_thread() -> None:
        time.sleep(0.1)
        closing.set()
        engine.close()

    try:
        engine.start()
        futures = engine.submit([{"completion": "a"}, {"completion": "sleep 2"}])
        futures[0].add_done_callback(callback)
        assert outcome_in_thread(close_from_another_thread) == [None]
        assert isinstance(futures[1].exception(5), EngineClosed)
        assert isinstance(retried[0].exception(5), EngineClosed)  # submitted while closing
        later = outcome_in_thread(lambda: [r.reward for r in engine.score([{"completion": "abc"}])])
        assert later == [[3.0]] and engine.admitted == 0
    finally:
        engine.close()


def test_two_closes_at_once_close_no_pool_of_a_later_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """helper-67: the close that ended first let the next call start a driver and a pool,
    which the slower close then closed under it (IndexError from the closed pool, or no
    answer at all). A slow close is made here by waiting in `_fail_all`."""
    fail_all = rewardsmith.engine._front.Front._fail_all

    def slow_fail_all(self: object, *args: object, **kwargs: object) -> list:
        failed = fail_all(self, *args, **kwargs)  # type: ignore[arg-type]
        if threading.current_thread().name == "slow-closer":
            time.sleep(1)
        return failed

    monkeypatch.setattr(rewardsmith.engine._front.Front, "_fail_all", slow_fail_all)
    engine = Engine(PLAIN, workers=1)
    try:
        engine.start()
        slow = threading.Thread(target=engine.close, name="slow-closer")
        slow.start()
        time.sleep(0.2)
        assert outcome_in_thread(engine.close) == [None]  # after the slow one
        future = engine.submit([{"completion": "sleep 0.5"}])[0]
        slow.join(30)
        assert outcome_in_thread(lambda: future.result(30).reward) == [9.0]
        assert engine.admitted == 0
    finally:
        engine.close()


def test_ascore_in_a_submit_callback_raises_rather_than_hangs_the_engine() -> None:
    """helper-68: `asyncio.run(engine.ascore(...))` in a callback, on the driver thread,
    waited for that thread: every later call of the engine hung, and every `close`."""
    engine = Engine(PLAIN, workers=1)
    got: list = []

    def callback(_: object) -> None:
        try:
            got.append(asyncio.run(engine.ascore([{"completion": "abc"}])))
        except RuntimeError as exc:
            got.append(str(exc))

    engine.submit([{"completion": "a"}])[0].add_done_callback(callback)
    outcome = outcome_in_thread(lambda: [r.reward for r in engine.score([{"completion": "ab"}])])
    assert outcome == [[2.0]] and outcome_in_thread(engine.close) == [None]
    assert len(got) == 1 and "driver would wait for itself" in got[0]


def test_ascore_in_a_second_loop_on_the_hosting_thread_raises_rather_than_hangs() -> None:
    """The engine hosted on a loop that ran and stopped (not closed): `score` on that thread
    raises (nothing drives the pool), `asyncio.run(engine.ascore(...))` there hung."""
    engine = Engine(PLAIN, workers=1)
    loop = asyncio.new_event_loop()
    refused: list = []

    async def first() -> list:
        engine.host(asyncio.get_running_loop())
        return [r.reward for r in await engine.ascore([{"completion": "a"}])]

    def scenario() -> object:
        assert loop.run_until_complete(first()) == [1.0]
        try:
            engine.score([{"completion": "abc"}])
        except RuntimeError as exc:
            refused.append(str(exc))
        return asyncio.run(engine.ascore([{"completion": "ab"}]))

    try:
        outcome = outcome_in_thread(scenario, timeout=10)
        assert refused and "waits for its results" in refused[0]  # score: refused, as it is
        assert len(outcome) == 1 and isinstance(outcome[0], RuntimeError), outcome  # was: []
    finally:
        outcome_in_thread(engine.close, timeout=10)
        time.sleep(0.2)
        loop.close()


def test_ascore_on_the_hosting_thread_before_its_loop_runs_raises_rather_than_hangs() -> None:
    """`Engine.host(loop)` before the loop runs (as documented), then a coroutine on
    another loop of that thread: `score` raises there, `ascore` hung."""
    engine = Engine(PLAIN, workers=1)
    loop = asyncio.new_event_loop()

    def scenario() -> object:
        engine.host(loop)
        return asyncio.run(engine.ascore([{"completion": "ab"}]))

    try:
        outcome = outcome_in_thread(scenario, timeout=10)
        assert len(outcome) == 1 and isinstance(outcome[0], RuntimeError), outcome  # was: []
    finally:
        outcome_in_thread(engine.close, timeout=10)
        loop.close()


# -- what held ----------------------------------------------------------------------------


def test_after_a_close_in_a_callback_its_thread_may_score_and_ascore_again() -> None:
    engine = Engine(PLAIN, workers=1)
    got: list = []
    done = threading.Event()

    def callback(_: object) -> None:
        try:
            engine.close()
            got.append([r.reward for r in asyncio.run(engine.ascore([{"completion": "abc"}]))])
            got.append([r.reward for r in engine.score([{"completion": "abcd"}])])
            with engine:
                engine.start()
            got.append("started")
        except BaseException as exc:
            got.append(exc)
        done.set()

    try:
        engine.submit([{"completion": "a"}])[0].add_done_callback(callback)
        assert done.wait(30)
        assert got == [[3.0], [4.0], "started"]
        later = outcome_in_thread(lambda: [r.reward for r in engine.score([{"completion": "ab"}])])
        assert later == [[2.0]] and engine.admitted == 0
    finally:
        assert outcome_in_thread(engine.close) == [None]


def test_every_waiting_call_in_a_callback_is_refused_and_the_engine_goes_on() -> None:
    engine = Engine(PLAIN, workers=1)
    got: list = []
    done = threading.Event()

    async def via_asubmit() -> object:
        return await engine.asubmit([{"completion": "x"}])

    calls = {
        "score": lambda: engine.score([{"completion": "x"}]),
        "iter_score": lambda: list(engine.iter_score([{"completion": "x"}])),
        "start": engine.start,
        "ascore": lambda: asyncio.run(engine.ascore([{"completion": "x"}])),
        "asubmit": lambda: asyncio.run(via_asubmit()),
        "wait_for": lambda: asyncio.run(asyncio.wait_for(engine.ascore([{"completion": "x"}]), 1)),
    }

    def callback(_: object) -> None:
        for name, call in calls.items():
            try:
                call()
                got.append((name, "returned"))
            except RuntimeError as exc:
                got.append((name, "driver would wait for itself" in str(exc)))
        done.set()

    try:
        engine.submit([{"completion": "a"}])[0].add_done_callback(callback)
        assert done.wait(30)
        assert got == [(name, True) for name in calls]
        later = outcome_in_thread(lambda: [r.reward for r in engine.score([{"completion": "ab"}])])
        assert later == [[2.0]] and engine.admitted == 0
    finally:
        assert outcome_in_thread(engine.close) == [None]


def _rewards(results: list) -> list[float]:
    return [r.reward for r in results]


@pytest.mark.parametrize("kind", ["asyncio", "uvloop"])
def test_run_until_complete_on_the_hosting_loop_before_and_after_it_ran(kind: str) -> None:
    """The hosting loop itself, run piecemeal (`run_until_complete`) on its thread: `ascore`
    there works every time, before it ever ran and after it stopped."""
    if kind == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    engine = Engine(PLAIN, workers=1)

    def scenario() -> object:
        engine.host(loop)
        got = []
        for text in ("a", "ab", "abc"):
            got.append(_rewards(loop.run_until_complete(engine.ascore([{"completion": text}]))))
        return got

    try:
        assert outcome_in_thread(scenario, timeout=60) == [[[1.0], [2.0], [3.0]]]
    finally:
        assert outcome_in_thread(engine.close, timeout=30) == [None]
        loop.close()


def test_after_the_hosting_loop_closed_its_thread_may_ascore_in_a_new_loop() -> None:
    engine = Engine(PLAIN, workers=1)

    def scenario() -> object:
        async def first() -> list:
            engine.host(asyncio.get_running_loop())
            return _rewards(await engine.ascore([{"completion": "a"}]))

        one = asyncio.run(first())  # closes the hosting loop
        two = _rewards(asyncio.run(engine.ascore([{"completion": "ab"}])))
        return one, two

    try:
        assert outcome_in_thread(scenario, timeout=60) == [([1.0], [2.0])]
    finally:
        assert outcome_in_thread(engine.close, timeout=30) == [None]


def test_a_thread_started_from_the_hosting_loop_may_ascore_in_its_own_loop() -> None:
    engine = Engine(PLAIN, workers=1)

    async def main() -> list:
        engine.host(asyncio.get_running_loop())
        results = await asyncio.to_thread(
            lambda: asyncio.run(engine.ascore([{"completion": "abc"}]))
        )
        engine.close()
        return _rewards(results)

    assert outcome_in_thread(lambda: asyncio.run(main()), timeout=60) == [[3.0]]


def test_the_hosting_thread_may_ascore_in_a_loop_of_its_own_while_another_runs_the_host() -> None:
    """`host` on this thread, the loop run by another: this thread is not what drives it, and
    its own loop may await results (as `score` may)."""
    engine = Engine(PLAIN, workers=1)
    loop = asyncio.new_event_loop()

    def scenario() -> object:
        engine.host(loop)
        runner = threading.Thread(target=loop.run_forever, daemon=True)
        runner.start()
        asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop).result(timeout=30)
        return _rewards(asyncio.run(engine.ascore([{"completion": "ab"}]))), runner

    try:
        outcome = outcome_in_thread(scenario, timeout=60)
        assert len(outcome) == 1 and outcome[0][0] == [2.0], outcome
    finally:
        asyncio.run_coroutine_threadsafe(asyncio.to_thread(engine.close), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        if outcome:
            outcome[0][1].join(30)
        loop.close()


@pytest.mark.parametrize("looked", [True, False], ids=["after-a-look", "no-look"])
def test_the_thread_that_ran_the_hosting_loop_is_refused_whether_or_not_a_look_saw_it(
    looked: bool,
) -> None:
    """helper-70: `host` on thread H, the loop run (then stopped) by thread R. `_runner` was
    set only by a look: if the engine was used while R ran the loop, R's
    `asyncio.run(engine.ascore(...))` raised; if not, it hung (nothing runs the loop)."""
    engine = Engine(PLAIN, workers=1)
    loop = asyncio.new_event_loop()
    engine.host(loop)

    def runner() -> object:
        if looked:
            loop.run_until_complete(engine.ascore([{"completion": "a"}]))
        else:
            loop.run_until_complete(asyncio.sleep(0))
        return asyncio.run(engine.ascore([{"completion": "ab"}]))

    try:
        outcome = outcome_in_thread(runner, timeout=10)
        assert len(outcome) == 1 and isinstance(outcome[0], RuntimeError), outcome
    finally:
        outcome_in_thread(engine.close, timeout=10)
        time.sleep(0.2)
        loop.close()


def test_an_ascore_of_another_thread_in_flight_when_the_hosting_loop_closes_is_answered() -> None:
    """helper-70: once the hosting loop is closed, a thread takes over what is in flight; an
    `ascore` awaited in another thread's loop waited for a next call of the engine (forever,
    if none came): nothing looked for the orphaned host while it awaited. It looks now, every
    tenth of a second, as a thread waiting in `score` does."""
    engine = Engine(PLAIN, workers=1)
    begun = threading.Event()
    result: list = []

    def other() -> None:
        async def wait() -> list:
            future = engine.asubmit([{"completion": "sleep 0.5"}])
            begun.set()
            return _rewards(await future)

        try:
            result.append(asyncio.run(wait()))
        except BaseException as exc:
            result.append(exc)

    def scenario() -> object:
        loop = asyncio.new_event_loop()
        engine.host(loop)
        loop.run_until_complete(engine.ascore([{"completion": "a"}]))  # the pool is up
        thread = threading.Thread(target=other, daemon=True)

        async def start_other() -> None:
            thread.start()
            await asyncio.to_thread(begun.wait, 10)
            await asyncio.sleep(0.1)  # its sample handed to a worker from this loop

        loop.run_until_complete(start_other())
        loop.close()  # as `asyncio.run` ends: the sample is in flight
        thread.join(5)
        return list(result)

    try:
        assert outcome_in_thread(scenario, timeout=20) == [[[9.0]]]  # main: [[]]
    finally:
        outcome_in_thread(engine.close, timeout=10)
        time.sleep(0.2)


def _loop_in_thread() -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    """A loop running in a thread of its own."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    return loop, thread


def _end_loop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    """Stop a `_loop_in_thread` and close it."""
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def _hosted_in_thread(engine: Engine) -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    """A loop running in a thread of its own, hosting `engine` (as a server's does)."""
    loop, thread = _loop_in_thread()

    async def hosting() -> None:
        engine.host(asyncio.get_running_loop())

    asyncio.run_coroutine_threadsafe(hosting(), loop).result(10)
    return loop, thread


def _stop_hosted(engine: Engine, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    """Close `engine` from its hosting loop's side, then stop and close that loop."""
    asyncio.run_coroutine_threadsafe(asyncio.to_thread(engine.close), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(60)
    loop.close()


def _counting_looks(engine: Engine) -> list[int]:
    """Count the looks for a missing driver (`take_over_if_orphaned`) in the list returned."""
    looks = [0]
    real = engine.front.take_over_if_orphaned

    def counting() -> bool:
        looks[0] += 1
        return real()

    engine.front.take_over_if_orphaned = counting  # type: ignore[method-assign]
    return looks


def test_many_ascores_pending_on_another_loop_cost_one_look_a_tenth_of_a_second() -> None:
    """helper-71: e57cfa8's `_look_while_pending` arms a timer per `asubmit` from a loop other
    than the hosting one, each calling `take_over_if_orphaned` (taking the front's `_lock`,
    which the hosting loop's `_step` holds) every 0.1 s. 5,000 pending per-sample calls
    (a trainer awaiting a batch one sample a call) make ~50,000 looks a second and ~18% of
    a core on that loop doing nothing; 50,000 would saturate it. One look per loop (as one
    `_Stream.wait` per thread) finds a closed host as soon."""
    engine = Engine(PLAIN, workers=1)
    host, runner = _hosted_in_thread(engine)
    looks = _counting_looks(engine)

    async def main() -> int:
        await engine.ascore([{"completion": "a"}])  # the pool is up
        futures = [engine.asubmit([{"completion": "sleep 3"}]) for _ in range(5000)]
        await asyncio.sleep(0.3)
        before = looks[0]
        await asyncio.sleep(1.0)
        counted = looks[0] - before
        for future in futures:
            future.cancel()
        await asyncio.sleep(0.3)
        return counted

    try:
        outcome = outcome_in_thread(lambda: asyncio.run(main()), timeout=60)
        assert len(outcome) == 1 and isinstance(outcome[0], int), outcome
        assert 5 <= outcome[0] <= 50  # main: ~48,000
    finally:
        _stop_hosted(engine, host, runner)


def _fails_once(real: Callable[[], T]) -> tuple[Callable[[], T], list[int]]:
    """`real`, but its first call fails as one with no file descriptor left does; and the
    count of the calls so far."""
    calls = [0]

    def call() -> T:
        calls[0] += 1
        if calls[0] == 1:
            raise OSError(24, "Too many open files")  # e.g. `_start_driver`'s os.pipe
        return real()

    return call, calls


def _answered_after_its_host_closes(engine: Engine, first: str) -> list:
    """On a loop of another thread: `first` scored, then a sample in flight from the
    hosting loop (`_hosted_in_thread`) when that loop closes; its rewards, once answered
    (empty if it hangs)."""
    host, host_thread = _hosted_in_thread(engine)

    async def other() -> list:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: None)
        await engine.ascore([{"completion": first}])
        future = engine.asubmit([{"completion": "sleep 0.5"}])
        await asyncio.sleep(0.1)  # its sample is in flight from the hosting loop
        host.call_soon_threadsafe(host.stop)
        await asyncio.to_thread(host_thread.join, 5)
        host.close()  # as `asyncio.run` ends: the sample in flight
        return _rewards(await future)

    return outcome_in_thread(lambda: asyncio.run(other()), timeout=10)


def _no_descriptor() -> None:
    raise OSError(24, "Too many open files")


def _close_that_cannot_restart(
    monkeypatch: pytest.MonkeyPatch, engine: Engine, meanwhile: Callable[[], None]
) -> None:
    """Close `engine` while `meanwhile()` opens a call, with no file descriptor left for the
    driver that the close then starts for it (the close raises that); descriptors again
    right after (a waiting caller may look at once)."""
    front = engine.front
    close_pool = front._close_pool

    def opened_meanwhile() -> None:
        meanwhile()
        close_pool()

    monkeypatch.setattr(front, "_close_pool", opened_meanwhile)
    monkeypatch.setattr(front, "_start_driver", _fails_once(front._start_driver)[0])
    (error,) = outcome_in_thread(engine.close, timeout=10)
    assert isinstance(error, OSError)
    monkeypatch.undo()


def test_a_look_that_raises_once_does_not_end_the_looks_of_its_loop_for_good() -> None:
    """helper-72: `_Handover._look_again` sets `_look = None` only when it stops on its own; a
    `look()` that raises (the loop's exception handler logs it) ends the chain with `_look`
    still set, so `look_while_awaited` never arms another for that (engine, loop): every later
    `ascore` awaited there while the hosting loop closes waits for a next call of the engine,
    forever if none comes (Engine.host: "within a tenth of a second for ... awaiting `ascore`
    on another loop"). e57cfa8's timer per call lost only the calls pending at that look."""
    engine = Engine(PLAIN, workers=1)
    look, looks = _fails_once(engine.front.take_over_if_orphaned)
    engine.front.take_over_if_orphaned = look  # type: ignore[method-assign]
    try:
        outcome = _answered_after_its_host_closes(engine, "sleep 0.3")  # its look raises once
        assert looks[0] > 1
        assert outcome == [[9.0]], outcome  # main: [] - hangs
    finally:
        outcome_in_thread(engine.close, timeout=10)
        time.sleep(0.2)


def test_a_take_over_that_fails_to_start_its_driver_is_tried_again_at_the_next_look() -> None:
    """Known since helper-72 (session 17): `_take_over` let go of the closed hosting loop
    before it started the thread that takes over; when that start failed (no file descriptor
    left for its pipe), nothing was left to take over, and the runs in flight waited
    forever. Now the loop is let go once the thread runs: the next look tries again."""
    engine = Engine(PLAIN, workers=1)
    start, starts = _fails_once(engine.front._start_driver)
    engine.front._start_driver = start  # type: ignore[method-assign]
    try:
        outcome = _answered_after_its_host_closes(engine, "a")  # the pool is up
        assert starts[0] == 2
        assert outcome == [[9.0]], outcome  # main: [] - hangs
    finally:
        outcome_in_thread(engine.close, timeout=10)
        time.sleep(0.2)


def test_a_driver_thread_that_cannot_start_leaves_no_pipe_and_the_next_call_starts_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process out of threads: the call that needed a driver fails, its wake-up pipe is
    closed (not one leaked per call), and the next call, threads back, starts a driver.
    Was: the thread that never started was taken for the driver, and every later call
    waited for it forever."""

    class NoThread(threading.Thread):
        def start(self) -> None:
            raise RuntimeError("can't start new thread")

    class FrontThreading:  # the front's `threading`, whose threads cannot start
        Thread = NoThread

        def __getattr__(self, name: str) -> object:
            return getattr(threading, name)

    with Engine(PLAIN, workers=1) as engine:
        engine.score([{"completion": "a"}])  # the pool is up
        engine.front.close()  # the driver gone: the next call starts one
        monkeypatch.setattr(rewardsmith.engine._front, "threading", FrontThreading())
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(3):
            (error,) = outcome_in_thread(lambda: engine.score([{"completion": "a"}]), timeout=10)
            assert isinstance(error, RuntimeError), error  # main: hangs from the second
        assert len(os.listdir("/proc/self/fd")) == before
        monkeypatch.undo()
        outcome = outcome_in_thread(lambda: engine.score([{"completion": "abc"}]), timeout=10)
        assert [_rewards(result) for result in outcome] == [[3.0]]


class _FrontThreading:
    """The front's `threading`, with `Thread` or `Event` replaced (the rest as it is)."""

    def __init__(
        self,
        thread: type[threading.Thread] = threading.Thread,
        event: type[threading.Event] = threading.Event,
    ) -> None:
        self.Thread = thread
        self.Event = event

    def __getattr__(self, name: str) -> object:
        return getattr(threading, name)


def test_an_interrupt_out_of_a_driver_start_leaves_the_running_driver_its_pipe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-77: `Thread.start` may raise once its thread runs (Ctrl-C in its wait for the
    thread). b1edd11 closed the pipe then, which the running driver still owned: the driver
    closed the same numbers again later, by then another file's (here a pipe's)."""
    gate = threading.Event()

    class LateInterrupt(threading.Thread):
        def start(self) -> None:
            super().start()
            raise KeyboardInterrupt

    engine = Engine(PLAIN, workers=1)
    make_pool = engine.front._make_pool

    def held_pool() -> object:
        gate.wait(5)  # the driver waits here while the interrupt comes and goes
        return make_pool()

    engine.front._make_pool = held_pool  # type: ignore[method-assign]
    monkeypatch.setattr(rewardsmith.engine._front, "threading", _FrontThreading(LateInterrupt))
    try:
        with pytest.raises(KeyboardInterrupt):
            engine.submit([{"completion": "a"}])
        monkeypatch.undo()
        other_r, other_w = os.pipe()  # the lowest numbers free: those closed, if they were
        gate.set()
        assert _rewards(engine.score([{"completion": "abc"}])) == [3.0]
        assert os.write(other_w, b"x") == 1  # b1edd11: EBADF
        os.close(other_r)
        os.close(other_w)
    finally:
        gate.set()
        outcome_in_thread(engine.close, timeout=10)


@pytest.mark.parametrize("limit", [None, 1])
def test_a_call_whose_take_over_fails_queues_nothing_and_the_next_one_takes_over(
    limit: int | None,
) -> None:
    """helper-77: `_hand_over` queued and counted a call's samples before the take-over of
    a closed hosting loop, so a call that failed there still scored later, and with a queue
    limit the next calls got `QueueFull` before any take-over: the runs in flight waited
    forever (with a limit of 1, even with no failure). Now the take-over comes first."""
    engine = Engine(PLAIN, workers=1, max_queue_samples=limit)
    engine.front._start_driver = _fails_once(engine.front._start_driver)[0]  # type: ignore[method-assign]
    host, host_thread = _hosted_in_thread(engine)
    try:
        engine.score([{"completion": "a"}])  # the pool is up
        (in_flight,) = engine.submit([{"completion": "sleep 0.3"}])
        time.sleep(0.1)
        host.call_soon_threadsafe(host.stop)
        host_thread.join(5)
        host.close()
        with pytest.raises(OSError):
            engine.submit([{"completion": "ab"}])
        assert engine.front.admitted == 1  # the one in flight only (main: 2)
        try:
            engine.submit([{"completion": "abc"}])
        except QueueFull:
            assert limit == 1
        assert in_flight.result(10).reward == 9.0  # main with a limit: never
    finally:
        outcome_in_thread(engine.close, timeout=10)


def test_an_engine_closed_after_a_driver_thread_can_be_hosted_on_a_loop() -> None:
    """helper-77: `close` wrote a wake-up for the driver thread, which ended without reading
    it, and `_woken` stayed set: hosted on a loop afterwards, the first call never woke it."""
    engine = Engine(PLAIN, workers=1)
    assert _rewards(engine.score([{"completion": "a"}])) == [1.0]
    engine.close()
    host, host_thread = _hosted_in_thread(engine)
    try:
        outcome = outcome_in_thread(lambda: engine.score([{"completion": "ab"}]), timeout=10)
        assert [_rewards(result) for result in outcome] == [[2.0]]  # main: [] - hangs
    finally:
        _stop_hosted(engine, host, host_thread)


def test_a_close_that_cannot_start_a_driver_for_runs_opened_meanwhile_still_fails_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-77: a `close` whose last step (a driver for the runs opened while it closed)
    raised never told the runs it had failed: their futures waited forever. Now they are
    told first, then it raises; the next call starts a driver for the others."""
    engine = Engine(PLAIN, workers=1)
    engine.score([{"completion": "a"}])
    (in_flight,) = engine.submit([{"completion": "sleep 0.5"}])
    time.sleep(0.1)
    late: list = []

    def submit_meanwhile() -> None:
        caller = threading.Thread(target=lambda: late.extend(engine.submit([{"completion": "ab"}])))
        caller.start()
        caller.join()

    _close_that_cannot_restart(monkeypatch, engine, submit_meanwhile)
    try:
        assert isinstance(in_flight.exception(5), EngineClosed)  # main: never told
        assert _rewards(engine.score([{"completion": "abc"}])) == [3.0]
        assert late[0].result(5).reward == 2.0
    finally:
        outcome_in_thread(engine.close, timeout=10)


def test_an_interrupt_before_the_driver_thread_runs_leaves_no_driver_to_wait_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-78: cb91633 let go of a driver that could not start only on `Exception`; an
    interrupt before its thread existed left the Thread as the driver, and every later
    call, and `close`, waited for it forever."""

    class EarlyInterrupt(threading.Thread):
        def start(self) -> None:
            raise KeyboardInterrupt

    engine = Engine(PLAIN, workers=1)
    monkeypatch.setattr(rewardsmith.engine._front, "threading", _FrontThreading(EarlyInterrupt))
    with pytest.raises(KeyboardInterrupt):
        engine.submit([{"completion": "a"}])
    monkeypatch.undo()
    try:
        outcome = outcome_in_thread(lambda: engine.score([{"completion": "ab"}]), timeout=10)
        assert [_rewards(result) for result in outcome] == [[2.0]]  # cb91633: [] - hangs
    finally:
        outcome_in_thread(engine.close, timeout=10)


def test_a_close_interrupted_midway_tells_the_runs_it_failed_and_takes_calls_again() -> None:
    """helper-78: an interrupt in `close` (Ctrl-C while it joins the workers) left the
    engine closing for good: the runs it had failed were never told, and every later call
    waited."""
    engine = Engine(PLAIN, workers=1)
    front = engine.front
    engine.score([{"completion": "a"}])
    (in_flight,) = engine.submit([{"completion": "sleep 0.5"}])
    time.sleep(0.1)
    close_pool = front._close_pool

    def interrupted() -> None:
        close_pool()
        raise KeyboardInterrupt

    front._close_pool = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        engine.close()
    del front._close_pool
    try:
        assert isinstance(in_flight.exception(5), EngineClosed)  # main: never told
        outcome = outcome_in_thread(lambda: engine.score([{"completion": "ab"}]), timeout=10)
        assert [_rewards(result) for result in outcome] == [[2.0]]  # main: [] - hangs
    finally:
        outcome_in_thread(engine.close, timeout=10)


def _host_closed_unseen(engine: Engine) -> Any:
    """Host `engine` on a loop (its pool up), then close that loop, as if just now: the
    front does not see it gone (the check came first) and wakes it. The host."""
    host, host_thread = _hosted_in_thread(engine)
    engine.score([{"completion": "a"}])
    hosted = engine.front._host
    assert hosted is not None
    host.call_soon_threadsafe(host.stop)
    host_thread.join(5)
    host.close()
    hosted.__class__ = type("NotYetGone", (type(hosted),), {"gone": False})
    return hosted


def test_a_call_that_finds_its_hosting_loop_closed_as_it_wakes_it_is_taken_over() -> None:
    """helper-78: a hosting loop closed between the check that it is gone and its wake-up
    made the call raise `RuntimeError: Event loop is closed`, its samples queued and
    counted all the same. Now a thread takes over there and then."""
    engine = Engine(PLAIN, workers=1)
    try:
        _host_closed_unseen(engine)
        outcome = outcome_in_thread(lambda: engine.score([{"completion": "ab"}]), timeout=10)
        assert [_rewards(result) for result in outcome] == [[2.0]]  # main: RuntimeError
        assert engine.front.admitted == 0
    finally:
        outcome_in_thread(engine.close, timeout=10)


def test_a_caller_waiting_when_no_driver_could_start_gets_one_at_its_next_look(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-78: a `close` whose last driver start failed (no file descriptor) left a
    `score` opened during the close waiting: its looks only took over a closed hosting
    loop, never started a missing driver. Now they do, once one can start."""
    engine = Engine(PLAIN, workers=1)
    engine.score([{"completion": "a"}])
    late: list = []

    def score_meanwhile() -> None:
        caller = threading.Thread(
            target=lambda: late.append(
                outcome_in_thread(lambda: engine.score([{"completion": "ab"}]), 10)
            )
        )
        caller.start()
        time.sleep(0.2)  # its samples queued, it waits
        late.append(caller)

    _close_that_cannot_restart(monkeypatch, engine, score_meanwhile)
    try:
        late[0].join(10)
        assert [_rewards(result) for result in late[1]] == [[2.0]]  # main: [] - waits
    finally:
        outcome_in_thread(engine.close, timeout=10)


def test_a_close_interrupted_in_its_join_of_a_busy_driver_starts_no_second_one() -> None:
    """helper-79: 552fbc8's `_reopen` (after a `close` interrupted in its join of the driver)
    started a driver for the runs opened meanwhile while the first still ran: two threads
    polled one pool, which is not safe. Now the first goes on, alone."""
    engine = Engine(PLAIN, workers=1)
    front = engine.front
    pool = front.pool
    polls = {"now": 0, "most": 0}
    poll = pool.poll

    def slow_poll(max_wait_s: float = 0.1, wake: int | None = None) -> list:
        polls["now"] += 1
        polls["most"] = max(polls["most"], polls["now"])
        try:
            time.sleep(0.3)  # a poll that does not end at the wake-up
            return poll(max_wait_s, wake)
        finally:
            polls["now"] -= 1

    pool.poll = slow_poll  # type: ignore[method-assign]
    try:
        (first,) = engine.submit([{"completion": "a"}])
        time.sleep(0.1)  # the driver in its slow poll
        driver = front._thread
        assert driver is not None
        (second,) = engine.submit([{"completion": "ab"}])

        def interrupted(timeout: float | None = None) -> None:
            raise KeyboardInterrupt  # Ctrl-C while `close` joins the driver

        driver.join = interrupted  # type: ignore[method-assign]
        with pytest.raises(KeyboardInterrupt):
            engine.close()
        del driver.join
        assert front._thread is driver  # 552fbc8: a second driver
        assert [first.result(10).reward, second.result(10).reward] == [1.0, 2.0]
        assert polls["most"] == 1
    finally:
        outcome_in_thread(engine.close, timeout=10)


def test_a_close_interrupted_after_its_driver_ended_drives_the_runs_in_flight() -> None:
    """helper-79: a `close` interrupted once its driver had ended, before it failed the runs,
    left them neither failed nor driven (their samples were in the pool, none in the inbox):
    a `score` waited until some other call came."""
    engine = Engine(PLAIN, workers=1)
    front = engine.front
    engine.score([{"completion": "a"}])  # the pool is up
    (in_flight,) = engine.submit([{"completion": "sleep 0.3"}])
    time.sleep(0.1)  # its task runs in the pool
    driver = front._thread
    assert driver is not None
    join = driver.join

    def interrupted(timeout: float | None = None) -> None:
        join(timeout)
        raise KeyboardInterrupt  # Ctrl-C as the join returns

    driver.join = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        engine.close()
    try:
        assert in_flight.result(10).reward == 9.0  # 552fbc8: waits for another call
    finally:
        outcome_in_thread(engine.close, timeout=10)


def test_a_call_whose_wake_of_a_closed_loop_and_take_over_both_fail_queues_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-79: when the hosting loop closed just as a call woke it, and the take-over
    could not start a thread either, the call raised with its samples queued and counted
    (scored later for nobody, holding the queue's room meanwhile)."""
    engine = Engine(PLAIN, workers=1, max_queue_samples=4)
    try:
        hosted = _host_closed_unseen(engine)
        real = engine.front._start_driver

        monkeypatch.setattr(engine.front, "_start_driver", _no_descriptor)
        with pytest.raises(OSError):
            engine.submit([{"completion": "abc"}] * 3)
        assert engine.front.admitted == 0  # 552fbc8: 3
        monkeypatch.setattr(engine.front, "_start_driver", real)
        hosted.__class__ = type(hosted).__mro__[1]
        assert _rewards(engine.score([{"completion": "ab"}] * 4)) == [2.0] * 4
    finally:
        outcome_in_thread(engine.close, timeout=10)


def _ascore_queued_on(
    engine: Engine, loop: asyncio.AbstractEventLoop, waiting: list
) -> Callable[[], None]:
    """What opens an `ascore` of "ab" on `loop` (of another thread; its future goes to
    `waiting`), and returns once the call is queued."""

    def ascore() -> None:
        call = engine.ascore([{"completion": "ab"}])
        waiting.append(asyncio.run_coroutine_threadsafe(call, loop))
        deadline = time.monotonic() + 5
        while not engine.front._inbox and time.monotonic() < deadline:
            time.sleep(0.01)  # queued while the close runs

    return ascore


def test_an_ascore_waiting_when_no_driver_could_start_gets_one_at_its_next_look(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-79: only an `ascore` on an engine hosted by another loop looked now and then;
    on one driven by a thread, after a `close` whose last driver start failed, it waited for
    another call. Now it looks, as a thread waiting in `score` does."""
    engine = Engine(PLAIN, workers=1)
    engine.score([{"completion": "a"}])
    other, runner = _loop_in_thread()
    waiting: list = []
    _close_that_cannot_restart(monkeypatch, engine, _ascore_queued_on(engine, other, waiting))
    try:
        assert _rewards(waiting[0].result(10)) == [2.0]  # 552fbc8: waits
    finally:
        outcome_in_thread(engine.close, timeout=10)
        _end_loop(other, runner)


def _interrupted_once() -> type[threading.Event]:
    """An `Event` whose first wait, of any of its kind, raises `KeyboardInterrupt` (Ctrl-C
    while `close` waits for the hosting loop)."""
    interrupted = [False]

    class InterruptedOnce(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            if not interrupted[0]:
                interrupted[0] = True
                raise KeyboardInterrupt
            return super().wait(timeout)

    return InterruptedOnce


class _TimedPool:
    """A pool an event loop can drive, in process: a task whose sample index is 2 or more
    ends 0.3 s after it came, the others at the next look."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, Any]] = []
        self.closing = None

    @property
    def busy(self) -> int:
        return len(self.pending)

    @property
    def saturated(self) -> bool:
        return False

    def submit(self, tasks: list) -> None:
        now = time.monotonic()
        self.pending += [(now + (0.3 if task.key[1] >= 2 else 0.0), task) for task in tasks]

    def poll(self, max_wait_s: float = 0.1, wake: int | None = None) -> list:
        time.sleep(0.01)
        now = time.monotonic()
        done = [task for due, task in self.pending if due <= now]
        self.pending = [(due, task) for due, task in self.pending if due > now]
        return [(task.key, Score.ok(float(len(task.sample.text)))) for task in done]

    def drop(self, match: Callable[[Any], bool]) -> None:
        self.pending = [(due, task) for due, task in self.pending if not match(task.key)]

    def close(self) -> None:
        pass

    def watched(self) -> list[int]:
        return []

    def next_look_s(self, max_wait_s: float) -> float:
        return 0.02


def test_a_close_interrupted_while_the_hosting_loop_is_mid_look_is_called_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-80: 045ab4a's `_reopen` (after a `close` interrupted in `host.stop()`) started a
    thread driver for the runs in flight while the hosting loop was still in a look (a slow
    result callback): both drove the pool, and the loop dropped a result the thread had
    given in its place. Now the stop is called off: the loop drives on, alone, and every
    result comes once, in order. (660428e held the interrupt until the loop stopped, and a
    loop that never could, a deadlock or a failing stop, made `close` hang: helper-81.)"""
    got: list = []

    class SlowSink:
        def scored(self, count: int) -> None:
            pass

        def result(self, index: int, result: Any) -> None:
            got.append((index, result.reward))
            if index == 0:
                time.sleep(0.8)  # on the loop, in its look

        def done(self, error: BaseException | None) -> None:
            got.append(("done", error))

    engine = Engine(PLAIN, workers=1)
    front = Front(engine.spec, _TimedPool)
    loop, runner = _loop_in_thread()

    async def hosting() -> None:
        front.host(asyncio.get_running_loop(), True)

    asyncio.run_coroutine_threadsafe(hosting(), loop).result(10)
    try:
        front.submit(SlowSink(), engine._prepare([{"completion": t} for t in ["a", "ab", "abc"]]))
        time.sleep(0.3)  # the loop is in the first result's callback
        monkeypatch.setattr(
            rewardsmith.engine._front, "threading", _FrontThreading(event=_interrupted_once())
        )
        with pytest.raises(KeyboardInterrupt):
            front.close()
        monkeypatch.undo()
        deadline = time.monotonic() + 10
        while not any(item[0] == "done" for item in got) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert got == [(0, 1.0), (1, 2.0), (2, 3.0), ("done", None)]  # 045ab4a: (1, 3.0)
    finally:
        outcome_in_thread(front.close, timeout=10)
        _end_loop(loop, runner)


class _Ignored:
    """A sink that keeps nothing."""

    def scored(self, count: int) -> None:
        pass

    def result(self, index: int, result: object) -> None:
        pass

    def done(self, error: BaseException | None) -> None:
        pass


def test_a_run_opened_with_nothing_added_while_the_engine_closes_starts_no_workers() -> None:
    """helper-80: 045ab4a's `_reopen` started a driver, and so a new pool of workers, for a
    run merely opened while the engine closed (an `iter_score` whose input had not yielded
    yet at shutdown)."""
    engine = Engine(PLAIN, workers=1)
    front = engine.front
    engine.score([{"completion": "a"}])
    close_pool = front._close_pool

    def opened_meanwhile() -> None:
        front.open(_Ignored())
        close_pool()

    front._close_pool = opened_meanwhile  # type: ignore[method-assign]
    engine.close()
    del front._close_pool
    assert front._thread is None and front._pool is None  # 045ab4a: a driver, a new pool


def _hosted_front() -> tuple[Front, asyncio.AbstractEventLoop, threading.Thread]:
    """A front on `_TimedPool`, hosted by a `_loop_in_thread`."""
    front = Front(Engine(PLAIN, workers=1).spec, _TimedPool)
    loop, runner = _loop_in_thread()

    async def hosting() -> None:
        front.host(asyncio.get_running_loop(), True)

    asyncio.run_coroutine_threadsafe(hosting(), loop).result(10)
    return front, loop, runner


def test_an_interrupt_gets_out_of_a_close_whose_hosting_loop_waits_for_the_closer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-81: 660428e held an interrupt of `close` until the hosting loop stopped; a loop
    in a callback that waits for the thread that closes (a lock it holds) never does, and
    Ctrl-C could no longer get out. Now it does, and the close is called off."""
    gate = threading.Event()
    got: list = []

    class WaitsForCloser(_Ignored):
        def result(self, index: int, result: object) -> None:
            got.append(index)
            gate.wait(5)  # on the loop, until the closer lets go

        def done(self, error: BaseException | None) -> None:
            got.append(("done", error))

    front, loop, runner = _hosted_front()
    try:
        front.submit(WaitsForCloser(), Engine(PLAIN, workers=1)._prepare([{"completion": "a"}]))
        time.sleep(0.2)  # the loop waits in the callback
        monkeypatch.setattr(
            rewardsmith.engine._front, "threading", _FrontThreading(event=_interrupted_once())
        )
        outcome = outcome_in_thread(front.close, timeout=3)
        monkeypatch.undo()
        gate.set()
        assert [type(each) for each in outcome] == [KeyboardInterrupt]  # 660428e: [] - hangs
        time.sleep(0.2)
        assert got == [0, ("done", None)]  # called off: the loop drove on
    finally:
        gate.set()
        outcome_in_thread(front.close, timeout=10)
        _end_loop(loop, runner)


def test_a_close_whose_hosted_stop_fails_raises_rather_than_spins() -> None:
    """helper-81: 660428e held whatever the wait for the loop's stop raised, and went round
    again: when the loop had stopped before it ran the stop, and stopping there raised, the
    close spun forever. It raises that error, as before."""
    front, loop, runner = _hosted_front()
    hosted = front._host
    assert hosted is not None
    try:
        loop.call_soon_threadsafe(time.sleep, 0.3)  # busy: the stop waits in line
        loop.call_soon_threadsafe(loop.stop)  # and the loop stops before it
        time.sleep(0.1)

        def fails() -> None:
            raise OSError(9, "Bad file descriptor")

        hosted._stop = fails  # type: ignore[method-assign]
        outcome = outcome_in_thread(front.close, timeout=5)
        assert [type(each) for each in outcome] == [OSError]  # 660428e: [] - spins
    finally:
        del hosted._stop
        runner.join(5)
        loop.close()


def _close_interrupted_then_used(
    monkeypatch: pytest.MonkeyPatch, engine: Engine, in_flight: Future
) -> None:
    """`engine.close()`, interrupted where the test set it to be (its patches undone after):
    the sample `in_flight` is still answered (or failed by the close), and a later call is."""
    (error,) = outcome_in_thread(engine.close, timeout=10)
    monkeypatch.undo()
    assert isinstance(error, KeyboardInterrupt)
    got = outcome_in_thread(lambda: in_flight.result(10).reward, timeout=15)
    assert got == [9.0] or isinstance(got[0], EngineClosed), got  # before: TimeoutError
    later = outcome_in_thread(lambda: _rewards(engine.score([{"completion": "ab"}])), 10)
    assert later == [[2.0]], later  # before: [] - hangs


def test_an_interrupt_as_close_hands_the_loop_its_stop_leaves_no_stopped_host_behind(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-82: `_Hosted.stop` queued `stop_there` outside the `try` that calls the
    stop off. Ctrl-C inside `call_soon_threadsafe`, once the callback is queued (in its
    wake-up write), left `called_off` unset: `_reopen` found the host not stopped yet, kept
    it and woke it; the loop then ran `stop_there` and stopped for good. The front stayed
    hosted by a stopped, open loop: every look did nothing (`_step`), nothing took over (the
    loop is not closed), and the run in flight and every later call waited forever."""
    engine = Engine(PLAIN, workers=1)
    host, host_thread = _hosted_in_thread(engine)
    try:
        engine.score([{"completion": "a"}])  # the pool is up
        (in_flight,) = engine.submit([{"completion": "sleep 0.3"}])
        time.sleep(0.1)
        host.call_soon_threadsafe(time.sleep, 0.3)  # the loop busy: the stop waits in line
        real = host.call_soon_threadsafe

        def interrupted_once_queued(callback: Any, *args: Any, **kwargs: Any) -> Any:
            handle = real(callback, *args, **kwargs)
            if getattr(callback, "__name__", "") == "stop_there":
                raise KeyboardInterrupt  # Ctrl-C in the wake-up write, the call queued
            return handle

        monkeypatch.setattr(host, "call_soon_threadsafe", interrupted_once_queued)
        _close_interrupted_then_used(monkeypatch, engine, in_flight)
    finally:
        outcome_in_thread(engine.close, timeout=10)
        _end_loop(host, host_thread)


def test_an_ascore_on_the_hosting_loop_during_a_close_that_cannot_restart_gets_a_driver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-82: `asubmit` armed the looks for a missing driver only if the front was
    driven elsewhere than the running loop as the call was made. An `ascore` on the hosting
    loop, made while a thread closes the engine (after the runs were failed), was not: the
    loop still hosted. The close ends hosting (`_reopen`) and its driver start for that call
    fails (no file descriptor): the close raises, and the `ascore` waited for a next call of
    the engine, forever if none came (a thread's `score` looks and starts one)."""
    engine = Engine(PLAIN, workers=1)
    host, host_thread = _hosted_in_thread(engine)
    waiting: list = []

    try:
        engine.score([{"completion": "a"}])  # the pool is up
        _close_that_cannot_restart(monkeypatch, engine, _ascore_queued_on(engine, host, waiting))
        assert engine.front._host is None  # no longer hosted
        outcome = outcome_in_thread(lambda: _rewards(waiting[0].result(10)), timeout=15)
        assert outcome == [[2.0]], outcome  # before: [TimeoutError()] - waits
    finally:
        outcome_in_thread(engine.close, timeout=10)
        _end_loop(host, host_thread)


def test_a_retry_after_a_close_in_a_result_callback_on_the_hosting_loop_leaves_calls_woken() -> (
    None
):
    """helper-82: a `submit` future's callback on the hosting loop closes the engine
    and scores again (a retry): the close ends hosting, and the retry starts a driver
    thread, which answers it and sleeps. When the callback ran as the look applied its
    commands (an invalid sample's result is ready at once), the look went on with the pool
    the close closed (`_step` did not check that its host was stopped meanwhile) and set
    `_saturated = pool.saturated`, True for a closed pool (`all([])`). The driver thread
    slept on its pipe, and `_hand_over` wakes it for no add to score while `_saturated`
    holds: every later `submit` or `ascore` waited forever."""
    engine = Engine(PLAIN, workers=1)
    retried: list = []

    def close_and_retry(_: object) -> None:
        assert threading.current_thread() is host_thread
        engine.close()  # on the hosting loop, in its look
        retried.append(_rewards(engine.score([{"completion": "abc"}])))  # a driver thread now

    host, host_thread = _hosted_in_thread(engine)
    try:
        engine.score([{"completion": "a"}])  # the pool is up
        host.call_soon_threadsafe(time.sleep, 0.3)  # its look comes after the callback is in
        (first,) = engine.submit([{}])  # invalid: answered as its add is applied, in the
        first.add_done_callback(close_and_retry)  # look, before that look polls the pool
        deadline = time.monotonic() + 20
        while not retried and time.monotonic() < deadline:
            time.sleep(0.05)
        assert retried == [[3.0]]
        time.sleep(0.2)  # the driver thread sleeps; the loop's look has ended
        (later,) = engine.submit([{"completion": "ab"}])  # (a `score` ends its run apart,
        outcome = outcome_in_thread(lambda: later.result(10).reward, timeout=15)  # which wakes)
        assert outcome == [2.0], outcome  # before: [TimeoutError()]
    finally:
        outcome_in_thread(engine.close, timeout=10)
        _end_loop(host, host_thread)


def test_an_engine_closed_while_its_workers_were_all_busy_can_be_hosted_on_a_loop() -> None:
    """helper-82: helper-77's row (`_woken` left set by a close) with the other flag:
    a driver thread that last polled a saturated pool (every worker busy) left `_saturated`
    True as the close ended it, and neither `_close` nor `_reopen` cleared it. Hosted on a
    loop afterwards, an add to score did not wake the loop (`_hand_over`), which has no
    worker to watch and no timer: the first `submit` (or `ascore`) waited forever."""
    engine = Engine(PLAIN, workers=1)
    (busy,) = engine.submit([{"completion": "sleep 5"}])
    time.sleep(1.0)  # the one worker runs it: the driver saw the pool saturated
    assert outcome_in_thread(engine.close, timeout=10) == [None]
    assert isinstance(busy.exception(0), EngineClosed)
    host, host_thread = _hosted_in_thread(engine)
    try:
        (later,) = engine.submit([{"completion": "ab"}])
        outcome = outcome_in_thread(lambda: later.result(10).reward, timeout=15)
        assert outcome == [2.0], outcome  # before: [TimeoutError()]
    finally:
        outcome_in_thread(engine.close, timeout=10)
        _end_loop(host, host_thread)


class _OsWriteInterruptedOnce:
    """The front's `os`, whose first `write` raises `KeyboardInterrupt` before writing
    (Ctrl-C between `_woken = True` and the wake-up's write)."""

    def __init__(self) -> None:
        self.interrupted = False

    def write(self, fd: int, data: bytes) -> int:
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        return os.write(fd, data)

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)


@pytest.mark.parametrize("hosted", [False, True], ids=["thread", "hosted"])
def test_an_interrupt_before_a_call_wakes_the_driver_leaves_the_next_calls_answered(
    monkeypatch: pytest.MonkeyPatch, hosted: bool
) -> None:
    """helper-82: `_hand_over` sets `_woken = True`, then wakes the driver: a byte on
    its pipe, or a look on the hosting loop. Ctrl-C in between (only `RuntimeError` was
    caught there) left `_woken` set with no wake-up on its way: an idle driver slept for
    good, and every later call skipped its wake-up because `_woken` said one was pending.
    Every `submit`, `score` and `ascore` after it waited forever (until a `close`). The
    interrupted call's samples also stayed queued and counted, scored for nobody (the
    take-over path next to it undid them)."""
    engine = Engine(PLAIN, workers=1)
    host = host_thread = None
    if hosted:
        host, host_thread = _hosted_in_thread(engine)
    try:
        engine.score([{"completion": "a"}])  # the pool is up, the driver idle
        time.sleep(0.2)
        if hosted:
            hosted_front = engine.front._host
            assert hosted_front is not None

            def interrupted() -> None:
                raise KeyboardInterrupt  # Ctrl-C in `wake`, before the look is queued

            monkeypatch.setattr(hosted_front, "wake", interrupted)
        else:
            monkeypatch.setattr(rewardsmith.engine._front, "os", _OsWriteInterruptedOnce())
        with pytest.raises(KeyboardInterrupt):
            engine.submit([{"completion": "abcd"}])
        monkeypatch.undo()
        later = outcome_in_thread(lambda: _rewards(engine.score([{"completion": "ab"}])), 10)
        assert later == [[2.0]], later  # before: [] - hangs
    finally:
        outcome_in_thread(engine.close, timeout=10)
        if host is not None and host_thread is not None:
            _end_loop(host, host_thread)


def test_an_interrupt_as_close_wakes_its_driver_thread_does_not_leave_it_closing_for_good(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-82: `_close` set `_closing = True` and woke the driver thread before
    the `try` whose `finally` reopens the front. Ctrl-C there (before or in the wake-up's
    write) skipped `_reopen`: the engine stayed closing for good (helper-78's bug, at
    another point). The driver never drove again, no call started one, the run in flight
    was neither failed nor answered, and every later call waited forever."""
    engine = Engine(PLAIN, workers=1)
    engine.score([{"completion": "a"}])  # the pool is up
    (in_flight,) = engine.submit([{"completion": "sleep 0.3"}])
    time.sleep(0.1)
    monkeypatch.setattr(rewardsmith.engine._front, "os", _OsWriteInterruptedOnce())
    try:
        _close_interrupted_then_used(monkeypatch, engine, in_flight)
    finally:
        outcome_in_thread(engine.close, timeout=10)


class _OsWrittenThenInterrupted:
    """The front's `os`, whose first `write` writes, then raises `KeyboardInterrupt` (Ctrl-C
    during the wake-up's write: the byte is in the pipe, the interrupt is delivered as the
    call returns)."""

    def __init__(self) -> None:
        self.interrupted = False

    def write(self, fd: int, data: bytes) -> int:
        written = os.write(fd, data)
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        return written

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)


def _takes_while_idle(front: Any, seconds: float = 0.5) -> int:
    """How many times the driver thread takes its inbox in `seconds` (an idle driver sleeps
    on its pipe: none or one)."""
    takes = [0]
    real = front._take

    def counting(wake_r: int) -> Any:
        takes[0] += 1
        return real(wake_r)

    front._take = counting
    try:
        time.sleep(seconds)
    finally:
        del front._take
    return takes[0]


def test_an_interrupt_after_a_calls_wake_up_byte_is_written_leaves_no_spinning_driver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-84: 5360718's `_hand_over` undoes the call on any BaseException from the wake-up, and
    so sets `_woken = False` also when Ctrl-C came once the byte was written. The driver takes
    the inbox but drains its pipe only if `_woken` (`_take`): the byte stays, `_sleep`'s select
    (or `poll(wake=...)`) returns at once, for good: the idle driver spins a core until some
    later call happens to set `_woken` again. (e225450 kept `_woken` and the call: the driver
    drained the byte and answered.)"""
    engine = Engine(PLAIN, workers=1)
    front = engine.front
    try:
        engine.score([{"completion": "a"}])  # the pool is up, the driver idle
        time.sleep(0.2)
        monkeypatch.setattr(rewardsmith.engine._front, "os", _OsWrittenThenInterrupted())
        with pytest.raises(KeyboardInterrupt):
            engine.submit([{"completion": "abcd"}])
        monkeypatch.undo()
        assert front.admitted == 0  # the call was undone
        takes = _takes_while_idle(front)
        assert takes <= 3, takes  # 5360718: tens of thousands (a core)
    finally:
        outcome_in_thread(engine.close, timeout=10)


def test_a_close_interrupted_in_its_join_of_a_busy_driver_leaves_no_spinning_driver() -> None:
    """helper-84: `_close` writes the driver a wake-up byte (`_woken = True`); interrupted in its
    join while the driver is busy (a slow `submit` callback runs on it), `_reopen` clears
    `_woken` ("a wake-up written for the driver that ended is no more") though the driver did not
    end and never read the byte. It goes on (helper-79), answers, and then spins: `_take` no
    longer drains the pipe, select returns at once, for good (until the next call). Older than
    5360718 (since helper-79's `_reopen`); same cause as the row above."""
    engine = Engine(PLAIN, workers=1)
    front = engine.front
    engine.score([{"completion": "a"}])  # the pool is up
    (slow,) = engine.submit([{"completion": "ab"}])
    slow.add_done_callback(lambda _: time.sleep(0.5))  # on the driver thread
    time.sleep(0.2)  # the driver is in the callback
    driver = front._thread
    assert driver is not None

    def interrupted(timeout: float | None = None) -> None:
        raise KeyboardInterrupt  # Ctrl-C while `close` joins the driver

    driver.join = interrupted  # type: ignore[method-assign]
    try:
        with pytest.raises(KeyboardInterrupt):
            engine.close()
        del driver.join
        time.sleep(0.6)  # the callback is over: the driver is idle again
        assert front._thread is driver
        takes = _takes_while_idle(front)
        assert takes <= 3, takes  # 5360718: tens of thousands (a core)
    finally:
        outcome_in_thread(engine.close, timeout=10)


def test_an_interrupt_while_close_tells_its_failed_runs_leaves_none_of_them_untold() -> None:
    """helper-84: `close` tells the runs it failed in its `finally`, one by one (`run.sink.done`);
    the runs are already over and out of `_runs`. An interrupt in one of those calls (Ctrl-C in a
    `submit` future's done-callback, which runs on the closing thread, or in a loop's wake-up
    write of an `ascore` hand-over) skips the rest: their futures are never set, a `score`
    waiting on them loops forever (its looks see nothing waiting), an `ascore`'s look chain
    stops. Older than 5360718."""
    engine = Engine(PLAIN, workers=1)
    engine.score([{"completion": "a"}])  # the pool is up
    interrupted = [False]

    def interrupt_once(_: Future) -> None:
        if not interrupted[0]:
            interrupted[0] = True
            raise KeyboardInterrupt  # Ctrl-C in the first future's callback

    futures = [engine.submit([{"completion": "sleep 2"}])[0] for _ in range(3)]
    for future in futures:
        future.add_done_callback(interrupt_once)
    time.sleep(0.2)
    try:
        (error,) = outcome_in_thread(engine.close, timeout=10)
        assert isinstance(error, KeyboardInterrupt)
        outcomes = [outcome_in_thread(lambda f=f: f.exception(5), timeout=10) for f in futures]
        assert all(  # 5360718: two of them [TimeoutError()] - never set
            len(o) == 1 and isinstance(o[0], EngineClosed) for o in outcomes
        ), outcomes
    finally:
        outcome_in_thread(engine.close, timeout=10)


def test_a_close_and_retry_in_a_callback_of_a_failed_pool_start_keeps_the_new_pool() -> None:
    """helper-84: The driver thread whose pool failed to start fails its runs (`_fail_all`, telling
    their sinks: `submit` callbacks run there), then closes "its" pool (`_close_pool`). A
    callback that closes the engine and scores anew (a retry) lets this driver go and starts
    another, which makes a new pool; the old driver's `_close_pool` then closes that pool, under
    the new driver (two threads on one pool): the retry fails with a `ValueError` from the pool's
    innards, or "the worker pool is closed". (The hosted `_step` has the same shape: its
    `self._pool = None` forgets the new driver's pool, which no `close` then closes: by reading,
    not reproduced.) Older than 5360718."""
    engine = Engine(PLAIN, workers=1)
    front = engine.front
    make_pool = front._make_pool
    made = [0]

    def fails_first_after_a_while() -> Any:
        made[0] += 1
        if made[0] == 1:
            time.sleep(0.3)  # the callback is on by then
            raise RuntimeError("a reward worker failed to start")
        return make_pool()

    front._make_pool = fails_first_after_a_while  # type: ignore[method-assign]
    retried: list[Future] = []

    def close_and_retry(_: Future) -> None:
        engine.close()  # on the driver thread
        retried.extend(engine.submit([{"completion": "sleep 0.5"}]))
        time.sleep(0.2)  # the new driver is making its pool

    try:
        (first,) = engine.submit([{"completion": "a"}])
        first.add_done_callback(close_and_retry)
        assert "failed to start" in str(first.exception(10))
        deadline = time.monotonic() + 10
        while not retried and time.monotonic() < deadline:
            time.sleep(0.01)
        outcome = outcome_in_thread(lambda: retried[0].result(10).reward, timeout=15)
        later = outcome_in_thread(lambda: _rewards(engine.score([{"completion": "ab"}])), 15)
        assert (outcome, later) == ([9.0], [[2.0]])  # 5360718: [ValueError("_Worker(...) is
        # not in list")] (its pool closed under it), or "the worker pool is closed"
    finally:
        outcome_in_thread(engine.close, timeout=10)


def test_a_close_interrupted_while_it_stops_the_workers_leaves_none_running() -> None:
    """helper-84: `_close_pool` forgets the pool (`_pool = None`), then closes it;
    `TimeoutPool.close` waits up to a second for idle workers to exit before it kills the rest.
    Ctrl-C in that wait (the likeliest place for it in a `close`: it is where a close spends its
    time) skips every kill: a busy worker (here on a 5 s task; a hung one spins for good) is left
    running, and no later `close` can reach it (the front no longer holds the pool). Older than
    5360718; `close` says a second `close` closes an interrupted one."""
    engine = Engine(PLAIN, workers=2)
    front = engine.front
    engine.score([{"completion": "a"}])  # the pool is up
    engine.submit([{"completion": "sleep 0.2"}, {"completion": "sleep 5"}])
    time.sleep(0.6)  # the first worker idle again, the second on its 5 s task
    pool = front._pool
    assert pool is not None
    idle, busy = pool._workers
    assert not idle.outstanding and busy.outstanding
    join = idle.process.join

    def interrupted(timeout: float | None = None) -> None:
        del idle.process.join
        raise KeyboardInterrupt  # Ctrl-C while close waits for the idle worker to exit

    idle.process.join = interrupted
    busy_pid = busy.process.pid
    try:
        (error,) = outcome_in_thread(engine.close, timeout=10)
        assert isinstance(error, KeyboardInterrupt)
        assert outcome_in_thread(engine.close, timeout=10) == [None]  # the second close
        time.sleep(0.5)
        assert not _running(busy_pid)  # 5360718: runs (till its task ends; a hung one, never)
    finally:
        outcome_in_thread(engine.close, timeout=10)
        if _running(busy_pid):
            os.kill(busy_pid, 9)
        del join


def _running(pid: int) -> bool:
    """The process runs (not gone, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("queued", [False, True], ids=["before-queueing", "queued-unwoken"])
def test_an_ascore_whose_failure_hand_over_is_interrupted_is_answered_without_a_later_call(
    queued: bool,
) -> None:
    """helper-85: e20fbd4's `_Handover.call`, interrupted as it queues its batch (`_run`) on the
    loop, resets `_scheduled` and re-raises: "the next call schedules the batch". With no next
    call (the interrupted one was the last for that loop: here `close`, on the main thread, tells
    the one `ascore` of a loop of another thread that it failed), nothing ever runs the batch:
    the answer sits in `_calls` and the `ascore` waits forever (its loop's look chain stopped
    once the front had nothing waiting, and it only looks at the front anyway). Interrupted after
    `_run` is queued but before the loop's self-pipe write, the loop sleeps on. (helper-84, on
    5360718: with `_scheduled` left set, every later `ascore` on that loop waited too.)"""
    engine = Engine(PLAIN, workers=1)
    engine.score([{"completion": "a"}])  # the pool is up
    other, runner = _loop_in_thread()
    real = other.call_soon_threadsafe
    armed = [False]

    def interrupted(callback: Any, *args: Any, **kwargs: Any) -> Any:
        if armed[0] and getattr(callback, "__name__", "") == "_run":
            armed[0] = False
            if queued:  # in the loop's ready queue, its self-pipe not written
                other._call_soon(callback, args, None)  # type: ignore[attr-defined]
            raise KeyboardInterrupt
        return real(callback, *args, **kwargs)

    other.call_soon_threadsafe = interrupted  # type: ignore[method-assign]
    try:
        first = asyncio.run_coroutine_threadsafe(engine.ascore([{"completion": "sleep 2"}]), other)
        time.sleep(0.3)
        armed[0] = True
        (error,) = outcome_in_thread(engine.close, timeout=10)
        assert isinstance(error, KeyboardInterrupt)
        outcome = outcome_in_thread(lambda: first.exception(5), timeout=10)
        assert len(outcome) == 1 and isinstance(outcome[0], EngineClosed), outcome
        # e20fbd4: [TimeoutError()] - the ascore waits forever
        later = asyncio.run_coroutine_threadsafe(engine.ascore([{"completion": "ab"}]), other)
        assert outcome_in_thread(lambda: _rewards(later.result(10)), timeout=15) == [[2.0]]
    finally:
        del other.call_soon_threadsafe
        outcome_in_thread(engine.close, timeout=10)
        _end_loop(other, runner)


def test_an_interrupt_as_an_abandoned_iter_score_cancels_its_run_leaves_no_run_for_good(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-85: 5360718's `_hand_over` undoes any command whose wake-up is interrupted ("as if
    this call never came"): right for an add (the caller sees the interrupt, nothing was taken),
    wrong for the `cancel` that `iter_score`'s `finally` sends as its reader stops (a `break`, or
    Ctrl-C in the reader's loop): nobody retries it. The run is never over: its last group's
    samples are held for a group that never closes, so they stay admitted for good (with
    `max_queue_samples`, capacity lost until a `close`), the run stays in `_runs` (every look
    chain and `_Stream.wait` sees something waiting, for good), and its queued tasks are scored
    for nobody. (e225450 kept the command.)"""
    grouped = {
        "rewards": {"s": {"type": "tests.engine.rewards_for_tests:scripted"}},
        "group_transform": "grpo",
    }
    engine = Engine(grouped, workers=1, window=2)
    front = engine.front
    samples = [{"id": "0", "completion": "a", "group": "g1"}] + [
        {"id": str(i), "completion": "sleep 0.1", "group": "g2"} for i in range(1, 9)
    ]
    try:
        stream = engine.iter_score(iter(samples))
        first = outcome_in_thread(lambda: next(stream).id, timeout=30)
        assert first == ["0"], first  # g1 closed: g2 has samples in flight or held
        monkeypatch.setattr(rewardsmith.engine._front, "os", _OsWriteInterruptedOnce())
        with pytest.raises(KeyboardInterrupt):
            stream.close()  # the reader stops: the run's cancel, interrupted as it wakes
        monkeypatch.undo()
        time.sleep(1.0)
        assert (engine.admitted, len(front._runs)) == (0, 0)  # e20fbd4: (1, 1), for good
    finally:
        outcome_in_thread(engine.close, timeout=10)


def test_a_close_interrupted_as_it_kills_a_busy_worker_leaves_none_running() -> None:
    """helper-85: e20fbd4's `_close_pool` finishes an interrupted `TimeoutPool.close` in a thread,
    but `TimeoutPool._kill` marks a worker `killed` before it kills it: Ctrl-C in between (in
    `process.is_alive()`, on the closing thread) and the thread's close skips that worker as
    killed. The busy worker runs on (till its task ends; a hung one spins for good), and no later
    `close` can reach it (the front no longer holds the pool)."""
    engine = Engine(PLAIN, workers=1)
    front = engine.front
    engine.score([{"completion": "a"}])  # the pool is up
    engine.submit([{"completion": "sleep 5"}])
    time.sleep(0.3)  # the worker is on its 5 s task
    pool = front._pool
    assert pool is not None
    (busy,) = pool._workers
    assert busy.outstanding
    busy_pid = busy.process.pid

    def interrupted() -> bool:
        del busy.process.is_alive
        raise KeyboardInterrupt  # Ctrl-C as `_kill` looks before it kills

    busy.process.is_alive = interrupted  # type: ignore[method-assign]
    try:
        (error,) = outcome_in_thread(engine.close, timeout=10)
        assert isinstance(error, KeyboardInterrupt)
        time.sleep(1.0)  # the thread that finishes the pool's close is done
        assert not _running(busy_pid)  # e20fbd4: runs
    finally:
        outcome_in_thread(engine.close, timeout=10)
        if _running(busy_pid):
            os.kill(busy_pid, 9)


def test_an_interrupt_as_close_has_taken_its_lock_leaves_later_closes_working(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-85: `close` takes `_close_lock`, then makes its error and list, then enters the `try`
    whose `finally` releases the lock. Ctrl-C in between (the eval loop checks for signals at
    every call: `EngineClosed(...)` here) leaves the lock held for good: every later `close` from
    a thread waits forever (one from the driver returns at once, having done nothing), `with
    Engine(...)` never exits. (The call that takes the lock is itself such a point; the window
    can only be narrowed, to that one.)"""
    engine = Engine(PLAIN, workers=1)
    engine.score([{"completion": "a"}])  # the pool is up
    real = rewardsmith.engine._front.EngineClosed
    calls = [0]

    def interrupted_once(*args: Any) -> Any:
        calls[0] += 1
        if calls[0] == 1:
            raise KeyboardInterrupt  # Ctrl-C just after the lock is taken
        return real(*args)

    monkeypatch.setattr(rewardsmith.engine._front, "EngineClosed", interrupted_once)
    try:
        (error,) = outcome_in_thread(engine.close, timeout=10)
        assert isinstance(error, KeyboardInterrupt)
        monkeypatch.undo()
        second = outcome_in_thread(engine.close, timeout=10)
        assert second == [None], second  # e20fbd4: [] - waits for the lock forever
    finally:
        monkeypatch.undo()
        if engine.front._close_lock.locked():
            engine.front._close_lock.release()
        outcome_in_thread(engine.close, timeout=10)


def test_a_loop_stops_looking_once_its_own_calls_are_answered() -> None:
    """helper-89: a loop whose `ascore` was answered kept a 0.1 s timer (taking the front's
    `_lock`) for as long as any other caller of the engine had samples in flight: the look
    said whether the whole front waited, not this loop. An `iter_score` read part-way (or a
    reader blocked on its input) kept every loop that ever awaited `ascore` looking."""
    engine = Engine(PLAIN, workers=1, window=2)
    looks = _counting_looks(engine)
    stream = engine.iter_score(iter([{"completion": "a"}] * 10))  # past its window: open
    try:
        assert next(stream).reward == 1.0  # read part-way, then left suspended

        async def main() -> int:
            await engine.ascore([{"completion": "abc"}])
            await asyncio.sleep(0.15)  # the look that finds it answered
            before = looks[0]
            await asyncio.sleep(1.0)
            return looks[0] - before

        assert asyncio.run(main()) == 0  # before: ~10 looks a second, for good
    finally:
        stream.close()
        engine.close()


def test_a_cancel_whose_wake_up_fails_raises_nothing_and_is_carried_out_later(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """helper-89: `_hand_over` kept an end or a cancel whose wake-up failed, but raised the
    error: an ordinary one (a take-over with no descriptor left) replaced, in an abandoned
    `iter_score`'s `finally`, whatever ended it, and the thread that then retried the
    wake-up failed the same way. Now the next look or call carries it out."""
    engine = Engine(PLAIN, workers=1)
    try:
        engine.score([{"completion": "a"}])  # the pool is up
        run = engine.front.open(_Ignored())
        run.add(engine._prepare([{"completion": "sleep 0.5"}, {"completion": "sleep 0.5"}]))
        time.sleep(0.1)  # the driver waits on the first sample
        monkeypatch.setattr(engine.front, "_wake_driver", _fails_once(engine.front._wake_driver)[0])
        run.cancel()  # before: raised the OSError
        monkeypatch.undo()
        later = outcome_in_thread(lambda: _rewards(engine.score([{"completion": "ab"}])), 10)
        assert later == [[2.0]], later
        assert run.over and engine.front.admitted == 0
    finally:
        outcome_in_thread(engine.close, timeout=10)
