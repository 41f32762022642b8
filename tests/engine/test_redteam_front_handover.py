"""Red team of the batched hand-over to event loops (`_Handover`, `Engine.asubmit`) and of the
driver left asleep while every worker is busy (`Front._saturated`).

The rows under "holes" were holes when found (a StopIteration failure never answered, a
batch stranded behind a failing call, a closed loop kept forever), now fixed; the others are
attacks the engine withstood from the start (regression guards). Every wait is bounded: a
hole shows as a bounded wait that ran out, never as a hung test run.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import time
from typing import Any

import pytest

from rewardsmith import Engine
from rewardsmith.engine import EngineClosed

SCRIPTED = "tests.engine.rewards_for_tests:scripted"
PLAIN = {"rewards": {"s": {"type": SCRIPTED}}, "timeout_s": 5}
BOUND_S = 20.0
"""Longest any call below may take before it counts as lost (a bound, not a speed target)."""


def stop_comparator(a: Any, b: Any) -> float:
    """A tournament comparator with a common bug: `next()` on an exhausted iterator."""
    return next(iter(()))


STOPPING = {
    "rewards": {"s": {"type": SCRIPTED}},
    "timeout_s": 5,
    "group_transform": {
        "type": "tournament",
        "compare": "tests.engine.test_redteam_front_handover:stop_comparator",
    },
}


def group(name: str, texts: list[str]) -> list[dict[str, str]]:
    return [{"id": f"{name}{i}", "completion": t, "group": name} for i, t in enumerate(texts)]


def settled(engine: Engine) -> int:
    """`engine.admitted` once the driver has applied what is in flight (cancels are async)."""
    deadline = time.monotonic() + BOUND_S
    while engine.admitted and time.monotonic() < deadline:
        time.sleep(0.02)
    return engine.admitted


@pytest.fixture(scope="module")
def stopping_engine() -> Any:
    with Engine(STOPPING, workers=1) as engine:
        engine.start()
        yield engine


@pytest.fixture(scope="module")
def engine() -> Any:
    with Engine(PLAIN, workers=2) as engine:
        engine.start()
        yield engine


# -- holes, fixed -------------------------------------------------------------------------------


def test_a_call_failing_with_stop_iteration_is_answered(stopping_engine: Engine) -> None:
    async def main() -> BaseException | None:
        try:
            await asyncio.wait_for(stopping_engine.ascore(group("g", ["a", "bb"])), BOUND_S)
        except asyncio.TimeoutError:
            return None  # lost: the call never returned
        except BaseException as exc:  # any answer is an answer
            return exc
        return None

    error = asyncio.run(main())
    assert error is not None, "ascore never returned"
    assert settled(stopping_engine) == 0


def test_a_failing_call_does_not_strand_the_rest_of_its_batch(stopping_engine: Engine) -> None:
    async def main() -> bool:
        bad = stopping_engine.asubmit(group("g", ["a", "bb"]))
        time.sleep(2.0)  # the loop is blocked: bad's hand-over is queued, its batch scheduled
        good = stopping_engine.asubmit(group("h", ["ccc"]))  # one sample: no comparison
        time.sleep(2.0)  # good finishes behind bad, in the same (still unrun) batch
        done, _ = await asyncio.wait([good], timeout=BOUND_S)
        bad.cancel()
        return bool(done) and good.result()[0].reward == 3.0

    assert asyncio.run(main()), "a call that finished was never handed over"


# -- guards -----------------------------------------------------------------------------------


def test_many_threads_and_loops_calling_with_cancels_lose_nothing(engine: Engine) -> None:
    """Six threads, each its own event loops, mix ascore, asubmit and cancelled calls while
    the workers are saturated; every kept call gets its own results and nothing stays
    admitted."""
    failures: list[str] = []

    async def rounds(thread: int, loop_no: int) -> None:
        for r in range(4):
            tag = f"t{thread}l{loop_no}r{r}"
            texts = ["sleep 0.05", "x" * (thread + 1), "y" * (r + 2)]
            kept = [
                engine.asubmit([{"id": f"{tag}k{i}", "completion": t}]) for i, t in enumerate(texts)
            ]
            dropped = engine.asubmit([{"id": f"{tag}d", "completion": "sleep 0.2"}] * 1)
            invalid = engine.ascore([{"id": f"{tag}v", "completion": 5}])
            if r % 2:
                dropped.cancel()
            else:
                asyncio.get_running_loop().call_soon(dropped.cancel)
            got = await asyncio.wait_for(asyncio.gather(*kept, invalid), BOUND_S)
            want = [len(t) for t in texts]
            if [g[0].reward for g in got[:3]] != want or [g[0].id for g in got[:3]] != [
                f"{tag}k{i}" for i in range(3)
            ]:
                failures.append(f"{tag}: {got}")
            if got[3][0].status != "invalid":
                failures.append(f"{tag}: invalid input scored {got[3]}")

    def worker(thread: int) -> None:
        try:
            for loop_no in range(2):
                asyncio.run(rounds(thread, loop_no))
        except BaseException as exc:  # reported below
            failures.append(f"thread {thread}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=4 * BOUND_S)
    assert not any(t.is_alive() for t in threads), "a caller hung"
    assert failures == []
    assert settled(engine) == 0


def test_close_mid_batch_answers_every_awaiting_loop() -> None:
    """engine.close() from another thread while calls of several loops wait: each call ends
    (results or EngineClosed), none hangs, and the engine serves again afterwards."""
    with Engine(PLAIN, workers=1) as eng:
        eng.start()
        outcomes: list[object] = []
        ready = threading.Barrier(4)

        def caller(n: int) -> None:
            async def main() -> None:
                calls = [eng.asubmit([{"completion": "sleep 0.3"}] * 2) for _ in range(3)]
                ready.wait()
                got = await asyncio.wait_for(
                    asyncio.gather(*calls, return_exceptions=True), BOUND_S
                )
                outcomes.extend(got)

            try:
                asyncio.run(main())
            except BaseException as exc:  # reported below
                outcomes.append(exc)

        threads = [threading.Thread(target=caller, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        ready.wait()
        time.sleep(0.2)
        eng.close()
        for t in threads:
            t.join(timeout=2 * BOUND_S)
        assert len(outcomes) == 9
        assert all(isinstance(o, (list, EngineClosed)) for o in outcomes), outcomes
        assert any(isinstance(o, EngineClosed) for o in outcomes)
        assert eng.admitted == 0
        assert [r.reward for r in eng.score([{"completion": "abcd"}])] == [4.0]


@pytest.mark.parametrize("inputs", [[{"completion": 5}], [{"completion": "ab"}]])
def test_a_call_added_while_saturated_is_answered(engine: Engine, inputs: list) -> None:
    """Both workers hang (until their timeout): an all-invalid call and a scorable one are
    queued without waking the driver, and still answered."""

    async def main() -> list:
        hung = engine.asubmit([{"completion": "sleep 1.5"}] * 2)
        await asyncio.sleep(0.3)  # both workers are on it: the driver saw them saturated
        got = await asyncio.wait_for(engine.ascore(inputs), BOUND_S)
        await asyncio.wait_for(hung, BOUND_S)
        return got

    got = asyncio.run(main())
    assert got[0].status in {"invalid", "ok"} and len(got) == 1
    assert settled(engine) == 0


def test_results_for_a_loop_that_closed_are_dropped_without_harm(engine: Engine) -> None:
    """Calls whose loop ends before their answer (asyncio.run returning without awaiting
    them): the answers go nowhere, nothing stays admitted, other loops are served."""

    async def abandon() -> None:
        engine.asubmit([{"completion": "sleep 0.1"}] * 3)

    for _ in range(3):
        asyncio.run(abandon())
    assert settled(engine) == 0

    async def fresh() -> list:
        return await asyncio.wait_for(engine.ascore([{"completion": "abc"}]), BOUND_S)

    assert [r.reward for r in asyncio.run(fresh())] == [3.0]


def test_a_loop_that_closed_before_its_answer_is_let_go(engine: Engine) -> None:
    import weakref

    loops: list[weakref.ref] = []

    async def abandon() -> None:
        loops.append(weakref.ref(asyncio.get_running_loop()))
        engine.asubmit([{"completion": "sleep 0.1"}] * 2)  # raised past, say, never awaited

    for _ in range(3):
        asyncio.run(abandon())
    assert settled(engine) == 0
    engine.score([{"completion": "a"}])  # the driver lets go of its last commands
    gc.collect()
    assert [ref() for ref in loops] == [None] * 3
    assert len(engine._handovers) == 0


def test_a_long_blocked_loop_gets_every_call_of_the_batch(engine: Engine) -> None:
    """Forty calls finish while their loop is blocked: one batch, every result delivered."""

    async def main() -> list:
        calls = [engine.asubmit([{"id": str(i), "completion": "z" * i}]) for i in range(40)]
        time.sleep(1.5)  # blocks the loop while the driver hands everything over
        return await asyncio.wait_for(asyncio.gather(*calls), BOUND_S)

    got = asyncio.run(main())
    assert [(g[0].id, g[0].reward) for g in got] == [(str(i), float(i)) for i in range(40)]
    assert settled(engine) == 0


def test_a_forked_child_awaits_its_own_calls(engine: Engine) -> None:
    """After the parent has awaited calls on a loop, a forked child's asyncio calls are
    scored by the child's own driver and workers, and the parent's still work."""

    async def once(text: str) -> float:
        return (await asyncio.wait_for(engine.ascore([{"completion": text}]), BOUND_S))[0].reward

    assert asyncio.run(once("ab")) == 2.0
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running pytest's teardown
        code = 1
        try:
            code = 0 if asyncio.run(once("abcde")) == 5.0 else 2
        finally:
            os.write(write, bytes([code]))
            os._exit(code)
    os.close(write)
    try:
        deadline = time.monotonic() + 4 * BOUND_S
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:  # hung: end it, and fail below
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                break
            time.sleep(0.05)
        status = os.read(read, 1)
    finally:
        os.close(read)
    assert status == b"\x00", "the forked child's call failed or hung"
    assert asyncio.run(once("abc")) == 3.0
