"""Red team (rt-text 2) of the text, format, length and instruction rewards.

One row per attack, as a policy paid per unit of reward writes it. Each row computes what the
attack earns (a score, or a status, or seconds) and asserts what it *should* earn; `today`
says what it earned when this file was written. A closed hole is a `fixed` row, which must
hold; a hole left open on purpose (f1's and choice's hedges) is a `limit` row, a strict xfail
that says why. (The earlier
red-team rows are in test_redteam_text.py and hack_table.py; none is repeated here.)
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

import pytest

from rewardsmith import Sample
from rewardsmith.verifiers.format import json_valid, think_format
from rewardsmith.verifiers.instructions import ifbench, ifeval
from rewardsmith.verifiers.length import length, repetition
from rewardsmith.verifiers.text import choice, exact_match, f1


def _run(reward: Any, completion: Any, reference: Any = None, prompt: Any = None) -> Any:
    return reward(Sample(id="s", completion=completion, reference=reference, prompt=prompt))


def earns(
    reward: Any, completion: Any, reference: Any = None, prompt: Any = None
) -> Callable[[], Any]:
    """The attack's score; the sample must be `ok` (a policy's output is never a null)."""

    def run() -> Any:
        result = _run(reward, completion, reference, prompt)
        return result.score if result.status == "ok" else result.status

    return run


def seconds(reward: Any, completion: Any, reference: Any = None) -> Callable[[], float]:
    def run() -> float:
        start = time.perf_counter()
        _run(reward, completion, reference)
        return time.perf_counter() - start

    return run


def instructions(instruction_id: str, **kwargs: Any) -> dict[str, Any]:
    return {"instruction_id_list": [instruction_id], "kwargs": [kwargs]}


ZERO: Callable[[Any], bool] = lambda got: got == 0.0  # noqa: E731
FULL_PENALTY: Callable[[Any], bool] = lambda got: isinstance(got, float) and got <= -0.9  # noqa: E731
UNDER_1S: Callable[[Any], bool] = lambda got: got < 1.0  # noqa: E731


def fixed(name: str, attack: Callable[[], Any], should: Callable[[Any], bool], today: str) -> Any:
    """A row whose hole is closed: it must hold (`today` says what it earned before)."""
    return pytest.param(name, attack, should, today, id=name)


F1_LIMIT = (
    "a stated limit: f1 pays the words an answer shares with the reference, so candidates "
    "joined other than by the separators the README lists score as side by side ('Paris "
    "London': 0.667); a fix that read more separators as hedges scored ordinary answers 0 "
    "('1. Paris', 'Capital: Paris', 'rock and roll') and took quadratic time (rt-text 3)"
)
CHOICE_LIMIT = (
    "a stated limit: a second letter joined other than by the separators the README lists "
    "is not read as a hedge; a fix that read more as hedges scored ordinary explanations 0 "
    "('The answer is B. (C) and (D) are incorrect.', 'B because C is too expensive') "
    "(rt-text 3)"
)


def limit(name: str, attack: Callable[[], Any], should: Callable[[Any], bool], why: str) -> Any:
    """A hole left open on purpose (`why`): it must keep failing until it is closed."""
    return pytest.param(
        name, attack, should, why, id=name, marks=pytest.mark.xfail(strict=True, reason=why)
    )


F1 = f1()
CHOICE = choice()
THINK = think_format()
WORDS_100 = length(max_length=100, cache_length=20, unit="words")
REPETITION = repetition()
IFEVAL_TRAINING = ifeval(training=True)
IFBENCH_TRAINING = ifbench(training=True)
LOOP = "the answer is 42. " * 200
AGE = {
    "type": "object",
    "properties": {"age": {"type": "integer", "minimum": 0}},
    "required": ["age"],
}
ESSAY_NO_COMMA = (
    "Write an essay about the history of Paris. Do not use any commas in your response."
)
ESSAY_NO_EIFFEL = "Write an essay about the Eiffel Tower without using the word Eiffel."
EIFFEL = "The {} Tower in Paris was built for the world fair of 1889 and still stands today."
LOWERCASE = "Write a short essay about rivers. Your response must be in all lowercase letters."


def _sprinkled(mark: str) -> str:
    """`LOOP` with 0-3 copies of `mark` after each character (seeded)."""
    rng = random.Random(0)
    return "".join(ch + mark * rng.randint(0, 3) for ch in LOOP)


ROWS = [
    # -- f1: hedges the separator list does not see (reference "Paris") ------------------
    *[
        limit(f"f1_{name}", earns(F1, text, "Paris"), ZERO, F1_LIMIT)
        for name, text, _today in [
            (
                "carriage_return_list",
                "Paris\rLondon",
                "0.667 (a list on lines: \\r, \\v, \\f, \\x85, U+2028)",
            ),
            ("line_separator_list", "Paris\u2028London", "0.667"),
            ("sentences", "Paris. London.", "0.667 ('.', '!', ':', '...' between candidates)"),
            ("spaced_hyphen", "Paris - London", "0.667 (en/em dashes are hedges, '-' is not)"),
            ("and", "Paris and London", "0.5 ('&' is a hedge, 'and' is not)"),
            ("nor", "Paris nor London", "0.5"),
            ("arrow", "Paris \u2192 London", "0.5"),
            ("fullwidth_or", "Paris \uff4f\uff52 London", "0.5 (f1 reads the raw text: no NFKC)"),
            ("zero_width_or", "Paris o\u200br London", "0.5 (no zero-width removal)"),
            ("cyrillic_or", "Paris \u043er London", "0.5 (Cyrillic o)"),
            ("fullwidth_comma", "Paris \uff0c London", "0.5"),
        ]
    ],
    limit(
        "f1_alias_with_comma_unlocks_hedges",
        earns(F1, "Paris or London or Rome", ["Paris", "Paris, France"]),
        ZERO,
        F1_LIMIT + "; here 0.333: one alias holding a comma turns hedge rejection off",
    ),
    # -- choice: hedges the run grammar does not join (reference B) ----------------------
    *[
        limit(f"choice_{name}", earns(CHOICE, text, "B"), ZERO, CHOICE_LIMIT)
        for name, text in [
            ("space", "Answer: B C"),
            ("pipe", "Answer: B | C"),
            ("sentence_or", "Answer: B. Or C."),
            ("also_possible", "The answer is B. C is also possible."),
            ("vs", "Answer: B vs C"),
            ("nor", "Answer: B nor C"),
            ("but", "Answer: B, but C"),
            ("parenthesised", "Answer: B (C)"),
            ("arrow", "Answer: B \u2192 C"),
            ("next_line", "Answer: B\nC"),
            ("text_or_in_box", "\\boxed{B \\text{ or } C}"),
            ("cyrillic_or", "Answer: B \u043er C"),
            ("logical_or", "Answer: B \u2228 C"),
            ("fullwidth_bar", "Answer: B \uff5c C"),
        ]
    ],
    # -- exact_match: a reference that normalises to nothing -----------------------------
    fixed(
        "exact_match_strip_articles_letter_a_empty",
        earns(exact_match(strip_articles=True), "", "A"),
        ZERO,
        "1.0: gold 'A' (a choice letter) strips to '', so an empty answer matches",
    ),
    fixed(
        "exact_match_strip_articles_letter_a_unclosed_think",
        earns(exact_match(strip_articles=True), "<think>no idea", "A"),
        ZERO,
        "1.0",
    ),
    fixed(
        "exact_match_strip_articles_the_the",
        earns(exact_match(strip_articles=True), "a", "The The"),
        ZERO,
        "1.0 (f1 fixed this case, exact_match did not)",
    ),
    fixed(
        "exact_match_ignore_punctuation_symbol_gold",
        earns(exact_match(ignore_punctuation=True), "", "?"),
        ZERO,
        "1.0",
    ),
    fixed(
        "exact_match_blank_gold_is_invalid",
        lambda: _run(exact_match(), "", "").status,
        lambda got: got == "invalid",
        "ok 1.0: a blank gold (a bad reference) pays the empty answer",
    ),
    # -- think_format: markup counted as answer words -----------------------------------
    fixed(
        "think_answer_only_empty_answer_tags",
        earns(THINK, "<think>The answer is 42</think><answer></answer>"),
        ZERO,
        "1.0: the tag names are the two 'answer words'",
    ),
    fixed(
        "think_answer_only_nbsp_entity",
        earns(THINK, "<think>The answer is 42</think>&nbsp;"),
        ZERO,
        "1.0",
    ),
    fixed(
        "think_answer_only_html_comment",
        earns(THINK, "<think>reason</think><!-- x -->"),
        ZERO,
        "1.0",
    ),
    # -- json -------------------------------------------------------------------------------
    fixed(
        "json_duplicate_key",
        earns(json_valid(schema=AGE), '{"age": "old", "age": 5}'),
        ZERO,
        "1.0: the last duplicate is validated; a first-wins parser reads 'old'",
    ),
    fixed(
        "json_first_object_quadratic",
        seconds(json_valid(extract="first_object"), "{" * 80_000),
        UNDER_1S,
        "about 3 s for 80 kB (quadratic: each failed raw_decode builds a JSONDecodeError counting "
        "newlines up to its position); 200 kB of '{' or 480 kB of '\\frac{1}{2} ' is `timeout`",
    ),
    fixed(
        "json_format_iri_reference_slow",
        seconds(
            json_valid(schema={"type": "string", "format": "iri-reference"}), json.dumps("a" * 2500)
        ),
        UNDER_1S,
        "3.5 s for a 2,500-character string (rfc3987-syntax); 5,000 characters: 6.7 s, `timeout`",
    ),
    # -- length (unit: words): free padding ------------------------------------------------
    *[
        fixed(
            f"length_words_{name}",
            earns(WORDS_100, "answer" + pad * 100_000),
            lambda got: got == -1.0,
            "0.0",
        )
        for name, pad in [
            ("spaces", " "),
            ("newlines", "\n"),
            ("hangul_filler", "\u3164"),
            ("tag_characters", "\U000e0020"),
            ("variation_selectors", "\ufe0f"),
        ]
    ],
    fixed(
        "length_words_bare_combining_marks",
        earns(WORDS_100, " " + "\u0301" * 100_000),
        lambda got: got == -1.0,
        "0.0 (length 0: marks without a base are neither words nor symbols)",
    ),
    # -- repetition: invisible characters that are not default-ignorable -------------------
    *[
        fixed(
            f"repetition_sprinkled_{name}", earns(REPETITION, _sprinkled(mark)), FULL_PENALTY, today
        )
        for name, mark, today in [
            ("braille_blank", "\u2800", "-0.06 (the plain loop: -1.0)"),
            ("interlinear_anchor", "\ufff9", "-0.06 (Cf, not default-ignorable)"),
            ("private_use", "\ue000", "-0.06"),
            ("egyptian_format", "\U00013430", "-0.04"),
        ]
    ],
    # -- ifeval / ifbench with training: true: lookalikes pass "avoid X" -----------------------
    *[
        fixed(
            f"ifeval_no_comma_{name}",
            earns(
                IFEVAL_TRAINING,
                f"Paris grew from a small settlement on the Seine{mark} and it became a capital.",
                instructions("punctuation:no_comma"),
                ESSAY_NO_COMMA,
            ),
            ZERO,
            "1.0 (as officially: `',' not in response`)",
        )
        for name, mark in [
            ("low_9_quote", "\u201a"),
            ("fullwidth", "\uff0c"),
            ("small_comma", "\ufe50"),
            ("arabic", "\u060c"),
        ]
    ],
    *[
        fixed(
            f"ifeval_forbidden_word_{name}",
            earns(
                IFEVAL_TRAINING,
                EIFFEL.format(word),
                instructions("keywords:forbidden_words", forbidden_words=["Eiffel"]),
                ESSAY_NO_EIFFEL,
            ),
            ZERO,
            "1.0",
        )
        for name, word in [
            ("zero_width", "Eif\u200bfel"),
            ("soft_hyphen", "Eif\u00adfel"),
            ("cyrillic_e", "Eiff\u0435l"),
            ("fullwidth", "\uff25\uff49\uff46\uff46\uff45\uff4c"),
        ]
    ],
    fixed(
        "ifeval_lowercase_small_capital",
        earns(
            IFEVAL_TRAINING,
            "\u0280ivers flow from mountains to the sea and feed the land along the way.",
            instructions("change_case:english_lowercase"),
            LOWERCASE,
        ),
        ZERO,
        "1.0 (U+0280 LATIN LETTER SMALL CAPITAL R is lowercase to str.islower)",
    ),
    fixed(
        "ifeval_300_words_of_combining_pairs",
        earns(
            IFEVAL_TRAINING,
            "Rivers are long. " + "a\u0301" * 300,
            instructions("length_constraints:number_words", relation="at least", num_words=300),
            "Write an essay about rivers in at least 300 words.",
        ),
        ZERO,
        "1.0: one visible run 'áááá…' is 300 official words",
    ),
    fixed(
        "ifbench_no_whitespace_braille_blank",
        earns(
            IFBENCH_TRAINING,
            "Hello\u2800world\u2800this\u2800is\u2800my\u2800answer",
            instructions("format:no_whitespace"),
            "Write your answer without any whitespace.",
        ),
        ZERO,
        "1.0: U+2800 renders as a space",
    ),
    # -- statuses: training mode charges a crash instead of a 0 -----------------------------
    fixed(
        "ifbench_overlap_one_character_is_error",
        earns(
            IFBENCH_TRAINING,
            "1",
            instructions("ratio:overlap", percentage=72, reference_text="Prove that n - p <= m."),
            "Rewrite this text.",
        ),
        ZERO,
        "status error (ZeroDivisionError: a reply of under 3 characters has no trigram)",
    ),
    fixed(
        "ifbench_quote_unquote_number_is_error",
        earns(
            IFBENCH_TRAINING,
            "42",
            instructions("format:quote_unquote"),
            "Every quoted phrase must be followed by an unquoted explanation. Write a "
            "humorous screenplay about a summit.",
        ),
        ZERO,
        "status error (IndexError); 'screenplay' is not in the prose list, so '42' is no "
        "short reply to it either",
    ),
]


@pytest.mark.parametrize(("name", "attack", "should", "today"), ROWS)
def test_redteam_text2(
    name: str, attack: Callable[[], Any], should: Callable[[Any], bool], today: str
) -> None:
    got = attack()
    assert should(got), f"{name}: attack earns {got!r} ({today})"
