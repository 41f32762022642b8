"""Agreement with the official verdicts on the real data in ../shared/data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardsmith.models import Sample
from rewardsmith.verifiers.instructions import ifbench, ifeval

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
IFEVAL = DATA / "ifeval"
IFBENCH = DATA / "ifbench"

# words:start_verb needs NLTK's POS tagger data, which no PyPI package ships genuinely.
UNREPRODUCIBLE = {"words:start_verb"}
IFEVAL_RESPONSES = "input_response_data_gpt4_20231107_145030.jsonl"
TOPICLESS_IFEVAL = ["1418", "2035", "2100", "2359", "279", "2811", "2929", "3445", "3456", "3565"]
"""The real IFEval responses `training: true, require_topic: true` scores 0 (BENCHMARKS.md)."""


def _lines(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _cases(folder: Path, prompts: str, responses: str, verdicts: str) -> list[tuple]:
    answers: dict[str, str] = {}
    for row in _lines(folder / responses):
        answers[row["prompt"]] = row["response"]
        answers.setdefault(row["prompt"].strip(), row["response"])
    gold = {row["prompt"]: row["follow_instruction_list"] for row in _lines(folder / verdicts)}
    cases = []
    for row in _lines(folder / prompts):
        prompt = row["prompt"]
        sample = Sample(
            id=str(row["key"]),
            completion=answers.get(prompt, answers.get(prompt.strip())),
            reference={"instruction_id_list": row["instruction_id_list"], "kwargs": row["kwargs"]},
        )
        cases.append((sample, gold[prompt]))
    return cases


@pytest.mark.skipif(not IFEVAL.exists(), reason=f"no IFEval data at {IFEVAL}")
@pytest.mark.parametrize("mode", ["strict", "loose"])
def test_ifeval_matches_reference_verdicts(mode: str) -> None:
    cases = _cases(
        IFEVAL,
        "input_data.jsonl",
        "input_response_data_gpt4_20231107_145030.jsonl",
        f"reference_verdicts_{mode}.jsonl",
    )
    assert len(cases) == 541
    score = ifeval(mode=mode)
    disagree = []
    for sample, gold in cases:
        result = score(sample)
        assert result.status == "ok", (sample.id, result)
        if result.detail["follow_instruction_list"] != gold:
            disagree.append(sample.id)
    assert disagree == []


@pytest.mark.skipif(not IFBENCH.exists(), reason=f"no IFBench data at {IFBENCH}")
@pytest.mark.parametrize("mode", ["strict", "loose"])
def test_ifbench_matches_official_verdicts(mode: str) -> None:
    cases = _cases(
        IFBENCH, "IFBench_test.jsonl", "sample_output.jsonl", f"eval_results_{mode}.jsonl"
    )
    assert len(cases) == 294
    score = ifbench(mode=mode)
    disagree, unreproducible, compared = [], 0, 0
    for sample, gold in cases:
        result = score(sample)
        ids = sample.reference["instruction_id_list"]
        if UNREPRODUCIBLE & set(ids):
            # fails closed (status error), never a guessed verdict
            assert result.status == "error" and "averaged_perceptron_tagger" in str(result.detail)
            unreproducible += len(ids)
            continue
        assert result.status == "ok", (sample.id, result)
        compared += len(ids)
        if result.detail["follow_instruction_list"] != gold:
            disagree.append(sample.id)
    assert disagree == []
    assert unreproducible == 7  # 6 start_verb + 1 other id in the same prompt
    assert compared == 328


@pytest.mark.skipif(not IFBENCH.exists(), reason=f"no IFBench data at {IFBENCH}")
def test_langdetect_rs_gives_langdetect_results_on_the_real_responses() -> None:
    """We use langdetect-rs when installed only because it agrees with langdetect, bit for bit."""
    langdetect = pytest.importorskip("langdetect")
    langdetect_rs = pytest.importorskip("langdetect_rs")
    texts = [
        row["response"] for row in _lines(IFEVAL / "input_response_data_gpt4_20231107_145030.jsonl")
    ]
    texts += [row["response"] for row in _lines(IFBENCH / "sample_output.jsonl")]

    def detect_all(module) -> list[list[tuple[str, float]]]:
        factory = module.DetectorFactory()
        factory.load_profile(module.PROFILES_DIRECTORY)
        factory.seed = 0
        found = []
        for text in texts:
            detector = factory.create()
            detector.append(text)
            try:
                found.append([(p.lang, p.prob) for p in detector.get_probabilities()])
            except module.LangDetectException:
                found.append([])
        return found

    assert detect_all(langdetect_rs) == detect_all(langdetect)


def _training_cases(folder: Path, prompts: str, responses: str) -> list[tuple[dict, str]]:
    answers = {}
    for row in _lines(folder / responses):
        answers[row["prompt"]] = row["response"]
        answers.setdefault(row["prompt"].strip(), row["response"])
    rows = _lines(folder / prompts)
    return [(row, answers.get(row["prompt"], answers.get(row["prompt"].strip()))) for row in rows]


@pytest.mark.skipif(not IFBENCH.exists() or not IFEVAL.exists(), reason="no IFEval/IFBench data")
@pytest.mark.parametrize(
    ("factory", "folder", "prompts", "responses", "require_topic", "changed"),
    [
        (ifeval, IFEVAL, "input_data.jsonl", IFEVAL_RESPONSES, False, ["2359"]),
        (ifbench, IFBENCH, "IFBench_test.jsonl", "sample_output.jsonl", False, []),
        (ifeval, IFEVAL, "input_data.jsonl", IFEVAL_RESPONSES, True, TOPICLESS_IFEVAL),
        (ifbench, IFBENCH, "IFBench_test.jsonl", "sample_output.jsonl", True, ["88"]),
    ],
    ids=["ifeval", "ifbench", "ifeval-require_topic", "ifbench-require_topic"],
)
def test_training_option_pays_no_contentless_reply_and_keeps_real_responses(
    factory, folder, prompts, responses, require_topic, changed
) -> None:
    """Issue 17 item 7 on the real prompts: "", "OK", "\\u200b" and the instructions'
    keywords earn 0 on every prompt (up to 0.44 on average officially), while the real
    responses keep their official reward, but for IFEval 2359, which only repeats the
    request it was asked to repeat before answering. `require_topic` also takes the reward
    of 10 real responses whose words share no stem with the prompt's topic (a haiku about
    Ireland that never says "Ireland"): the price of refusing a fixed filler such as lorem
    ipsum (BENCHMARKS.md)."""
    official = factory()
    training = factory(training=True, require_topic=require_topic)
    moved = []
    for row, real in _training_cases(folder, prompts, responses):
        reference = {"instruction_id_list": row["instruction_id_list"], "kwargs": row["kwargs"]}
        keywords = " ".join(
            str(v) for kwargs in row["kwargs"] for k, v in kwargs.items() if "keyword" in k and v
        )
        for reply in ("", "OK", "\u200b", keywords):
            result = training(
                Sample(id="s", completion=reply, prompt=row["prompt"], reference=reference)
            )
            if UNREPRODUCIBLE & set(row["instruction_id_list"]):  # no tagger data: error
                assert result.status == "error", (row["key"], reply, result)
            else:
                assert (result.status, result.score) == ("ok", 0.0), (row["key"], reply, result)
        sample = Sample(id="s", completion=real, prompt=row["prompt"], reference=reference)
        before, after = official(sample), training(sample)
        if (before.status, before.score) != (after.status, after.score):
            moved.append(str(row["key"]))
    assert sorted(moved) == sorted(changed)
