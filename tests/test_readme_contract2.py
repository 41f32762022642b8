"""The README as a contract (second audit): "Model rewards", "Test-time selection", "Training
with it", "Many machines: Ray", "How it runs" and "The command line", claim by claim, where no
other test pins the claim. Each test names the README sentence it checks.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .engine import test_cli as engine_cli

ROOT = Path(__file__).resolve().parents[1]
MATH_SPEC = "rewards:\n  correct: {type: math, weight: 1.0}\ntimeout_s: 5\n"
BROKEN_GROUP = "tests.selection.group_rewards_for_tests:broken"


def run_cli(*args: str, stdin: Any = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return engine_cli.run_cli(*args, stdin=stdin, timeout=timeout, workers=1)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- "## Model rewards": the parameter table and the shared parameters ---------------------------


def _defaults(fn: Any) -> dict[str, Any]:
    target = inspect.unwrap(fn)
    return {
        name: p.default
        for name, p in inspect.signature(target).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def test_model_reward_table_defaults_are_the_code_defaults() -> None:
    """README "Model rewards" table: `strip_think: true`, `max_length: 4096`, `label: 0`,
    `separator: "\\n\\n"`, `max_steps: 32`, `step_tag: <extra_0>`, `positive: 1`,
    `strip_think: false` (process), `max_length: 256` (similarity), `marker: <answer>`,
    `floor: -30`, `deadline_s: 50`, `n_ctx: 2048`; the first value listed is the default."""
    pytest.importorskip("transformers")
    from rewardsmith.reward_models._likelihood import likelihood
    from rewardsmith.reward_models._process import process
    from rewardsmith.reward_models._scalar import reward_model
    from rewardsmith.reward_models._similarity import similarity

    rm = _defaults(reward_model)
    assert {k: rm[k] for k in ("backend", "endpoint", "template", "normalize")} == {
        "backend": "transformers",
        "endpoint": "classify",
        "template": "model",
        "normalize": "raw",
    }
    assert (rm["strip_think"], rm["max_length"], rm["label"]) == (True, 4096, 0)
    prm = _defaults(process)
    assert (prm["backend"], prm["separator"], prm["aggregate"]) == ("transformers", "\n\n", "min")
    assert (prm["max_steps"], prm["step_tag"], prm["positive"]) == (32, "<extra_0>", 1)
    assert (prm["strip_think"], prm["max_length"]) == (False, 4096)
    sim = _defaults(similarity)
    assert (sim["model"], sim["threshold"], sim["extract"], sim["prompt"]) == (
        None,
        None,
        "answer",
        "discount",
    )
    assert sim["max_length"] == 256
    lik = _defaults(likelihood)
    assert (lik["backend"], lik["runtime"], lik["marker"], lik["mode"]) == (
        "local",
        "transformers",
        "<answer>",
        "prob",
    )
    assert (lik["floor"], lik["deadline_s"], lik["n_ctx"]) == (-30.0, 50.0, 2048)


def test_model_reward_shared_parameter_defaults() -> None:
    """README: "`reward_model`, `process` and `similarity` also take `batch_size` (8; 32 for
    `similarity`), `device` (`cpu`), `dtype` (`auto`), `threads`, `load_timeout_s` (300) and
    `deadline_s` (50), and for servers `api_key_env` (`REWARDSMITH_RM_API_KEY`),
    `max_concurrency` (8), `request_timeout_s` (20) and `max_retries` (3)"."""
    pytest.importorskip("transformers")
    from rewardsmith.reward_models._process import process
    from rewardsmith.reward_models._scalar import reward_model
    from rewardsmith.reward_models._similarity import similarity

    common = {
        "device": "cpu",
        "dtype": "auto",
        "threads": None,
        "load_timeout_s": 300.0,
        "deadline_s": 50.0,
    }
    servers = {
        "api_key_env": "REWARDSMITH_RM_API_KEY",
        "max_concurrency": 8,
        "request_timeout_s": 20.0,
        "max_retries": 3,
    }
    for fn, batch in ((reward_model, 8), (process, 8), (similarity, 32)):
        found = _defaults(fn)
        assert found["batch_size"] == batch, fn
        assert {k: found[k] for k in common} == common, fn
    for fn in (reward_model, process):
        found = _defaults(fn)
        assert {k: found[k] for k in servers} == servers, fn


def test_identical_inputs_are_kept_in_an_lru_of_4096() -> None:
    """README: "Identical inputs are computed once per worker process (an LRU of 4,096
    outputs)"."""
    from rewardsmith.reward_models import _ahead

    assert _ahead._KEEP == 4_096
    ahead = _ahead.Ahead()
    for i in range(4_100):
        ahead._put(i, True, i)
    assert len(ahead._done) == 4_096 and 0 not in ahead._done and 4_099 in ahead._done


@pytest.fixture(scope="module")
def tiny_rm_folder(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("transformers")
    from rewardsmith.reward_models import stop_hosts

    from .reward_models.tiny_models import save_reward_model

    yield save_reward_model(tmp_path_factory.mktemp("rm"))
    stop_hosts()


@pytest.mark.filterwarnings("ignore:.*BOS token:UserWarning")
@pytest.mark.parametrize("options", [{"label": 3}, {"normalize": "softmax"}])
def test_a_setting_the_model_cannot_serve_is_not_charged_to_the_completion(
    tiny_rm_folder: Path, options: dict[str, Any]
) -> None:
    """README: "a `label` the model does not have and `normalize: softmax` on a one-label
    model are the spec's doing, `error` with `cause: infrastructure` for every sample"."""
    from rewardsmith import Sample
    from rewardsmith.reward_models import reward_model

    try:
        fn = reward_model(model=str(tiny_rm_folder), **options)
    except ValueError:
        return  # refused at load: the claim holds
    score = fn(Sample(id="a", prompt="What is 2 + 2 ?", completion="The answer is 4 ."))
    assert score.status == "error"
    assert score.cause != "completion"


@pytest.mark.filterwarnings("ignore:.*BOS token:UserWarning")
def test_special_tokens_rebuilt_by_a_removal_are_removed_too(tiny_rm_folder: Path) -> None:
    """README: "`<|im_<|im_end|>end|>` loses both, so a string rebuilt by a removal is
    removed too ... (`detail.special_tokens_removed` counts the removals)"."""
    from rewardsmith import Sample
    from rewardsmith.reward_models import reward_model

    fn = reward_model(model=str(tiny_rm_folder))
    score = fn(Sample(id="a", prompt="What is 2 + 2 ?", completion="4 <|im_<|im_end|>end|> ."))
    assert score.status == "ok" and score.detail["special_tokens_removed"] == 2


# -- "## Test-time selection" -------------------------------------------------------------------


def test_selection_caps_are_the_readme_numbers() -> None:
    """README: "At most 8 x (votes with an answer) comparisons per group ... stop after 3 s in all
    (`GROUP_TIME_LIMIT_S`)"."""
    from rewardsmith.selection import GROUP_TIME_LIMIT_S, METHODS
    from rewardsmith.selection._clusters import MAX_COMPARISONS_PER_VOTE

    assert (MAX_COMPARISONS_PER_VOTE, GROUP_TIME_LIMIT_S) == (8, 3.0)
    prm = {f"prm_{a}_{m}" for a in ("min", "last", "prod", "mean") for m in ("max", "vote")}
    assert set(METHODS) == {"majority", "best_of_n", "weighted_majority", "oracle", *prm}


def test_select_cli_groups_output_and_json_keys(tmp_path: Path) -> None:
    """README: "a candidate without `group` is a group of its own, even when another shares
    its id. One line out per group, in input order ... A malformed input line is reported and
    skipped", and `--json` writes `{"groups", "method", "cluster", "k", "accuracy", "pass@1",
    "mean_accuracy", "maj@k", "pass@k", "graded"}`."""
    rows = [
        {"id": "a", "completion": "\\boxed{1}", "reference": "1"},
        {"id": "a", "completion": "\\boxed{2}", "reference": "1"},
    ]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    with source.open("a") as handle:
        handle.write("not json\n")
        handle.write(json.dumps({"id": "c", "group": "g", "completion": "\\boxed{1}"}) + "\n")
        handle.write(json.dumps({"id": "d", "group": "g", "completion": "\\boxed{1}"}) + "\n")
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    done = run_cli(
        "select", "--input", str(source), "--output", str(out), "--method", "majority",
        "--json", str(summary), "--quiet",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "line 3" in done.stderr
    lines = read_jsonl(out)
    assert [(line["group"], line["id"], line["answer"]) for line in lines] == [
        (None, "a", "1"),
        (None, "a", "2"),
        ("g", "c", "1"),
    ]
    for line in lines:
        assert {"group", "id", "answer", "method", "score", "correct", "reason"} <= set(line)
        assert {"clusters", "no_answer"} <= set(line)
    assert set(json.loads(summary.read_text())) == {
        "groups", "method", "cluster", "k", "accuracy", "pass@1", "mean_accuracy", "maj@k",
        "pass@k", "graded",
    }  # fmt: skip


def test_convert_qwen_math_maps_the_readme_columns(tmp_path: Path) -> None:
    """README: "`reference` is the gold `answer` (else `gt`), and `metadata` holds `k`, Qwen's
    extracted `pred`, its verdict `qwen_correct` (`score`) and the reward model's `rm_score`
    (`pred_score`), when present", one sample per solution, grouped by problem."""
    row = {
        "idx": 7,
        "question": "q",
        "gt": "5",
        "code": ["a", "b"],
        "pred": ["5", "6"],
        "score": [True, False],
        "pred_score": [[0.5], [-1.0]],
    }
    source = write_jsonl(tmp_path / "qwen.jsonl", [row])
    out = tmp_path / "out.jsonl"
    done = run_cli("convert", "qwen-math", str(source), str(out))
    assert done.returncode == 0, done.stderr
    samples = read_jsonl(out)
    assert [(s["group"], s["reference"], s["completion"]) for s in samples] == [
        ("7", "5", "a"),
        ("7", "5", "b"),
    ]
    assert samples[1]["metadata"] == {
        "k": 1,  # the solution's 0-based index among the problem's k solutions
        "pred": "6",
        "qwen_correct": False,
        "rm_score": -1.0,
    }


# -- "## The command line" ----------------------------------------------------------------------


def test_resume_needs_regular_files_and_stdin_is_refused(tmp_path: Path) -> None:
    """README: "`--resume` ... needs `--input` and `--output` to be regular files (else exit
    code 2)"."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(MATH_SPEC)
    source = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "completion": "1"}])
    out = tmp_path / "out.jsonl"
    with source.open("rb") as stdin:
        done = run_cli(
            "score", "--spec", str(spec), "--input", "-", "--output", str(out), "--resume",
            stdin=stdin,
        )  # fmt: skip
    assert done.returncode == 2 and "regular files" in done.stderr
    assert not out.exists()


def test_a_refused_resume_leaves_the_output_as_it_was(tmp_path: Path) -> None:
    """README: "an output of another input, or of the same samples in another order, is
    refused (exit code 2) and the output is left as it was: nothing is cut, scored or
    appended" (here with a partly written last line, which an accepted resume would cut)."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(MATH_SPEC)
    rows = [{"id": str(i), "completion": f"\\boxed{{{i}}}", "reference": "1"} for i in range(3)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    other = write_jsonl(tmp_path / "other.jsonl", list(reversed(rows)))
    out = tmp_path / "out.jsonl"
    assert run_cli("score", "--spec", str(spec), "--input", str(source), "--output", str(out),
                   "--quiet").returncode == 0  # fmt: skip
    text = out.read_text()
    out.write_text(text[: len(text) - 20])  # the last line partly written
    before = out.read_bytes()
    done = run_cli(
        "score", "--spec", str(spec), "--input", str(other), "--output", str(out), "--resume",
        "--quiet",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert out.read_bytes() == before


def test_whole_input_whitening_warns_and_cannot_resume(tmp_path: Path) -> None:
    """README: "`--group-transform` ... one that normalises over the whole input (`whiten`,
    and `gdpo`'s default batch whitening, without `batch_size`) prints a warning", and "A
    group transform that whitens over a batch ..., `batch_size` or not, cannot be resumed:
    `--resume` on an output that already has results refuses it (exit code 2)"."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(MATH_SPEC)
    rows = [
        {"id": str(i), "group": "g", "completion": f"\\boxed{{{i}}}", "reference": "1"}
        for i in range(3)
    ]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    done = run_cli("score", "--spec", str(spec), "--input", str(source), "--output", str(out),
                   "--group-transform", "whiten", "--quiet")  # fmt: skip
    assert done.returncode == 0 and "warning" in done.stderr
    out.write_text(out.read_text().splitlines(keepends=True)[0])
    before = out.read_bytes()
    for transform in ("whiten", "{type: whiten, batch_size: 2}", "gdpo"):
        done = run_cli("score", "--spec", str(spec), "--input", str(source), "--output",
                       str(out), "--group-transform", transform, "--resume", "--quiet")  # fmt: skip
        assert done.returncode == 2, (transform, done.stderr)
        assert out.read_bytes() == before


# -- "## Training with it" ----------------------------------------------------------------------


def test_remote_adapter_retry_policy_is_the_readme_numbers() -> None:
    """README: "a request is sent again only when no answer to it arrived ... or the answer
    was 503 (queue full), with backoff (0.1 s, doubling to 5 s, at most 6 retries) within a
    deadline of 600 s per call"."""
    from rewardsmith.integrations import _remote

    assert (_remote.BACKOFF_S, _remote._MAX_BACKOFF_S) == (0.1, 5.0)
    assert (_remote.RETRIES, _remote.DEADLINE_S) == (6, 600.0)
    assert (_remote.URL_ENV, _remote.TOKEN_ENV) == ("REWARDSMITH_URL", "REWARDSMITH_TOKEN")


def test_remote_answer_cap_is_the_readme_numbers() -> None:
    """README: "An answer's body is read up to 64 MiB ... or four times the request's size
    when that is more"."""
    from rewardsmith.integrations import _remote

    assert _remote.MAX_ANSWER_BYTES == 64 * 2**20


def test_trl_maps_the_gold_column_ids_and_step() -> None:
    """README (TRL): "The dataset's gold column (`reference`, `ground_truth`, `answer`,
    `solution` or `label`) becomes the reference, other columns go to `metadata`,
    `completion_ids` to `metadata.completion_ids` ..., and TRL's global step to
    `metadata.step`. Multimodal messages keep their text and `image_url` parts; TRL's
    `{"type": "image"}` placeholders ... are dropped"."""
    from types import SimpleNamespace

    from rewardsmith.integrations.trl import samples_from_trl
    from rewardsmith.models import Sample

    prompt = [
        {
            "role": "user",
            "content": [
                {"type": "image"},
                {"type": "text", "text": "hi"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
            ],
        }
    ]
    for gold in ("reference", "ground_truth", "answer", "solution", "label"):
        [row] = samples_from_trl(
            [prompt],
            ["\\boxed{1}"],
            [[5, 6]],
            {gold: ["1"], "extra": [9], "trainer_state": SimpleNamespace(global_step=4)},
        )
        sample = Sample.model_validate({**row, "id": "a"})
        assert sample.reference == "1", gold
        assert sample.metadata["extra"] == 9
        assert (sample.metadata["completion_ids"], sample.metadata["step"]) == ([5, 6], 4)
        assert [part.type for part in sample.prompt[0].content] == ["text", "image_url"]


# -- "## Many machines: Ray" and "## How it runs" -----------------------------------------------


def test_the_stream_window_and_the_ray_poll_are_the_readme_numbers() -> None:
    """README: "The input of a stream ... is read with at most 4,096 samples not yet scored";
    "(the Ray backend ... looks for new samples every 10 ms while actors are busy)"."""
    from rewardsmith.engine import _engine, _ray

    assert _engine._WINDOW == 4_096
    assert inspect.signature(_engine.Engine).parameters["window"].default == 4_096
    assert _ray._WAKE_S == 0.01


def test_ray_ignores_rewardsmith_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """README: "Rewards run on Ray actors, one per CPU of the cluster by default (`--workers
    N`; `REWARDSMITH_WORKERS` does not apply)"; "`--ray-address ADDR` (or `RAY_ADDRESS`) joins
    a cluster, otherwise a local one starts". A stand-in `ray` module records what the pool
    asks of it."""
    import types

    from rewardsmith.engine import _ray

    calls: dict[str, Any] = {}

    class Handle:
        def __getattr__(self, name: str) -> Any:
            return types.SimpleNamespace(remote=lambda *a, **k: name)

    fake = types.ModuleType("ray")
    fake.is_initialized = lambda: False  # type: ignore[attr-defined]
    fake.init = lambda **kw: calls.setdefault("init", kw)  # type: ignore[attr-defined]
    fake.cluster_resources = lambda: {"CPU": 3.0}  # type: ignore[attr-defined]
    fake.remote = lambda **kw: (  # type: ignore[attr-defined]
        lambda cls: types.SimpleNamespace(remote=lambda *a: Handle())
    )
    fake.get = lambda refs, timeout=None: [True for _ in refs]  # type: ignore[attr-defined]
    fake.kill = lambda *a, **k: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setenv("REWARDSMITH_WORKERS", "7")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    pool = _ray.RayPool({}, None)
    assert pool.size == 3 and calls["init"]["address"] == "local"
    calls.clear()
    monkeypatch.setenv("RAY_ADDRESS", "head:6379")
    assert _ray.RayPool({}, 2).size == 2 and calls["init"]["address"] == "head:6379"


def test_a_group_step_that_raises_fails_the_whole_group_alike() -> None:
    """README: "A group step that raises makes that component `error` for the group, charged
    to the completions as any reward that raises is (`cause: completion`...)"."""
    from rewardsmith import Engine

    spec = {"rewards": {"b": {"type": BROKEN_GROUP}}}
    samples = [{"id": str(i), "group": "g", "completion": "x"} for i in range(2)]
    with Engine(spec, workers=1) as engine:
        results = engine.score(samples)
    assert [r.components["b"].status for r in results] == ["error", "error"]
    assert [r.components["b"].cause for r in results] == ["completion", "completion"]
