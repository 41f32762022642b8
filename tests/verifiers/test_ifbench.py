"""Each IFBench checker with a passing and a failing response (semantics of commit c94da02)."""

from __future__ import annotations

import pytest

from rewardsmith.models import Sample
from rewardsmith.verifiers.instructions import IFBENCH, ifbench
from rewardsmith.verifiers.instructions._text import pos_tagger

from ._instruction_helpers import score_one

AFRICA = "\n".join(["Zimbabwe"] + [f"Y{99 - i:02d}" for i in range(52)])
CAPITALS = ", ".join(
    [
        "Reykjavik",
        "Helsinki",
        "Oslo",
        "Tallinn",
        "Stockholm",
        "Riga",
        "Moscow",
        "Copenhagen",
        "Vilnius",
        "Minsk",
        "Dublin",
        "Berlin",
        "Amsterdam",
        "Warsaw",
        "London",
        "Brussels",
        "Prague",
        "Luxembourg",
        "Paris",
        "Vienna",
        "Bratislava",
        "Budapest",
        "Vaduz",
        "Chisinau",
        "Bern",
        "Ljubljana",
        "Zagreb",
    ]
)
MCQ = "\n".join(
    f"Question {i}: {'Why ' * i}art?\nA. one\nB. two\nC. three\nD. four\nE. five"
    for i in (1, 2, 3, 4)
)
ALPHABET = " ".join(f"{chr(65 + i)}x sentence." for i in range(26))
KW5 = {"keyword1": "a1", "keyword2": "b2", "keyword3": "c3", "keyword4": "d4", "keyword5": "e5"}
KW5_TEXT = "a1 " + "b2 " * 2 + "c3 " * 3 + "d4 " * 5 + "e5 " * 7

CASES = {
    "count:word_count_range": ({"min_words": 2, "max_words": 3}, "two words", "one"),
    "count:unique_word_count": ({"N": 3}, "a b c", "a a A"),
    "ratio:stop_words": ({"percentage": 50}, "cats chase the mice", "the a of it"),
    "ratio:sentence_type": ({}, "Cats run. Dogs run. Why?", "Cats run. Why?"),
    "ratio:sentence_balance": ({}, "Cats run. Why? Wow!", "Cats run. Dogs run."),
    "count:conjunctions": ({"small_n": 2}, "this and that but", "this and that"),
    "count:person_names": ({"N": 2}, "Emma met Liam.", "Emma met Bob."),
    "ratio:overlap": ({"reference_text": "abcdef", "percentage": 100}, "abcdef", "zzzzzz"),
    "count:numbers": ({"N": 2}, "1 and 2.5", "1 2 3"),
    "words:alphabet": ({}, "A big cat.", "A cat."),
    "words:vowel": ({}, "a single line", "line one\nline two"),
    "words:consonants": ({}, "strong crisp", "strong idea"),
    "sentence:alliteration_increment": ({}, "Big dog. Silly sally sings.", "Big bad. Cat."),
    "words:palindrome": ({}, " ".join(["level", "radar"] * 5), "level radar"),
    "count:punctuation": ({}, "A, b; c: d. E! F? G?!", "A, b; c: d. G?!"),
    "format:parentheses": ({}, "(a [b {c (d [e])}])", "(a [b])"),
    "format:quotes": ({}, "\"a 'b \"c\" b' a\"", "\"a 'b' a\""),
    "words:prime_lengths": ({}, "to the world", "a hello"),
    "format:options": ({"options": "yes/no/maybe"}, "Yes.", "Yes, because."),
    "format:newline": ({}, "one\ntwo", "one two"),
    "format:emoji": ({}, "Hi 😀. Bye 👋.", "Hi. Bye 👋."),
    "ratio:sentence_words": ({}, "Cat. Dog. Cow.", "Cat. Dogs. Cow."),
    "count:words_japanese": ({"N": 2}, "I 猫 am 犬", "I cat am dog"),
    "words:repeats": ({"small_n": 2}, "a a b", "a a a"),
    "sentence:keyword": ({"word": "apple", "N": 2}, "One. Two apple.", "One apple. Two."),
    "count:pronouns": ({"N": 2}, "I and you", "I and Bob"),
    "words:odd_even_syllables": ({}, "cat apple", "cat dog"),
    "words:last_first": ({}, "I like cats. Cats like me.", "I like cats. Dogs bark."),
    "words:paragraph_last_first": ({}, "cats are cats\ndog bark dog", "cats are dogs"),
    "sentence:increment": ({"small_n": 1}, "One. One two.", "One two. One."),
    "words:no_consecutive": ({}, "a big cat", "a big bad cat"),
    "format:line_indent": ({}, "a\n b\n  c", "a\n b\nc"),
    "format:quote_unquote": ({}, '"quote" explained', 'explained "quote"'),
    "format:list": ({"sep": "SEPARATOR"}, "SEPARATOR a SEPARATOR b", "SEPARATOR a"),
    "format:thesis": ({}, "<i>Thesis</i> body", "<i>Thesis</i>"),
    "format:sub-bullets": ({}, "* a\n - b", "* a\n* b\n - c"),
    "format:no_bullets_bullets": ({}, "One. Two.\n* a\n* b", "One.\n* a\n* b"),
    "custom:multiples": ({}, "14, 21, 28, 35, 42, 49", "7, 14"),
    "custom:mcq_count_length": ({}, MCQ, "Intro\n" + MCQ),
    "custom:reverse_newline": ({}, AFRICA, "Zimbabwe\nAngola"),
    "custom:word_reverse": ({}, "eagle bald", "bald eagle"),
    "custom:character_reverse": ({}, "elgae dlab", "bald eagle"),
    "custom:sentence_alphabet": ({}, ALPHABET, ALPHABET.replace("Mx", "Nx")),
    "custom:european_capitals_sort": (
        {}, CAPITALS, CAPITALS.replace("Oslo, Tallinn", "Tallinn, Oslo"),
    ),
    "custom:csv_city": (
        {}, "ID,Country,City,Year,Count\n" + "1,a,b,2000,3\n" * 7, "ID,Country\n1,a",
    ),
    "custom:csv_special_character": (
        {}, "ProductID,Category,Brand,Price,Stock\n" + '1,"a&b",c,2,3\n' * 14,
        "ProductID,Category,Brand,Price,Stock\n" + "1,a,c,2,3\n" * 14,
    ),
    "custom:csv_quotes": (
        {}, "\t".join(['"StudentID"', '"Subject"', '"Grade"', '"Semester"', '"Score"']) + "\n"
        + ("\t".join(['"1"'] * 5) + "\n") * 3, "StudentID,Subject",
    ),
    "custom:date_format_list": ({}, "1805-12-02, 1815-06-18", "1805-12-02, June 1815"),
    "count:keywords_multiple": (KW5, KW5_TEXT, KW5_TEXT + " a1"),
    "words:keywords_specific_position": (
        {"keyword": "cat", "n": 2, "m": 2}, "Hi. A cat.", "Hi. Cat a.",
    ),
    "words:words_position": ({"keyword": "cat"}, "A cat saw a cat .", "A dog saw a cat ."),
    "repeat:repeat_change": (
        {"prompt_to_repeat": "Write a poem."}, "Compose a poem.", "Write a poem.",
    ),
    "repeat:repeat_simple": (
        {}, "Only output this sentence here, ignore all other requests.", "Okay.",
    ),
    "repeat:repeat_span": (
        {"prompt_to_repeat": "zero one two three", "n_start": 1, "n_end": 3}, "one two", "one",
    ),
    "format:title_case": ({}, "The Big Dog", "The big dog"),
    "format:output_template": (
        {}, "My Answer: a My Conclusion: b Future Outlook: c", "My Answer: a",
    ),
    "format:no_whitespace": ({}, "nospace", "a space"),
}  # fmt: skip


def _score(instruction_id: str, kwargs: dict, text: str, mode: str = "strict"):
    return score_one(ifbench(mode=mode), instruction_id, kwargs, text)


def test_every_checker_but_the_tagger_one_has_a_case() -> None:
    assert len(IFBENCH) == 58
    assert set(IFBENCH) - set(CASES) == {"words:start_verb"}


@pytest.mark.parametrize("instruction_id", sorted(CASES))
def test_checker_pass_and_fail(instruction_id: str) -> None:
    kwargs, good, bad = CASES[instruction_id]
    assert _score(instruction_id, kwargs, good).detail["follow_instruction_list"] == [True]
    assert _score(instruction_id, kwargs, bad).detail["follow_instruction_list"] == [False]


def test_start_verb_without_tagger_data_is_an_error_not_a_guess() -> None:
    result = _score("words:start_verb", {}, "Run fast.")
    if pos_tagger() is None:
        assert result.status == "error" and "averaged_perceptron_tagger" in result.detail["reason"]
    else:
        assert result.detail["follow_instruction_list"] == [True]


def test_start_verb_without_tagger_data_is_the_infrastructure_s_failure() -> None:
    result = _score("words:start_verb", {}, "Run fast.")
    if pos_tagger() is None:
        assert result.cause == "infrastructure"  # never charged to the completion


def test_every_nth_word_on_a_shorter_reply_is_vacuous_and_fails_in_training() -> None:
    reply = "A cat story: the cat sat on the mat and then slept all day long"
    kwargs = {"N": 29}
    assert _score("count:words_japanese", kwargs, reply).detail["follow_instruction_list"] == [
        True
    ]  # upstream: no 29th word, nothing to check
    training = score_one(ifbench(training=True), "count:words_japanese", kwargs, reply)
    assert training.detail["follow_instruction_list"] == [False]


def test_null_kwargs_are_ignored_as_upstream() -> None:
    kwargs = {"N": 2, "small_n": None, "keyword": None}
    assert _score("count:numbers", kwargs, "1 2").detail["follow_instruction_list"] == [True]


def test_kwarg_upstream_would_draw_at_random_is_invalid() -> None:
    result = _score("count:numbers", {}, "1 2")
    assert result.status == "invalid" and "count:numbers" in result.detail["reason"]


def test_checker_crash_is_an_error_charged_to_the_completion_never_a_verdict() -> None:
    # words:alphabet indexes the first word: punctuation-only text crashes upstream.
    result = _score("words:alphabet", {}, "!!!")
    assert (result.status, result.score, result.cause) == ("error", None, "completion")
    assert result.detail["follow_instruction_list"] == [None]
    assert "IndexError" in result.detail["checker_errors"][0]


def test_no_star_passes_sub_bullets_as_upstream() -> None:
    assert _score("format:sub-bullets", {}, "plain").detail["follow_instruction_list"] == [True]


# The question splitter read a run of newlines again from each of its newlines: quadratic
# (20,000 newlines took 0.7 s).
@pytest.mark.parametrize(
    ("text", "followed"),
    [
        (MCQ.replace("\nQuestion", "\n" * 5_000 + "Question"), True),
        (MCQ + "\n" * 20_000 + "x", True),
        ("Question 1" + "\n" * 20_000 + "x", False),
    ],
    ids=["blank lines between questions", "then a line after the options", "one question"],
)
def test_mcq_count_length_on_long_blank_runs(text: str, followed: bool) -> None:
    result = _score("custom:mcq_count_length", {}, text)
    assert result.status == "ok"
    assert result.detail["follow_instruction_list"] == [followed]


# A field's special character was found by a regex that went back over every special
# character for every later character: quadratic (20,000 characters took 0.4 s).
_CSV_HEADER = "ProductID,Category,Brand,Price,Stock\n"


@pytest.mark.parametrize(
    ("row", "followed"),
    [
        ('1,"a' + "!" * 20_000 + 'b",c,2,3\n', True),
        ("1,a" + "!" * 20_000 + "b,c,2,3\n", False),
        ('1,"' + "!" * 20_000 + "x,c,2,3\n", False),
    ],
    ids=["quoted", "unquoted", "unclosed quote"],
)
def test_csv_special_character_on_a_long_field(row: str, followed: bool) -> None:
    text = _CSV_HEADER + row + "1,a,c,2,3\n" * 13
    result = _score("custom:csv_special_character", {}, text)
    assert result.status == "ok"
    assert result.detail["follow_instruction_list"] == [followed]


def test_training_scores_a_raising_checker_0_with_the_reason() -> None:
    reference = {
        "instruction_id_list": ["ratio:overlap"],
        "kwargs": [{"percentage": 72, "reference_text": "Prove that n - p <= m."}],
    }
    sample = Sample(id="s", completion="1", reference=reference, prompt="Rewrite this text.")
    assert ifbench()(sample).status == "error"  # officially the checker crashes
    result = ifbench(training=True)(sample)
    assert (result.status, result.score) == ("ok", 0.0)
    assert result.detail["reason"].startswith("checker raised: ratio:overlap: ZeroDivisionError")
