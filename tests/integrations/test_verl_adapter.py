"""The verl adapter, loaded and called exactly as verl does (verl itself needs CUDA/vLLM).

The call shapes are copied from upstream verl:

- loading: `verl/utils/import_utils.py::load_module` (verl-project/verl): a file path is
  imported with ``importlib.util.spec_from_file_location(f"custom_module_{hash(path)}", path)``;
  then `verl/trainer/ppo/reward.py::get_custom_reward_fn` (verl-project/verl @ 302f740) wraps
  the function as ``partial(_call_with_kwargs, raw_fn, reward_kwargs)`` (or
  `_call_with_kwargs_async` when ``inspect.iscoroutinefunction(raw_fn)``), merging
  ``{**kwargs, **reward_kwargs}``;
- per sample: `verl/experimental/reward_loop/reward_manager/naive.py` (@ 247f1ac) awaits the
  async function, or runs the sync one with ``loop.run_in_executor(None, lambda:
  compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...))``, one
  task per sample; a dict result's keys become `reward_extra_info`, and the older
  `verl/workers/reward_manager/naive.py` (volcengine/verl) appends them per key;
- batched: `verl/experimental/reward_loop/reward_manager/batch.py` (@ a9ba065) calls
  ``compute_score(data_sources=[...], solution_strs=[...], ground_truths=[...],
  extra_infos=[...])`` and reads ``item["score"]`` from each returned dict.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import os
import subprocess
import sys
from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import rewardsmith.integrations.verl as verl_adapter
from rewardsmith import ConfigError
from rewardsmith.engine._capacity import node_cores
from tests.combine.helpers import ECHO

from .conftest import SCRIPTED, WAYS, scripted_spec, serve_for

ROOT = Path(__file__).resolve().parents[2]

MATH_SPEC_YAML = """\
rewards:
  correct:  {type: math, weight: 1.0}
  format:   {type: think_format, weight: 0.2, only_if: correct}
  overlong: {type: length, max_length: 16, cache_length: 4, unit: words}
"""

SCRIPTED_SPEC = {"rewards": {"a": {"type": SCRIPTED, "weight": 2.0}}, "on_error": -1.0}


def load_like_verl(function_name: str, reward_kwargs: dict[str, Any]) -> Any:
    """`load_module` + `get_custom_reward_fn`, as in verl."""
    path = verl_adapter.__file__
    spec = importlib.util.spec_from_file_location(
        f"custom_module_{hash(os.path.abspath(path))}", path
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    raw_fn = getattr(module, function_name)

    def _call_with_kwargs(raw_fn, extra_kwargs, *args, **kwargs):  # type: ignore[no-untyped-def]
        return raw_fn(*args, **{**kwargs, **extra_kwargs})

    async def _call_with_kwargs_async(raw_fn, extra_kwargs, *args, **kwargs):  # type: ignore[no-untyped-def]
        return await raw_fn(*args, **{**kwargs, **extra_kwargs})

    if not inspect.iscoroutinefunction(raw_fn):
        return partial(_call_with_kwargs, raw_fn, reward_kwargs)
    return partial(_call_with_kwargs_async, raw_fn, reward_kwargs)


ROWS = [  # (data_source, solution_str, ground_truth, extra_info)
    ("openai/gsm8k", "<think>2+2</think> The answer is \\boxed{4}", "4", {"index": 0}),
    ("openai/gsm8k", "I think it is 5. \\boxed{5}", "4", {"index": 1}),
    ("math", "\\boxed{\\frac{1}{2}}", "0.5", {"index": 2, "split": "train"}),
]


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("verl") / "spec.yaml"
    path.write_text(MATH_SPEC_YAML)
    return path


@pytest.fixture(params=WAYS)
def spec_file(
    request: pytest.FixtureRequest,
    spec_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    servers: dict[Path, Any],
) -> Path:
    """The spec in `REWARDSMITH_SPEC`; scored in-process, then by a real reward server."""
    monkeypatch.setenv("REWARDSMITH_SPEC", str(spec_path))
    monkeypatch.setenv("REWARDSMITH_WORKERS", "1")
    if request.param == "server":
        serve_for(spec_path, monkeypatch, servers)
    return spec_path


def run_naive_manager(compute_score: Any) -> list[dict[str, Any]]:
    """The reward loop's naive manager: one executor task (or coroutine) per sample."""
    is_async = inspect.iscoroutinefunction(compute_score)

    async def one(row: tuple[Any, ...]) -> Any:
        data_source, response_str, ground_truth, extra_info = row
        kwargs = {
            "data_source": data_source,
            "solution_str": response_str,
            "ground_truth": ground_truth,
            "extra_info": extra_info,
        }
        if is_async:
            return await compute_score(**kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, lambda: compute_score(**kwargs))

    async def main() -> list[Any]:
        return await asyncio.gather(*(one(row) for row in ROWS))

    return asyncio.run(main())


def test_per_sample_call_from_the_environment_spec(spec_file: Path) -> None:
    compute_score = load_like_verl("compute_score", {})
    results = run_naive_manager(compute_score)
    assert [r["score"] for r in results] == [1.2, 0.0, 1.0]
    assert results[0] == {
        "score": 1.2,
        "failed": 0.0,
        "correct": 1.0,
        "correct_failed": 0.0,
        "format": 1.0,
        "format_failed": 0.0,
        "overlong": 0.0,
        "overlong_failed": 0.0,
    }
    # the older naive manager gathers every key per sample: same keys everywhere
    reward_extra_info: dict[str, list[float]] = defaultdict(list)
    for result in results:
        for key, value in result.items():
            reward_extra_info[key].append(value)
    assert {len(v) for v in reward_extra_info.values()} == {len(ROWS)}


def test_async_variant_is_awaited_and_agrees(spec_file: Path) -> None:
    compute_score = load_like_verl("compute_score_async", {})
    assert inspect.iscoroutinefunction(compute_score)  # how verl picks the async path
    assert run_naive_manager(compute_score) == run_naive_manager(
        load_like_verl("compute_score", {})
    )


def test_batched_manager_call(spec_file: Path) -> None:
    data_sources, solution_strs, ground_truths, extra_infos = (
        list(c) for c in zip(*ROWS, strict=True)
    )
    for name in ("compute_score", "compute_score_batch"):
        compute_score = load_like_verl(name, {})
        result = compute_score(
            data_sources=data_sources,
            solution_strs=solution_strs,
            ground_truths=ground_truths,
            extra_infos=extra_infos,
        )
        assert [item["score"] for item in result] == [1.2, 0.0, 1.0]
    async_fn = load_like_verl("compute_score_async", {})
    result = asyncio.run(
        async_fn(
            data_sources=data_sources,
            solution_strs=solution_strs,
            ground_truths=ground_truths,
            extra_infos=extra_infos,
        )
    )
    assert [item["score"] for item in result] == [1.2, 0.0, 1.0]


def test_numpy_inputs_as_verl_stores_them(spec_file: Path) -> None:
    np = pytest.importorskip("numpy")
    sample = verl_adapter.to_sample(
        np.str_("gsm8k"), "x", np.array(["3", "three"], dtype=object), {"index": np.int64(7)}
    )
    assert sample == {
        "completion": "x",
        "reference": ["3", "three"],
        "metadata": {"index": 7, "data_source": "gsm8k"},
    }
    assert type(sample["metadata"]["index"]) is int
    compute_score = load_like_verl("compute_score", {})
    result = compute_score(
        data_source=np.str_("gsm8k"),
        solution_str="\\boxed{3}",
        ground_truth=np.str_("3"),
        extra_info={"index": np.int64(7)},
    )
    assert result["score"] == 1.0


def test_spec_from_reward_kwargs_and_failures_follow_on_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("REWARDSMITH_SPEC", raising=False)
    compute_score = load_like_verl("compute_score", {"spec": SCRIPTED_SPEC, "workers": 1})
    ok = compute_score(data_source="d", solution_str="one two", ground_truth=None, extra_info=None)
    failed = compute_score(data_source="d", solution_str="raise", ground_truth=None)
    not_applicable = compute_score(data_source="d", solution_str="n/a", ground_truth=None)
    assert ok == {"score": 4.0, "failed": 0.0, "a": 2.0, "a_failed": 0.0}
    # a failed component gets on_error, never NaN (verl's metrics and GDPO read it)
    assert failed == {"score": -1.0, "failed": 1.0, "a": -1.0, "a_failed": 1.0}
    assert not_applicable == {"score": 0.0, "failed": 0.0, "a": 0.0, "a_failed": 0.0}


@pytest.mark.parametrize(
    ("extra_infos", "charges"),
    [
        # two prompts (verl's `index`): each crash is charged below its own prompt's lowest
        ([{"index": 0}, {"index": 0}, {"index": 1}, {"index": 1}], [5.75 - 1, 2.0 - 1]),
        # no groups: the call's samples are one group
        (None, [2.0 - (5.75 - 2.0)] * 2),
    ],
)
def test_batched_call_charges_a_failure_the_completion_caused(
    monkeypatch: pytest.MonkeyPatch, extra_infos: list[Any] | None, charges: list[float]
) -> None:
    """`a` (2 x words, no declared range) crashes on `raise`; `b` penalises a third word by
    -0.5 (x 0.5). No `on_error`: the crash used to score 0.0, above any wrong answer the
    penalty pushed below 0. It is charged as TRL's adapter charges (strictly below the
    group's lowest, by the group's spread and at least 1, the spec's lowest being unknown)."""
    monkeypatch.delenv("REWARDSMITH_SPEC", raising=False)
    compute_score = load_like_verl("compute_score", {"spec": scripted_spec(), "workers": 1})
    out = compute_score(
        data_sources=["d"] * 4,
        solution_strs=["one two three", "raise", "one", "raise"],
        ground_truths=[None] * 4,
        extra_infos=extra_infos,
    )
    assert [o["score"] for o in out] == pytest.approx([5.75, charges[0], 2.0, charges[1]])
    assert [o["failed"] for o in out] == [0.0, 1.0, 0.0, 1.0]


def test_per_sample_call_charges_at_the_lowest_total() -> None:
    """A crash scores the spec's lowest total (-1: the overlong penalty's low end), no better
    than a wrong overlong answer, where it scored 0.0."""
    body = {
        "rewards": {
            "correct": {"type": ECHO, "key": "correct", "low": 0.0, "high": 1.0},
            "overlong": {"type": ECHO, "key": "overlong", "low": -1.0, "high": 0.0},
        }
    }
    crash = {"correct": "error", "overlong": 0.0}
    out = verl_adapter.compute_score("d", "x", "1", crash, spec=body, workers=1)
    assert out["score"] == -1.0 and out["failed"] == 1.0


def test_component_values_are_the_gated_ones_the_total_used(spec_file: Path) -> None:
    compute_score = load_like_verl("compute_score", {})
    # well formatted but wrong: `format` passes on its own, but its gate `correct` is 0
    result = compute_score(
        data_source="d", solution_str="<think>x</think> \\boxed{5}", ground_truth="4"
    )
    assert result["correct"] == 0.0 and result["format"] == 0.0 and result["score"] == 0.0


def test_a_length_in_tokens_is_refused_at_the_first_call() -> None:
    spec = {"rewards": {"n": {"type": "length", "max_length": 9, "cache_length": 3}}}
    with pytest.raises(ConfigError, match=r"rewards\.n: a length in tokens"):
        verl_adapter.compute_score("d", "x", "y", spec=spec)


def test_no_spec_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REWARDSMITH_SPEC", raising=False)
    with pytest.raises(ConfigError, match="REWARDSMITH_SPEC is not set here") as info:
        verl_adapter.compute_score("d", "x", "y")
    assert "runtime-env-json" in str(info.value)


def test_group_scoped_shaping_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from rewardsmith import combine as combine_module

    if "kimi" not in getattr(combine_module, "TRANSFORM_TYPES", {}):
        pytest.skip("this spec has no group-scoped transforms")
    spec = {
        "rewards": {
            "correct": {"type": "math"},
            "n": {
                "type": "length",
                "unit": "words",
                "max_length": 9,
                "cache_length": 3,
                "transform": {"type": "kimi", "correct": "correct"},
            },
        }
    }
    with pytest.raises(ConfigError, match="group-scoped transform"):
        verl_adapter.compute_score("d", "x", "y", spec=spec)


WORKER = """
import importlib.util, os, sys
from rewardsmith.integrations._shared_engine import shared_engine
path = sys.argv[1]  # a reward worker starts: verl's load_module, as in load_like_verl
spec = importlib.util.spec_from_file_location(f"custom_module_{hash(os.path.abspath(path))}", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
compute_score = module.compute_score
print("loaded", flush=True)
sys.stdin.readline()  # every worker is up before the first batch
compute_score(data_source="d", solution_str="\\\\boxed{1}", ground_truth="1")
print(len(shared_engine().pool._workers), flush=True)
"""


def test_reward_workers_on_one_node_share_its_cores(spec_path: Path) -> None:
    """verl starts several reward workers per node (`reward.num_workers`), each loading the
    function; together their pools must not hold more workers than the node has cores (one
    each at least)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    env["REWARDSMITH_SPEC"] = str(spec_path)  # the math spec
    env.pop("REWARDSMITH_WORKERS", None)
    command = [sys.executable, "-c", WORKER, verl_adapter.__file__]
    workers = [
        subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)
        for _ in range(4)
    ]
    try:
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline() == "loaded\n"
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        sizes = [int(worker.stdout.readline()) for worker in workers]  # type: ignore[union-attr]
    finally:
        for worker in workers:
            worker.kill()
            worker.communicate()
    assert all(size >= 1 for size in sizes)
    assert sum(sizes) <= max(node_cores(), len(workers)), sizes
