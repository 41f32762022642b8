"""Reward types that misbehave on purpose, to test the engine (imported by worker processes)."""

from __future__ import annotations

import os
import time

from rewardsmith import RewardFn, Sample, Score, reward


@reward("tests.engine.scripted")
def scripted() -> RewardFn:
    """Acts out the instruction in the completion: hang, die, raise, nan, or score its length
    (`policy`: its worker's scheduling policy)."""

    def score(sample: Sample) -> Score:
        text = sample.text
        if text.startswith("hang"):
            while True:
                pass
        if text.startswith("sleep "):
            time.sleep(float(text.split()[1]))
        if text == "die":
            os._exit(3)
        if text == "raise":
            raise ValueError("raised on purpose")
        if text == "nan":
            return Score.ok(float("nan"))
        if text == "not a score":
            return 1.0  # type: ignore[return-value]
        if text == "policy":
            return Score.ok(os.sched_getscheduler(0))
        if text == "n/a":
            return Score.failed("not_applicable", "nothing to check")
        if text == "invalid":
            return Score.failed("invalid", "bad reference")
        return Score.ok(len(text))

    return score


@reward("tests.engine.echo")
def echo() -> RewardFn:
    """The sample as its worker sees it, in `detail` (its dump and the fields it was given)."""

    def score(sample: Sample) -> Score:
        seen = {"dump": sample.model_dump(mode="json"), "given": sorted(sample.model_fields_set)}
        return Score.ok(1.0, seen=seen, type=type(sample).__name__)

    return score


@reward("tests.engine.constant")
def constant(*, value: float = 1.0) -> RewardFn:
    """Always `value`."""

    def score(sample: Sample) -> Score:
        return Score.ok(value)

    return score


_LOCKS: list[object] = []


@reward("tests.engine.holds_a_semaphore")
def holds_a_semaphore() -> RewardFn:
    """Makes a multiprocessing lock in the worker, as tqdm does when a library (transformers
    loading a model) shows a progress bar."""
    import multiprocessing

    _LOCKS.append(multiprocessing.get_context("spawn").Lock())
    return lambda sample: Score.ok(1.0)


@reward("tests.engine.slow_start")
def slow_start(*, seconds: float = 3.0) -> RewardFn:
    """Takes `seconds` to build (as a model reward loading its weights), then scores 1."""
    time.sleep(seconds)
    return lambda sample: Score.ok(1.0)
