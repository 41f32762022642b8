"""Each IFEval checker with a passing and a failing response, plus the evaluation edge cases."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rewardsmith import ConfigError
from rewardsmith.models import Sample
from rewardsmith.verifiers._words import as_read
from rewardsmith.verifiers.instructions import IFEVAL, constraints, ifbench, ifeval, loose_variants

from ._instruction_helpers import score_one

LONG = " ".join(["word"] * 120)
CASES = {
    "keywords:existence": ({"keywords": ["apple", "pear"]}, "An Apple and a pear.", "An apple."),
    "keywords:frequency": (
        {"keyword": "cat", "frequency": 2, "relation": "at least"}, "cat cat", "cat dog",
    ),
    "keywords:forbidden_words": ({"forbidden_words": ["bad"]}, "good badge", "a Bad day"),
    "keywords:letter_frequency": (
        {"letter": "z", "let_frequency": 2, "let_relation": "less than"}, "zoo", "zizz",
    ),
    "language:response_language": (
        {"language": "fr"},
        "Bonjour, je suis très heureux de vous voir aujourd'hui à Paris avec mes amis.",
        "Hello, I am very happy to see you today in London with my friends.",
    ),
    "length_constraints:number_sentences": (
        {"num_sentences": 2, "relation": "less than"}, "One sentence.", "One. Two. Three.",
    ),
    "length_constraints:number_paragraphs": (
        {"num_paragraphs": 2}, "First.\n***\nSecond.", "First.\n***\n***\nSecond.",
    ),
    "length_constraints:number_words": (
        {"num_words": 100, "relation": "at least"}, LONG, "too short",
    ),
    "length_constraints:nth_paragraph_first_word": (
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
        "Intro.\n\n\"Then, more.", "Intro.\n\nNow more.",
    ),
    "detectable_content:number_placeholders": (
        {"num_placeholders": 2}, "[name] at [address]", "[name] only",
    ),
    "detectable_content:postscript": ({"postscript_marker": "P.S."}, "Hi.\np.s. bye", "Hi."),
    "detectable_format:number_bullet_lists": (
        {"num_bullets": 2}, "* one\n- two", "* one\n* two\n* three",
    ),
    "detectable_format:constrained_response": ({}, "My answer is yes.", "Yes."),
    "detectable_format:number_highlighted_sections": (
        {"num_highlights": 2}, "*one* and **two**", "*one* only",
    ),
    "detectable_format:multiple_sections": (
        {"section_spliter": "Section", "num_sections": 2},
        "Section 1\na\nSection 2\nb", "Section 1\na",
    ),
    "detectable_format:json_format": ({}, '```json\n{"a": 1}\n```', "{a: 1}"),
    "detectable_format:title": ({}, "<<My Title>>\ntext", "<< >> text"),
    "combination:two_responses": ({}, "one\n******\ntwo", "same\n******\nsame"),
    "combination:repeat_prompt": (
        {"prompt_to_repeat": "Say hi."}, "say hi. Hi!", "Hi! Say hi.",
    ),
    "startend:end_checker": (
        {"end_phrase": "Any other questions?"},
        "Done. Any other questions?",
        "Any other questions? Done.",
    ),
    "startend:quotation": ({}, '"quoted"', 'not "quoted"'),
    "change_case:capital_word_frequency": (
        {"capital_frequency": 2, "capital_relation": "at least"}, "THE BIG dog", "The BIG dog",
    ),
    "change_case:english_capital": (
        {}, "THIS IS AN ENGLISH SENTENCE ABOUT THE WEATHER TODAY.", "This is mixed case.",
    ),
    "change_case:english_lowercase": (
        {}, "this is an english sentence about the weather today.", "This Is Not.",
    ),
    "punctuation:no_comma": ({}, "no commas here", "a, b"),
}  # fmt: skip


def _score(instruction_id: str, kwargs: dict, text: str, mode: str = "strict"):
    return score_one(ifeval(mode=mode), instruction_id, kwargs, text)


def test_every_checker_has_a_case() -> None:
    assert set(CASES) == set(IFEVAL) and len(IFEVAL) == 25


@pytest.mark.parametrize("instruction_id", sorted(CASES))
def test_checker_pass_and_fail(instruction_id: str) -> None:
    kwargs, good, bad = CASES[instruction_id]
    assert _score(instruction_id, kwargs, good).detail["follow_instruction_list"] == [True]
    assert _score(instruction_id, kwargs, bad).detail["follow_instruction_list"] == [False]


@pytest.mark.parametrize(
    ("instruction_id", "kwargs"),
    [
        ("nope:unknown", {}),
        ("keywords:frequency", {"keyword": "cat", "relation": "at least"}),  # would be random
        ("keywords:frequency", {"keyword": "cat", "frequency": 2, "relation": "about"}),
        ("length_constraints:nth_paragraph_first_word",
         {"num_paragraphs": 2, "nth_paragraph": 3, "first_word": "x"}),
        ("keywords:letter_frequency",
         {"letter": "ab", "let_frequency": 1, "let_relation": "at least"}),
        ("punctuation:no_comma", {"surprise": 1}),
        ("language:response_language", {"language": "klingon"}),
    ],
)  # fmt: skip
def test_bad_ids_and_kwargs_fail_closed(instruction_id: str, kwargs: dict) -> None:
    result = _score(instruction_id, kwargs, "any text")
    assert result.status == "invalid" and result.score is None
    assert instruction_id.split(":")[0] in result.detail["reason"]


def test_blank_response_never_follows() -> None:
    # "no comma" trivially holds on blank text, but the official evaluation says no.
    assert _score("punctuation:no_comma", {}, "   \n").detail["follow_instruction_list"] == [False]


def test_repeated_instruction_ids_are_kept() -> None:
    sample = Sample(
        id="r",
        completion="a, b",
        reference={
            "instruction_id_list": ["punctuation:no_comma", "detectable_format:title",
                                    "punctuation:no_comma"],
            "kwargs": [{}, {}, {}],
        },
    )  # fmt: skip
    result = ifeval()(sample)
    assert result.detail["instruction_id_list"] == [
        "punctuation:no_comma", "detectable_format:title", "punctuation:no_comma",
    ]  # fmt: skip
    assert result.detail["follow_instruction_list"] == [False, False, False]
    assert result.score == 0.0


def test_loose_variants_are_the_official_eight() -> None:
    variants = loose_variants("Sure!\n*Body* text\nBye")
    assert variants == [
        "Sure!\n*Body* text\nBye", "Sure!\nBody text\nBye", "*Body* text\nBye",
        "Sure!\n*Body* text", "*Body* text", "Body text\nBye", "Sure!\nBody text", "Body text",
    ]  # fmt: skip


def test_loose_builds_each_check_once_and_tries_every_variant(monkeypatch) -> None:
    built = []
    original = IFEVAL["detectable_format:title"]

    def counting(kw):
        built.append(kw)
        return original(kw)

    monkeypatch.setitem(IFEVAL, "detectable_format:title", counting)
    text = "Here is your poem:\n<<Title>>"
    assert _score("detectable_format:title", {}, text, "loose").detail[
        "follow_instruction_list"
    ] == [True]
    assert len(built) == 1


def test_loose_drops_intro_line() -> None:
    text = "Sure, here you go:\nno commas in here"
    assert _score("punctuation:no_comma", {}, text).detail["follow_instruction_list"] == [False]
    assert _score("punctuation:no_comma", {}, text, "loose").detail["follow_instruction_list"] == [
        True
    ]


def test_reward_all_and_fraction() -> None:
    sample = Sample(
        id="f",
        completion="no commas",
        reference='{"instruction_id_list": ["punctuation:no_comma", "detectable_format:title"],'
        ' "kwargs": [{}, {}]}',
    )
    assert ifeval()(sample).score == 0.5
    assert ifeval(reward="all")(sample).score == 0.0


def test_missing_reference_is_not_applicable() -> None:
    assert ifeval()(Sample(id="n", completion="x")).status == "not_applicable"


def test_import_loads_no_nltk_and_downloads_nothing() -> None:
    code = (
        "import sys, socket\n"
        "def _no_network(*args, **kwargs):\n"
        "    raise AssertionError('network used')\n"
        "socket.socket.connect = _no_network\n"
        "socket.create_connection = _no_network\n"
        "import rewardsmith.verifiers.instructions as I\n"
        "assert not [m for m in sys.modules if m.startswith(('nltk', 'langdetect'))]\n"
        "from rewardsmith.models import Sample\n"
        "s = Sample(id='1', completion='One. Two.', reference={'instruction_id_list':"
        " ['length_constraints:number_sentences', 'language:response_language'],"
        " 'kwargs': [{'num_sentences': 2, 'relation': 'at least'}, {'language': 'en'}]})\n"
        "r = I.ifeval()(s)\n"
        "assert r.status == 'ok', r\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_training_example_spec_scores_contentless_replies_zero() -> None:
    """examples/ifeval_spec.yaml documents `training: true` as the setting to train with."""
    from pathlib import Path

    from rewardsmith import load_spec

    spec = load_spec(str(Path(__file__).resolve().parents[2] / "examples" / "ifeval_spec.yaml"))
    reward = spec.rewards["instructions"].build()
    reference = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    prompt = "Write a short story about a lighthouse. Do not use any commas."
    story = "The keeper lit the lighthouse lamp at dusk and watched the ships pass the rocks."
    filler = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor"
    for reply, expected in [("OK", 0.0), ("\u200b", 0.0), (filler, 0.0), (story, 1.0)]:
        result = reward(Sample(id="s", completion=reply, prompt=prompt, reference=reference))
        assert (result.status, result.score) == ("ok", expected), reply


# Bullets were counted with `^\s*` from every line start, which read each run of blank lines
# again from each of its lines: quadratic (20,000 characters of blank lines took 0.3 s).
@pytest.mark.parametrize(
    ("text", "followed"),
    [
        ("* one" + "\n \t" * 7_000 + "\n* two", True),
        ("\n" * 20_000 + "- one\n\n\n- two", True),
        ("* one" + "\n" * 20_000 + "x", False),
    ],
    ids=["stars across blank lines", "dashes after blank lines", "one bullet"],
)
def test_bullets_across_long_blank_runs(text: str, followed: bool) -> None:
    result = _score("detectable_format:number_bullet_lists", {"num_bullets": 2}, text)
    assert result.status == "ok"
    assert result.detail["follow_instruction_list"] == [followed]


@pytest.mark.parametrize("factory", [ifeval, ifbench, constraints])
def test_require_topic_needs_training(factory) -> None:
    """The topic check is part of the training option: alone it would silently do nothing."""
    with pytest.raises(ConfigError, match="require_topic"):
        factory(require_topic=True)


def test_require_topic_refuses_a_fixed_filler_the_training_option_passes() -> None:
    """Default `training: true` keeps every honest reply; a twelve-word filler whose form
    follows "no commas" passes it, and `require_topic` refuses it (README, ifeval)."""
    reference = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    prompt = "Write a short story about a lighthouse. Do not use any commas."
    filler = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor"
    story = "The keeper lit the lighthouse lamp at dusk and watched the ships pass the rocks."
    for options, expected in [({}, 1.0), ({"require_topic": True}, 0.0)]:
        reward = ifeval(training=True, **options)
        got = reward(Sample(id="s", completion=filler, prompt=prompt, reference=reference))
        assert (got.status, got.score) == ("ok", expected), options
        honest = reward(Sample(id="s", completion=story, prompt=prompt, reference=reference))
        assert (honest.status, honest.score) == ("ok", 1.0), options


@pytest.mark.parametrize(
    ("text", "seen"),
    [
        ("Eiff\u0435l", "Eiffel"),
        ("\u0280ivers", "Rivers"),
        ("a\u201ab\u060cc\uff0cd", "a,b,c,d"),
        ("Hello\u2800world", "Hello world"),
        ("\u041c\u043e\u0441\u043a\u0432\u0430 \u0438 \u0410\u0444\u0438\u043d\u044b", None),
        ("\u0391\u03b8\u03ae\u03bd\u03b1", None),  # Greek text is left alone
    ],
)
def test_as_read_leaves_cyrillic_and_greek_words_alone(text: str, seen: str | None) -> None:
    assert as_read(text) == (text if seen is None else seen)
