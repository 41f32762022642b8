"""The verl adapter driven by verl's own code (verl 0.9.1 from PyPI, installed without its GPU
stack: `.ci/run` installs it with `--no-deps` next to the few pure-Python modules it needs).

What runs is verl's: Hydra composes verl's trainer config with the README's overrides,
`get_custom_reward_fn` loads our file by path, the `naive` reward manager scores a batch
(decoding token ids with a tokenizer built here), `process_validation_metrics` computes the
validation metrics and `compute_gdpo_outcome_advantage` GDPO's advantages from the per-key
values; the `prime` manager's `run_reward_scoring` forks a process pool that calls the reward
function.
"""

from __future__ import annotations

import math
import pickle
from pathlib import Path
from typing import Any

import pytest

import rewardsmith.integrations.verl as verl_adapter

from .conftest import require, tiny_tokenizer

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()

SPEC_YAML = """\
rewards:
  correct: {type: math, weight: 1.0}
  format:  {type: think_format, weight: 0.2, only_if: correct}
  words:   {type: "tests.engine.rewards_for_tests:scripted", weight: 0.01}
timeout_s: 1
"""

# (uid, response, ground truth): two prompts, two responses each
ROWS = [
    ("q1", "<think>2 + 2</think> \\boxed{4}", "4"),  # right, well formatted
    ("q1", "<think>hmm</think> \\boxed{5}", "4"),  # wrong: its format bonus is gated off
    ("q2", "hang", "8"),  # the scripted component runs past timeout_s
    ("q2", "<think>3 + 5</think> \\boxed{8}", "8"),
]

pytestmark = [
    # hydra 1.3 and verl's config code raise FutureWarning/DeprecationWarning on Python 3.11
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::UserWarning"),
]


@pytest.fixture(scope="module")
def verl() -> Any:
    require("torch")
    return require("verl")


@pytest.fixture(scope="module")
def spec_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("verl-upstream") / "spec.yaml"
    path.write_text(SPEC_YAML)
    return path


def readme_overrides(spec: Path) -> list[str]:
    """The Hydra overrides the README's verl section gives, with real paths filled in."""
    assert "reward.custom_reward_function.name=compute_score" in README
    assert "+reward.custom_reward_function.reward_kwargs.spec=" in README
    return [
        f"reward.custom_reward_function.path={verl_adapter.__file__}",
        "reward.custom_reward_function.name=compute_score",
        f"+reward.custom_reward_function.reward_kwargs.spec={spec}",
        "+reward.custom_reward_function.reward_kwargs.workers=1",
    ]


def compose(overrides: list[str]) -> Any:
    import verl
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    config_dir = Path(verl.__file__).parent / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=overrides)


def test_the_readme_overrides_are_accepted_by_verls_config(verl: Any, spec_path: Path) -> None:
    from hydra.errors import ConfigCompositionException

    config = compose(readme_overrides(spec_path))
    assert config.reward.custom_reward_function.reward_kwargs.spec == str(spec_path)
    # without the `+`, Hydra refuses the key: verl's config has no reward_kwargs
    with pytest.raises(ConfigCompositionException, match="To append to your config use \\+"):
        compose([f"reward.custom_reward_function.reward_kwargs.spec={spec_path}"])


@pytest.fixture(scope="module")
def reward_fn(verl: Any, spec_path: Path) -> Any:
    """verl's `get_custom_reward_fn` on the composed config: our file, loaded by verl."""
    from verl.trainer.ppo.reward import get_custom_reward_fn

    return get_custom_reward_fn(compose(readme_overrides(spec_path)))


def data_proto(tokenizer: Any) -> Any:
    """A batch as verl's trainer hands it to a reward manager (left-padded prompts)."""
    import numpy as np
    import torch
    from verl import DataProto

    prompts = [tokenizer.encode(f"Question {uid} ?") for uid, _, _ in ROWS]
    responses = [tokenizer.encode(text) for _, text, _ in ROWS]
    p_len, r_len = max(map(len, prompts)), max(map(len, responses))
    pad = tokenizer.pad_token_id
    prompt_ids = torch.tensor([[pad] * (p_len - len(p)) + p for p in prompts])
    response_ids = torch.tensor([r + [pad] * (r_len - len(r)) for r in responses])
    mask = torch.tensor(
        [
            [0] * (p_len - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (r_len - len(r))
            for p, r in zip(prompts, responses, strict=True)
        ]
    )
    return DataProto.from_dict(
        tensors={"prompts": prompt_ids, "responses": response_ids, "attention_mask": mask},
        non_tensors={
            "data_source": np.array(["math"] * len(ROWS), dtype=object),
            "reward_model": np.array([{"ground_truth": gt} for *_, gt in ROWS], dtype=object),
            "extra_info": np.array([{"index": i} for i in range(len(ROWS))], dtype=object),
            "uid": np.array([uid for uid, _, _ in ROWS], dtype=object),
        },
    )


def test_a_timed_out_component_gives_verl_numbers_and_gated_values(
    verl: Any, reward_fn: Any
) -> None:
    import numpy as np
    import torch
    from verl.trainer.ppo.core_algos import compute_gdpo_outcome_advantage
    from verl.trainer.ppo.metric_utils import process_validation_metrics
    from verl.workers.reward_manager.naive import NaiveRewardManager

    data = data_proto(tiny_tokenizer())
    manager = NaiveRewardManager(tokenizer=tiny_tokenizer(), num_examine=0, compute_score=reward_fn)
    out = manager(data, return_dict=True)
    info = dict(out["reward_extra_info"])
    names = ["correct", "format", "words"]

    # every value verl receives is a number; the failure is flagged beside it
    assert set(info) == {"score", "failed", *names, *(f"{n}_failed" for n in names)}
    assert all(isinstance(v, float) and math.isfinite(v) for vs in info.values() for v in vs)
    assert info["words_failed"] == [0.0, 0.0, 1.0, 0.0]
    assert info["failed"] == [0.0, 0.0, 1.0, 0.0]
    assert info["words"][2] == 0.0  # no on_error in the spec: 0.0
    # the format bonus of the wrong answer is gated off, as in the total
    assert info["correct"] == [1.0, 0.0, 0.0, 1.0]
    assert info["format"] == [1.0, 0.0, 0.0, 1.0]
    assert info["score"][1] == pytest.approx(0.01 * len(ROWS[1][1]))

    # verl's validation metrics (mean@2, best@2, std...) are all numbers
    uids = [uid for uid, _, _ in ROWS]
    metrics = process_validation_metrics(["math"] * len(ROWS), uids, info)
    values = [v for var in metrics["math"].values() for v in var.values()]
    assert values and all(math.isfinite(v) for v in values)

    # GDPO normalises each component per group: every advantage is a number
    response_mask = data.batch["attention_mask"][:, data.batch["prompts"].size(1) :]
    advantages, _ = compute_gdpo_outcome_advantage(
        token_level_rewards=out["reward_tensor"],
        response_mask=response_mask,
        index=np.array(uids, dtype=object),
        config={"gdpo_reward_keys": names},
        non_tensor_batch={k: np.array(v) for k, v in info.items()},
        batch=data.batch,
    )
    assert torch.isfinite(advantages).all()


def score_only(data_source: Any, solution: Any, ground_truth: Any, extra_info: Any) -> float:
    """What verl's prime manager expects of its function (a number), around our function."""
    result = verl_adapter.compute_score(
        data_source, solution, ground_truth, extra_info, spec=SPEC_YAML, workers=1
    )
    assert isinstance(result, dict)
    return float(result["score"])


def test_the_function_pickles_and_works_in_forked_processes(verl: Any, reward_fn: Any) -> None:
    cloudpickle = pytest.importorskip("cloudpickle")
    from verl.utils.import_utils import load_extern_object
    from verl.workers.reward_manager.prime import run_reward_scoring

    loaded = load_extern_object(verl_adapter.__file__, "compute_score")
    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        assert loads(dumps(loaded)) is verl_adapter.compute_score
        assert loads(dumps(reward_fn)).func is reward_fn.func  # verl's partial wrapper
    # this process has scored, then verl's prime manager forks a pool that scores too
    assert score_only("math", "\\boxed{4}", "4", None) == pytest.approx(1.09)
    scores = run_reward_scoring(
        score_only,
        completions=["\\boxed{4}", "\\boxed{3}", "<think>a</think> \\boxed{8}"],
        references=["4", "4", "8"],
        tasks=["math"] * 3,
        num_processes=2,
    )
    assert scores == pytest.approx([1.09, 0.09, 1.2 + 0.26])
