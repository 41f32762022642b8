"""`reward_model` with `backend: transformers`: the node's model host against a plain
transformers forward pass, normalisations by hand, the engine end to end (one model load for
all workers), failures as statuses."""

from __future__ import annotations

import math
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import Engine, Sample
from rewardsmith.reward_models import reward_model
from rewardsmith.reward_models._host import socket_dir

pytest.importorskip("transformers")

# The tiny tokenizer doubles its template's BOS: the reward warns once (tested in test_inputs).
pytestmark = pytest.mark.filterwarnings("ignore:.*BOS token:UserWarning")

PROMPTS = ["What is 2 + 2 ?", "Natalia sold clips to 48 of her friends in April ."]
COMPLETIONS = ["4", "The answer is 72 .", "Step 1 : compute the total . So the answer is 4 ."]


def samples() -> list[Sample]:
    return [
        Sample(id=f"{i}-{j}", prompt=p, completion=c)
        for i, p in enumerate(PROMPTS)
        for j, c in enumerate(COMPLETIONS)
    ]


def plain_logits(folder: Path, sample: Sample) -> list[float]:
    """What a researcher's own transformers code computes: the RM's template, tokenized
    without adding a second BOS, one sample at a time."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    messages = [
        {"role": "user", "content": sample.prompt},
        {"role": "assistant", "content": sample.text},
    ]
    text = tok.apply_chat_template(messages, tokenize=False)
    ids = tok(text, add_special_tokens=False, return_tensors="pt")
    with torch.inference_mode():
        return [float(x) for x in model(**ids).logits[0]]


@pytest.fixture(scope="module")
def rm(tiny_rm: Path) -> Any:
    return reward_model(model=str(tiny_rm), batch_size=3)


@pytest.mark.parametrize("completion", ["", " \u200b\n", "<think>never closed", "<|im_end|>"])
def test_an_empty_answer_is_not_shown_to_the_model(tiny_rm: Path, completion: str) -> None:
    """Nothing committed: 0, the lowest, with sigmoid; charged (no lowest raw logit)."""
    sample = Sample(id="e", prompt=PROMPTS[0], completion=completion)
    low = reward_model(model=str(tiny_rm), normalize="sigmoid")(sample)
    assert (low.status, low.score, low.detail["reason"][:12]) == ("ok", 0.0, "empty answer")
    raw = reward_model(model=str(tiny_rm))(sample)
    assert (raw.status, raw.cause) == ("error", "completion")


def test_scores_equal_a_plain_transformers_forward(rm: Any, tiny_rm: Path) -> None:
    for sample in samples():
        score = rm(sample)
        assert score.status == "ok", score.detail
        [expected] = plain_logits(tiny_rm, sample)
        assert score.score == pytest.approx(expected, abs=1e-5)
        assert score.detail["bos_fixed"] is True


def test_a_prefetched_batch_scores_as_one_at_a_time(rm: Any) -> None:
    batch = samples()
    alone = [rm(s).score for s in batch]
    fresh = [s.model_copy(update={"id": s.id + "b", "prompt": s.prompt + " "}) for s in batch]
    rm.prefetch(fresh)  # mixed lengths in micro-batches of 3: padding must not change a score
    together = [rm(s).score for s in fresh]
    singles = [rm(s).score for s in fresh]
    assert together == pytest.approx(singles, abs=1e-5)
    assert together != pytest.approx(alone, abs=1e-9)  # the extra space is a different input


@pytest.mark.parametrize(
    ("normalize", "label", "expected"),
    [
        ("raw", 0, lambda z: z[0]),
        ("sigmoid", 0, lambda z: 1 / (1 + math.exp(-z[0]))),
    ],
)
def test_normalisations(tiny_rm: Path, normalize: str, label: int, expected: Any) -> None:
    fn = reward_model(model=str(tiny_rm), normalize=normalize, label=label)
    sample = samples()[1]
    score = fn(sample)
    assert score.score == pytest.approx(expected(plain_logits(tiny_rm, sample)), abs=1e-5)


def test_softmax_needs_two_labels(tiny_rm: Path) -> None:
    score = reward_model(model=str(tiny_rm), normalize="softmax")(samples()[0])
    assert score.status == "error" and "2 or more labels" in score.detail["reason"]


def test_a_label_the_model_does_not_have_is_an_error(tiny_rm: Path) -> None:
    score = reward_model(model=str(tiny_rm), label=3)(samples()[0])
    assert score.status == "error" and "label 3" in score.detail["reason"]


def test_a_missing_model_folder_fails_at_build(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a folder"):
        reward_model(model=str(tmp_path / "nowhere"))


def test_a_model_that_cannot_load_fails_at_build_with_the_host_log(tmp_path: Path) -> None:
    from .tiny_models import tokenizer

    tokenizer().save_pretrained(tmp_path)  # a tokenizer, but no weights
    with pytest.raises(Exception, match="failed to start") as caught:
        reward_model(model=str(tmp_path))
    assert "Error" in str(caught.value)  # the host's traceback tail is in the message


def weight_mappers(folder: Path) -> set[int]:
    """Processes that have the model's weights file mapped (transformers maps it to load)."""
    weights = str(folder / "model.safetensors")
    found = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/maps") as maps:
                if any(line.rstrip().endswith(weights) for line in maps):
                    found.add(int(pid))
        except OSError:
            continue
    return found


@pytest.fixture
def own_rm(tiny_rm: Path, tmp_path: Path) -> Path:
    """A copy of the tiny RM that no other test's host or server maps, so counting the
    processes that map its weights counts this test's loads alone."""
    return Path(shutil.copytree(tiny_rm, tmp_path / "rm"))


def test_engine_two_workers_one_model_load(own_rm: Path) -> None:
    spec = {
        "rewards": {"rm": {"type": "reward_model", "model": str(own_rm), "batch_size": 4}},
        "timeout_s": 60,
    }
    batch = samples() * 4
    batch = [s.model_copy(update={"id": f"{s.id}-{k}"}) for k, s in enumerate(batch)]
    with Engine(spec, workers=2) as engine:
        results = engine.score(batch)
        workers = [w.process.pid for w in engine.pool._workers]  # type: ignore[attr-defined]
        mappers = weight_mappers(own_rm)
    assert [r.id for r in results] == [s.id for s in batch]
    assert all(r.status == "ok" for r in results), [r.components for r in results]
    assert len(mappers) == 1  # the model host: loaded once for the node
    assert not mappers & {os.getpid(), *workers}
    direct = reward_model(model=str(own_rm))
    for result, sample in zip(results, batch, strict=True):
        assert result.reward == pytest.approx(direct(sample).score, abs=1e-5)


def gone(pid: int) -> None:
    """Wait until `pid` has exited with all its threads (reaped, or a zombie with no other
    thread left). A killed process's main thread turns zombie while its other threads may
    still be exiting, and they hold its files (the host's listening socket) until the last
    one is gone: a connection made then is accepted, then reset."""
    for _ in range(600):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                zombie = stat.read().split(") ", 1)[1].startswith("Z")
            if zombie and len(os.listdir(f"/proc/{pid}/task")) <= 1:
                return
        except FileNotFoundError:
            return
        time.sleep(0.1)
    raise AssertionError(f"process {pid} is still running")


def test_a_killed_host_is_an_error_then_comes_back(own_rm: Path) -> None:
    fn = reward_model(model=str(own_rm), template="none")
    assert fn(samples()[0]).status == "ok"
    [host] = weight_mappers(own_rm) - {os.getpid()}
    os.kill(host, signal.SIGKILL)
    failed = fn(samples()[1])
    gone(host)  # until then, its listening socket still accepts connections
    assert failed.status == "error" and "model host" in failed.detail["reason"]
    again = fn(samples()[2])  # the next sample starts a new host
    assert again.status == "ok", again.detail
    assert weight_mappers(own_rm) - {os.getpid(), host}


def test_hosts_live_in_a_private_folder() -> None:
    folder = socket_dir()
    assert folder.stat().st_uid == os.getuid()
    assert folder.stat().st_mode & 0o077 == 0


def test_per_group_zscore_and_par_shape_the_rm_score(tiny_rm: Path) -> None:
    spec = {
        "rewards": {
            "z": {
                "type": "reward_model",
                "model": str(tiny_rm),
                "template": "none",
                "transform": {"type": "mean_std"},
            },
            "par": {
                "type": "reward_model",
                "model": str(tiny_rm),
                "template": "none",
                "transform": {"type": "par"},
                "weight": 0.0,
            },
        },
        "timeout_s": 60,
    }
    batch = [
        Sample(
            id=str(j),
            prompt=PROMPTS[0],
            completion=c,
            group="g",
            metadata={"reference_rewards": [0.0, 0.1]},
        )
        for j, c in enumerate(COMPLETIONS)
    ]
    with Engine(spec, workers=1) as engine:
        results = engine.score(batch)
    raw = [r.components["z"].detail["raw_score"] for r in results]
    mean = sum(raw) / len(raw)
    std = math.sqrt(sum((x - mean) ** 2 for x in raw) / len(raw))
    for result, x in zip(results, raw, strict=True):
        assert result.components["z"].score == pytest.approx((x - mean) / (std + 1e-6))
        par = (1 / (1 + math.exp(-(x - 0.0))) + 1 / (1 + math.exp(-(x - 0.1)))) / 2
        assert result.components["par"].score == pytest.approx(par)
