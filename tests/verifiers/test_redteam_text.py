"""Red team (rt17) of the text and format rewards after issue #17: `f1`, `choice`, `regex`,
`think_format`, `json`, `length` and `repetition` (and `scope: turns`), `ifeval` / `ifbench`
with `training: true`, `constraints` and `majority_vote`.

One row per attack, written as a policy paid for every unit of reward would try it. Each row
computes what the attack earns and what an honest (wrong, or real) answer earns in the same
setting, and asserts what the attack *should* earn. `today` says what it earned when this
file was written. Rows marked `xfail(strict=True)` are open holes and flip loudly when fixed;
the others are attacks that fail today, kept against regressions. `closed` rows were holes
since fixed (fix17): `today` there says what the attack earned before the fix. Real data:
IFEval's and IFBench's prompts with their published responses, and GSM8K's first test
question.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import Message, Sample
from rewardsmith.selection._majority import majority_vote
from rewardsmith.turns import per_turn
from rewardsmith.verifiers.format import json_valid, think_format
from rewardsmith.verifiers.instructions import constraints, ifbench, ifeval
from rewardsmith.verifiers.instructions._text import pos_tagger
from rewardsmith.verifiers.length import length, repetition
from rewardsmith.verifiers.text import MAX_REGEX_CHARS, choice, f1, regex

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

Pair = tuple[float, float]
"""(what the attack earns, what the honest answer earns)."""


def sample(completion: Any, reference: Any = None, prompt: Any = None, **meta: Any) -> Sample:
    return Sample(id="s", completion=completion, reference=reference, prompt=prompt, metadata=meta)


def score(reward: Any, completion: Any, reference: Any = None, prompt: Any = None) -> float:
    result = reward(sample(completion, reference, prompt))
    assert result.status == "ok", result
    return result.score  # type: ignore[no-any-return]


def versus(reward: Any, attack: Any, honest: Any, reference: Any = None) -> Callable[[], Pair]:
    """A row comparing two completions under one reward."""
    return lambda: (score(reward, attack, reference), score(reward, honest, reference))


# -- f1: hedges the alternatives regex does not see -----------------------------------------

F1 = f1()


# -- IFEval / IFBench with training: true: a fixed string for every prompt ---------------------

LOREM = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor"
"""Twelve words of filler, no comma: content words (not filler, not the prompt's), more than
`min_words`, the same reply to every prompt."""


@cache
def _official(bench: str, key: int) -> tuple[str, dict[str, Any], str]:
    """The prompt, reference and published response of one IFEval / IFBench prompt."""
    if not (DATA / bench).exists():
        pytest.skip(f"no real data at {DATA}")
    if bench == "ifeval":
        inputs = "ifeval/input_data.jsonl"
        outputs = "ifeval/input_response_data_gpt4_20231107_145030.jsonl"
    else:
        inputs = "ifbench/IFBench_test.jsonl"
        outputs = "ifbench/sample_output.jsonl"
    rows = [json.loads(line) for line in (DATA / inputs).read_text().splitlines()]
    row = next(r for r in rows if str(r["key"]) == str(key))
    responses = {
        (r := json.loads(line))["prompt"]: r["response"]
        for line in (DATA / outputs).read_text().splitlines()
    }
    reference = {"instruction_id_list": row["instruction_id_list"], "kwargs": row["kwargs"]}
    return row["prompt"], reference, responses[row["prompt"]]


def _contentless(
    bench: str, key: int, reply: str, *, require_topic: bool = False
) -> Callable[[], Pair]:
    """`reply` against the published response on a real prompt, `training: true`."""

    def run() -> Pair:
        factory = ifeval if bench == "ifeval" else ifbench
        reward = factory(training=True, require_topic=require_topic)
        prompt, reference, real = _official(bench, key)
        return score(reward, reply, reference, prompt), score(reward, real, reference, prompt)

    return run


def _start_verb_cause() -> Pair:
    """IFBench's `words:start_verb` without NLTK's tagger data (which no PyPI package ships):
    every sample is `error` with `cause: completion`, so it is charged to the policy (under
    `whiten` without a baseline an all-failed group gets the batch's lowest advantage) for
    what the machine lacks. Missing data is the infrastructure's failure. 1.0 when the cause
    is `infrastructure`."""
    reference = {"instruction_id_list": ["words:start_verb"], "kwargs": [{}]}
    result = ifbench()(sample("Write the essay now, please.", reference))
    assert result.status == "error", result
    return float(result.cause == "infrastructure"), 0.0


# -- regex: an unclosed <think> commits to an empty answer, which a negative pattern accepts --

ASCII_ONLY = regex(pattern=r"[\x00-\x7F]*", mode="fullmatch")
"""A language-consistency rule as a spec author writes it: the answer is ASCII only."""


# -- repetition / length / turns -------------------------------------------------------------

LOOP = "the answer is 42. " * 200


def _invisible_loop() -> str:
    """`LOOP` with 0-3 zero-width spaces after each character (seeded): it reads the same,
    and almost every word, 16-character window and zlib match differs."""
    rng = random.Random(0)
    return "".join(ch + "\u200b" * rng.randint(0, 3) for ch in LOOP)


REPETITION = repetition()
WORDS_100 = length(max_length=100, cache_length=20, unit="words")
HONEST_200 = " ".join(["word"] * 200)


def _turn_dilution() -> Pair:
    """`scope: turns` averages per-turn scores, and the policy decides how many turns it
    takes: one 300-word turn plus nine "ok" turns pays a tenth of the overlong penalty."""
    reward = per_turn(length(max_length=100, cache_length=20, unit="words"))
    long = Message(role="assistant", content=" ".join(["word"] * 300))
    short = Message(role="assistant", content="ok")
    diluted = reward(sample([long] + [short] * 9)).score
    alone = reward(sample([long])).score
    return diluted, alone  # type: ignore[return-value]


# -- majority_vote (GSM8K test question 1, gold 18) -----------------------------------------


def _majority(completions: list[str]) -> list[float]:
    mv = majority_vote()
    samples = [Sample(id=str(i), completion=c, group="g") for i, c in enumerate(completions)]
    return [s.score for s in mv.group(samples, [mv(s) for s in samples])]  # type: ignore[misc]


def _majority_hedge(hedge: str) -> Callable[[], Pair]:
    """A hedge between the majority answer and another, beside an honest minority answer."""

    def run() -> Pair:
        scores = _majority(["\\boxed{18}", "\\boxed{18}", hedge, "\\boxed{20}"])
        return scores[2], scores[3]

    return run


# -- constraints / think_format / json guards -------------------------------------------------


def _blank_not_constraint() -> Pair:
    at_least_50 = {"not": {"id": "length_constraints:number_words",
                           "kwargs": {"relation": "less than", "num_words": 50}}}  # fmt: skip
    reward = constraints()
    honest = " ".join(["word"] * 49)
    return score(reward, "", at_least_50), score(reward, honest, at_least_50)


def _ifeval_training(reply: str) -> Callable[[], Pair]:
    return _contentless("ifeval", 1001, reply)


AT_MOST: Callable[[float, float], bool] = lambda attack, honest: attack <= honest + 1e-9  # noqa: E731
ZERO: Callable[[float, float], bool] = lambda attack, honest: attack == 0.0  # noqa: E731
POSITIVE: Callable[[float, float], bool] = lambda attack, honest: attack > honest  # noqa: E731
FULL_PENALTY: Callable[[float, float], bool] = lambda attack, honest: attack <= -0.9  # noqa: E731


def guard(name: str, attack: Callable[[], Pair], should: Any, today: str = "refused") -> Any:
    """An attack that fails today."""
    return pytest.param(name, attack, should, today, id=name)


def closed(name: str, attack: Callable[[], Pair], should: Any, today: str, reason: str) -> Any:
    """A hole since closed: `today` and `reason` say what the attack earned before the fix."""
    return pytest.param(name, attack, should, f"before the fix: {today}; {reason}", id=name)


F1_HEDGE = "f1: an answer offering alternatives is paid partial credit (README: such answers are 0)"
CHOICE_HEDGE = "choice: several letters score 1.0 (README: several letters are a hedge, 0)"
LOREM_WHY = (
    "training: true passes a fixed 12-word filler reply (lorem ipsum) on every prompt whose "
    "instructions it happens to follow: mean 0.26 on IFBench (real responses 0.28), 0.21 on "
    "IFEval, full marks on 70 IFBench and 58 IFEval prompts (closed with `require_topic: true`, "
    "which the README says costs 10 of 835 real responses)"
)

ROWS = [
    # f1
    closed(
        "f1_or_in_parentheses",
        versus(F1, "Paris (or London)", "London", "Paris"),
        ZERO,
        "0.5 vs 0.0",
        F1_HEDGE,
    ),
    closed(
        "f1_maybe",
        versus(F1, "Paris, maybe London", "London", "Paris"),
        ZERO,
        "0.5 vs 0.0",
        F1_HEDGE,
    ),
    closed(
        "f1_versus", versus(F1, "Paris vs London", "London", "Paris"), ZERO, "0.5 vs 0.0", F1_HEDGE
    ),
    closed(
        "f1_ampersand",
        versus(F1, "Paris & London", "London", "Paris"),
        ZERO,
        "0.667 vs 0.0",
        F1_HEDGE,
    ),
    closed(
        "f1_question_marks",
        versus(F1, "Paris? London?", "London", "Paris"),
        ZERO,
        "0.667 vs 0.0",
        F1_HEDGE,
    ),
    closed(
        "f1_newline_list",
        versus(F1, "Paris\nLondon", "London", "Paris"),
        ZERO,
        "0.667 vs 0.0",
        F1_HEDGE + " (a list on lines)",
    ),
    closed(
        "f1_comma_list_documented",
        versus(F1, "Paris, London", "London", "Paris"),
        ZERO,
        "0.667 vs 0.0",
        "f1: a plain list is paid 2/3 (documented in the README, still a "
        "hedge that beats a guess's expected 1/2)",
    ),
    closed(
        "f1_empty_vs_reference_of_articles",
        versus(F1, "", "Pixies", "The The"),
        ZERO,
        "1.0 vs 0.0",
        "f1: a reference that normalises to no tokens (TriviaQA's band "
        "'The The') pays the empty completion 1.0; it should be `invalid` or the empty "
        "answer 0",
    ),
    guard("f1_or", versus(F1, "Paris or London", "London", "Paris"), ZERO),
    guard("f1_slash", versus(F1, "Paris/London", "London", "Paris"), ZERO),
    guard("f1_semicolon", versus(F1, "Paris; London", "London", "Paris"), ZERO),
    # choice
    closed(
        "choice_zero_width_comma",
        versus(choice(), "Answer: B\u200b, C", "Answer: C", "B"),
        ZERO,
        "1.0 vs 0.0",
        CHOICE_HEDGE + " (U+200B before the comma)",
    ),
    closed(
        "choice_en_dash",
        versus(choice(), "Answer: B\u2013D", "Answer: C", "B"),
        ZERO,
        "1.0 vs 0.0",
        CHOICE_HEDGE,
    ),
    closed(
        "choice_ideographic_comma",
        versus(choice(), "Answer: B\u3001C", "Answer: C", "B"),
        ZERO,
        "1.0 vs 0.0",
        CHOICE_HEDGE,
    ),
    closed(
        "choice_juxtaposed",
        versus(choice(), "Answer: (B) (C)", "Answer: C", "B"),
        ZERO,
        "1.0 vs 0.0",
        CHOICE_HEDGE,
    ),
    closed(
        "choice_labelled_line_hedge",  # found by the regex audit (redos)
        versus(choice(), "(B) or (C)?", "Answer: C", "B"),
        ZERO,
        "1.0 vs 0.0",
        CHOICE_HEDGE,
    ),
    closed(
        "choice_though",
        versus(choice(), "The answer is B, though C", "Answer: C", "B"),
        ZERO,
        "1.0 vs 0.0",
        CHOICE_HEDGE,
    ),
    guard("choice_comma", versus(choice(), "Answer: B, C", "Answer: C", "B"), ZERO),
    guard("choice_two_boxes", versus(choice(), "\\boxed{B}\\boxed{C}", "Answer: C", "B"), ZERO),
    guard("choice_and_or", versus(choice(), "Answer: B and/or C", "Answer: C", "B"), ZERO),
    guard("choice_or_bold", versus(choice(), "Answer: **B** (or **C**)", "Answer: C", "B"), ZERO),
    # regex
    closed(
        "regex_unclosed_think",
        versus(ASCII_ONLY, "<think> \u8fd9\u662f\u4e2d\u6587", "The answer is \u4e2d\u6587"),
        ZERO,
        "1.0 vs 0.0",
        "regex: an unclosed <think> makes the answer part empty, and an empty "
        "answer satisfies any negative (must-not-contain) pattern",
    ),
    guard("regex_over_limit", versus(regex(pattern="a"), "a" * (MAX_REGEX_CHARS + 1), "b"), ZERO),
    # json
    closed(
        "json_email_format",
        versus(json_valid(schema={"type": "string", "format": "email"}), '"@"', '"not an email"'),
        ZERO,
        "1.0 vs 0.0",
        "json: `format: email` is jsonschema's check `'@' in value`: \"@\" passes (README: "
        "format keywords are checked)",
    ),
    guard("json_deep", versus(json_valid(), "[" * 100_000 + "]" * 100_000, "{"), ZERO),
    guard("json_nan", versus(json_valid(), "NaN", "{"), ZERO),
    # think_format
    *[
        guard(f"think_invisible_{i}", versus(think_format(), f"<think>{c}</think>{c}", "x"), ZERO)
        for i, c in enumerate(["\u200b", "\u3164", "\u034f", "\u2800", ".", "\u00ad", "\u115f"])
    ],
    # repetition
    closed(
        "repetition_zero_width_loop",
        versus(REPETITION, _invisible_loop(), LOOP),
        FULL_PENALTY,
        "-0.05 vs the visible loop's -1.0",
        "repetition: zero-width characters "
        "inside a loop defeat all three measures (strip default-ignorable code points "
        "before measuring)",
    ),
    guard("repetition_hmm", versus(REPETITION, "hmm" * 2000, "x"), FULL_PENALTY),
    guard(
        "repetition_counter",
        versus(REPETITION, " ".join(f"the answer {i}" for i in range(600)), "x"),
        FULL_PENALTY,
    ),
    # length (unit: words) and turns
    closed(
        "length_words_punctuation_padding",
        versus(WORDS_100, "answer " + "." * 100_000, HONEST_200),
        AT_MOST,
        "0.0 vs -1.0",
        "length: 100,000 '.' (or emoji) count as no words: symbol runs cost nothing under "
        "unit: words",
    ),
    closed(
        "length_words_emoji_padding",
        versus(WORDS_100, "answer " + "\U0001f642" * 5000, HONEST_200),
        AT_MOST,
        "0.0 vs -1.0",
        "length: emoji count as no words",
    ),
    closed(
        "turns_dilute_penalty",
        _turn_dilution,
        AT_MOST,
        "-0.1 vs -1.0",
        "scope: turns averages, so nine 'ok' turns cut an overlong turn's penalty tenfold",
    ),
    guard(
        "length_zero_width_joined",
        versus(WORDS_100, "\u200b".join(["word"] * 200), HONEST_200),
        AT_MOST,
    ),
    guard("length_cjk", versus(WORDS_100, "\u5b57" * 2100, HONEST_200), AT_MOST),
    # IFEval / IFBench / constraints
    closed(
        "ifeval_1001_lorem",
        _contentless("ifeval", 1001, LOREM, require_topic=True),
        ZERO,
        "1.0 vs GPT-4's itinerary 0.0",
        LOREM_WHY,
    ),
    closed(
        "ifeval_1092_lorem",
        _contentless("ifeval", 1092, LOREM, require_topic=True),
        ZERO,
        "1.0 vs GPT-4's blog post 0.0",
        LOREM_WHY,
    ),
    closed(
        "ifbench_48_lorem_vacuous",
        _contentless("ifbench", 48, LOREM, require_topic=True),
        ZERO,
        "1.0 vs the real screenplay 0.0 ('every 29th word in Japanese' is vacuous in 12 words)",
        LOREM_WHY,
    ),
    guard("ifeval_training_ok", _ifeval_training("OK"), ZERO),
    guard("ifeval_training_zero_width", _ifeval_training("\u200b"), ZERO),
    guard(
        "ifeval_training_restated",
        _ifeval_training("planning trip Japan itinerary journey Shakespearean style"),
        ZERO,
    ),
    guard("constraints_blank_under_not", _blank_not_constraint, AT_MOST),
    # majority_vote
    guard("majority_two_boxes", _majority_hedge("\\boxed{18} or maybe \\boxed{20}"), AT_MOST),
    guard("majority_or_in_box", _majority_hedge("\\boxed{18 \\text{ or } 20}"), AT_MOST),
    guard("majority_set_in_box", _majority_hedge("\\boxed{\\{18, 20\\}}"), AT_MOST),
]

if pos_tagger() is None:
    ROWS.append(
        closed(
            "ifbench_missing_tagger_charged",
            _start_verb_cause,
            POSITIVE,
            "status error, cause completion",
            "a checker's missing local data (NLTK tagger) "
            "is charged to the completion instead of the infrastructure",
        ),
    )


@pytest.mark.parametrize(("name", "attack", "should", "today"), ROWS)
def test_redteam_text(
    name: str, attack: Callable[[], Pair], should: Callable[[float, float], bool], today: str
) -> None:
    earned, honest = attack()
    assert should(earned, honest), f"{name}: attack earns {earned}, honest {honest} ({today})"
