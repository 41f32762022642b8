"""`majority_vote` through the trainer adapters: how each trainer delivers groups, and a clear
failure where one cannot (the call shapes are those of tests/integrations)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import rewardsmith.integrations.openrlhf as openrlhf_adapter
import rewardsmith.integrations.verl as verl_adapter
from rewardsmith import ConfigError
from rewardsmith.integrations.trl import TRLRewards

SPEC = {"rewards": {"vote": {"type": "majority_vote"}}}
FOUR, FIVE = r"\boxed{4}", r"\boxed{5}"


def test_verl_batched_call_regroups_by_index_and_keeps_verls_order() -> None:
    # verl's balance_batch interleaves prompts: p0 and p1, four samples each
    index = [0, 1, 1, 0, 0, 1, 0, 1]
    solutions = [FOUR, FIVE, FIVE, FOUR, FIVE, FOUR, FOUR, FIVE]
    # by hand: p0 votes 4, 4, 5, 4 -> 1, 1, 0, 1; p1 votes 5, 5, 4, 5 -> 1, 1, 0, 1
    out = verl_adapter.compute_score(
        data_sources=["math"] * 8,
        solution_strs=solutions,
        ground_truths=[None] * 8,
        extra_infos=[{"index": i} for i in index],
        spec=SPEC,
        workers=1,
    )
    assert isinstance(out, list)
    assert [o["score"] for o in out] == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0]


def test_verl_batched_call_without_the_group_key_names_the_sample() -> None:
    with pytest.raises(ConfigError, match=r"solution 1: extra_info has no 'index'"):
        verl_adapter.compute_score_batch(
            data_sources=["m", "m"],
            solution_strs=[FOUR, FOUR],
            ground_truths=[None, None],
            extra_infos=[{"index": 0}, {}],
            spec=SPEC,
            workers=1,
        )


def test_verl_per_sample_call_is_refused() -> None:
    with pytest.raises(ConfigError, match="one sample at a time"):
        verl_adapter.compute_score("math", FOUR, None, {"index": 0}, spec=SPEC, workers=1)


def test_openrlhf_refuses_at_load_and_at_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match="OpenRLHF hands the reward function samples without"):
        openrlhf_adapter.answer_queries(["q " + FOUR], ["q "], None, spec=SPEC, workers=1)
    spec = tmp_path / "spec.yaml"
    spec.write_text("rewards:\n  vote: {type: majority_vote}\n")
    monkeypatch.setenv("REWARDSMITH_SPEC", str(spec))
    monkeypatch.setenv("REWARDSMITH_WORKERS", "1")
    loader = importlib.util.spec_from_file_location("reward_func", openrlhf_adapter.__file__)
    assert loader is not None and loader.loader is not None
    with pytest.raises(ConfigError, match="whole group"):
        loader.loader.exec_module(importlib.util.module_from_spec(loader))


def test_trl_checks_that_batches_hold_whole_groups() -> None:
    with TRLRewards(SPEC, workers=1, num_generations=2) as rewards:
        (vote,) = rewards.funcs
        prompts = ["p", "p", "q", "q"]
        assert vote(prompts=prompts, completions=[FOUR, FOUR, FOUR, FIVE]) == [1.0, 1.0, 0, 0]
        with pytest.raises(ConfigError, match="not whole groups of num_generations=2"):
            vote(prompts=prompts[:3], completions=[FOUR] * 3)
        with pytest.raises(ConfigError, match="come from different prompts"):
            vote(prompts=["p", "q", "q", "p"], completions=[FOUR] * 4)


def test_server_scores_groups_and_refuses_openrlhf_calls(tmp_path: Path) -> None:
    import httpx

    from tests.server.conftest import TOKEN, Server

    spec = tmp_path / "spec.yaml"
    spec.write_text("rewards:\n  vote: {type: majority_vote}\n")
    server = Server(spec, "--workers", "1")
    try:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        samples = [
            {"id": str(i), "group": "g", "completion": c} for i, c in enumerate([FOUR, FIVE, FOUR])
        ]
        scored = httpx.post(
            f"{server.url}/v1/score", json={"samples": samples}, headers=headers, timeout=60
        )
        assert scored.status_code == 200, scored.text
        assert [r["reward"] for r in scored.json()["results"]] == [1.0, 0.0, 1.0]
        refused = httpx.post(
            f"{server.url}/get_reward", json={"query": ["x"]}, headers=headers, timeout=60
        )
        assert refused.status_code == 422
        assert "OpenRLHF hands the reward function samples without" in refused.text
    finally:
        server.stop()
