"""Red team (rt-text 3) of the rt-text-2 changes to the text, format and instruction rewards.

Each row is an attack or an honest answer, with what it should earn; `today` says what it
earned at 1d4cd61. f1's and choice's stricter hedge readers went back to their earlier ones
(their false negatives and f1's quadratic split are rows here that now hold); think_format's
hidden markup and the look-alikes outside the folding table are closed; what is left open is
a stated limit (`LIMITS`), a strict xfail that names it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rewardsmith.verifiers.format import think_format
from rewardsmith.verifiers.instructions import ifeval
from rewardsmith.verifiers.text import choice, f1

from .test_redteam_text2 import (
    EIFFEL,
    ESSAY_NO_COMMA,
    ESSAY_NO_EIFFEL,
    LOWERCASE,
    UNDER_1S,
    ZERO,
    earns,
    instructions,
    seconds,
)

FULL: Callable[[Any], bool] = lambda got: got == 1.0  # noqa: E731
PAID: Callable[[Any], bool] = lambda got: isinstance(got, float) and got > 0.0  # noqa: E731


LIMITS = {
    "fp_choice_": (
        "a stated limit: a second letter joined other than by the separators the README lists "
        "is not read as a hedge (a stricter reader scored ordinary explanations 0)"
    ),
    "fp_ifeval_forbidden_word_wholly_cyrillic": (
        "a stated limit: a word wholly in Cyrillic or Greek keeps its script (Russian and Greek "
        "text are left alone)"
    ),
    **dict.fromkeys(
        (
            "fn_f1_answer_label_own_line",
            "fn_f1_comma_before_dc",
            "fn_f1_comma_before_jr",
            "fn_f1_vs_for_v",
        ),
        "f1 as at c9a37ef: a label on its own line, ', D.C.', ', Jr.' and 'vs' read as hedges",
    ),
    "fn_ifeval_lowercase_": (
        "training mode reads the text in NFKC, where letterlike symbols (™ ℃ № ℉) are capitals"
    ),
    "fn_think_inequality_read_as_tag": "`<x>` is read as a tag, as a browser would",
}
"""Rows left open on purpose, by name prefix: the reason."""


def hole(name: str, attack: Callable[[], Any], should: Callable[[Any], bool], today: str) -> Any:
    """A row; a strict xfail when `LIMITS` names it."""
    why = next((reason for prefix, reason in LIMITS.items() if name.startswith(prefix)), None)
    marks = pytest.mark.xfail(strict=True, reason=why) if why else ()
    return pytest.param(name, attack, should, today, id=name, marks=marks)


F1 = f1()
CHOICE = choice()
THINK = think_format()
IFEVAL_TRAINING = ifeval(training=True)
RIVERS = (
    "rivers flow from mountains to the sea and feed the land along the way. brand{} water "
    "is sold at 20 degrees."
)

ROWS = [
    # == false positives: choice hedges the run grammar and clause rule do not see (ref B) ==
    *[
        hole(f"fp_choice_{name}", earns(CHOICE, text, "B"), ZERO, "1.0")
        for name, text in [
            ("latex_lor", "Answer: B \\lor C"),
            ("latex_vee_boxed", "\\boxed{B \\vee C}"),
            ("latex_mid", "Answer: B \\mid C"),
            ("latex_quad", "Answer: B \\quad C"),
            ("french_ou", "Answer: B ou C"),
            ("spanish_o", "Answer: B o C"),
            ("german_oder", "Answer: B oder C"),
            ("html_br", "Answer: B<br>C"),
            ("html_amp", "Answer: B &amp; C"),
            ("footnote", "Answer: B[^1]\n\n[^1]: or C"),
            ("middle_line", "Answer: B\n\nC\n\nThanks"),
            ("or_after_middle_line", "Answer: B\n...\nor C"),
            ("lone_next_line_paren_or", "B\n(or C)"),
            ("not_sure_comma", "Answer: B. Not sure, C."),
            ("otherwise_comma", "Answer: B. Otherwise, C."),
            ("probably", "Answer: B. Probably C."),
            ("perhaps_though", "Answer: B. Perhaps C though."),
            ("works_too", "Answer: B. C works too."),
            ("equally_valid", "Answer: B. C is equally valid."),
            ("alt_label", "Answer: B (alt: C)"),
            ("backup_label", "Answer: B. Backup: C."),
        ]
    ],
    # == false positives: think_format answers a browser does not show =====================
    *[
        hole(
            f"fp_think_{name}", earns(THINK, "<think>The answer is 42</think>" + text), ZERO, "1.0"
        )
        for name, text in [
            ("doctype", "<!DOCTYPE answer>"),
            ("processing_instruction", "<?answer here?>"),
            ("bogus_comment", "<!answer>"),
            ("entity_without_semicolon", "&nbsp"),
            ("style_element", "<style>answer</style>"),
            ("hidden_span", "<span hidden>answer</span>"),
        ]
    ],
    # == false positives: ifeval training, lookalikes outside the folding table ==============
    *[
        hole(
            f"fp_ifeval_no_comma_{name}",
            earns(
                IFEVAL_TRAINING,
                f"Paris grew from a small settlement on the Seine{mark} and it became a capital.",
                instructions("punctuation:no_comma"),
                ESSAY_NO_COMMA,
            ),
            ZERO,
            "1.0",
        )
        for name, mark in [
            ("arabic_thousands_separator", "\u066c"),
            ("reversed_comma", "\u2e41"),
            ("modifier_low_acute", "\u02cf"),
            ("greek_lower_numeral_sign", "\u0375"),
            ("armenian_comma", "\u055d"),
        ]
    ],
    *[
        hole(
            f"fp_ifeval_forbidden_word_{name}",
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
            ("cherokee_e", "\u13aciffel"),
            ("lisu_e", "\ua4f0iffel"),
            ("cyrillic_abkhasian_che", "Eiff\u04bdl"),
            ("greek_lunate_epsilon", "Eiff\u03f5l"),
            ("latin_iota", "E\u0269ffel"),
            ("lisu_l", "Eiffe\ua4e1"),
        ]
    ],
    hole(
        "fp_ifeval_forbidden_word_wholly_cyrillic",
        earns(
            IFEVAL_TRAINING,
            "We all want \u0440\u0435\u0430\u0441\u0435 in our time, and the world needs it "
            "more than ever before.",
            instructions("keywords:forbidden_words", forbidden_words=["peace"]),
            "Write a short essay about war without using the word peace.",
        ),
        ZERO,
        "1.0 ('реасе': a word with no Latin letter is never folded)",
    ),
    # == new false negatives: f1 on honest QA answers (old commit paid them) =================
    *[
        hole(f"fn_f1_{name}", earns(F1, text, ref), PAID, f"0.0 (d4217a7: {old})")
        for name, text, ref, old in [
            ("numbered", "1. Paris", "Paris", "0.667"),
            ("numbered_number", "2. 42", "42", "0.667"),
            ("letter_label", "(a) Paris", "Paris", "1.0"),
            ("field_label", "Capital: Paris", "Paris", "0.667"),
            ("name_label", "Name: John Smith", "John Smith", "0.8"),
            ("step_label", "Step 1: Paris", "Paris", "0.5"),
            ("answer_dash", "Answer - Paris", "Paris", "0.667"),
            ("rock_and_roll", "rock and roll", "rock 'n' roll", "0.667"),
            ("month_abbreviation", "Dec. 25, 1990", "December 25, 1990", "0.667"),
            ("circa", "ca. 1500", "1500", "0.667"),
            ("rank", "Gen. Patton", "General Patton", "0.5"),
        ]
    ],
    *[
        hole(f"fn_f1_{name}", earns(F1, text, ref), PAID, "0.0 (also 0.0 at d4217a7)")
        for name, text, ref in [
            ("answer_label_own_line", "Answer:\nParis", "Paris"),
            ("comma_before_dc", "Washington, D.C.", "Washington D.C."),
            ("comma_before_jr", "Martin Luther King, Jr.", "Martin Luther King Jr."),
            ("vs_for_v", "Roe vs. Wade", "Roe v. Wade"),
        ]
    ],
    # == new false negatives: choice on ordinary explanations (old commit paid them) =========
    *[
        hole(f"fn_choice_{name}", earns(CHOICE, text, "B"), FULL, "0.0 (d4217a7: 1.0)")
        for name, text in [
            (
                "next_sentence_paren_letter",
                "The answer is (B). (A) is wrong because it ignores friction.",
            ),
            ("next_sentence_two_letters", "The answer is B. (C) and (D) are incorrect."),
            ("next_sentence_label", "The answer is B. C) is wrong."),
            ("quoted_letter", 'The answer is B. "C" is incorrect.'),
            ("too_as_degree", "The answer is B because C is too expensive."),
            ("but_trap", "The answer is B, but C is a trap."),
            ("might_seem", "The answer is B. C might seem right, but it ignores friction."),
            ("also_fails", "Answer: B. C also fails this test."),
            ("also_misconception", "The answer is B. A is also a common misconception."),
            ("could_only", "The answer is B because C could only happen at higher temperatures."),
            (
                "tempting_then_wrong",
                "The answer is B. Option C might look tempting, but it is wrong.",
            ),
        ]
    ],
    # == new false negatives: ifeval training folds symbols into capitals ====================
    *[
        hole(
            f"fn_ifeval_lowercase_{name}",
            earns(
                IFEVAL_TRAINING,
                RIVERS.format(sym),
                instructions("change_case:english_lowercase"),
                LOWERCASE,
            ),
            FULL,
            "0.0 (official 1.0: NFKC makes 'TM', '°C', 'No', '°F' capitals)",
        )
        for name, sym in [
            ("trade_mark", "\u2122"),
            ("degree_celsius", "\u2103"),
            ("numero", "\u2116 5"),
            ("degree_fahrenheit", "\u2109"),
        ]
    ],
    hole(
        "fn_think_inequality_read_as_tag",
        earns(think_format(min_reasoning_words=3), "<think>compare <x> values</think>42"),
        FULL,
        "0.0: '<x>' is removed as a tag; 'a<b and b>c' loses 'b and b' too",
    ),
    # == statuses: f1's hedge splitter is quadratic on a punctuation run =====================
    hole(
        "status_f1_hyphen_run_quadratic",
        seconds(F1, "-" * 10_000, "Paris"),
        UNDER_1S,
        "about 5 s for 10 kB, 21 s for 20 kB, 94 s for 40 kB (`[\\p{P}\\p{S}]+(?=\\s)` in _HEDGE "
        "rescans the run from each start); 1 MB of '-', '.', '!' or emoji is hours: `timeout`",
    ),
    hole(
        "status_f1_emoji_run_quadratic",
        seconds(F1, "Paris" + "\U0001f600" * 10_000, "Paris"),
        UNDER_1S,
        "6 s for 10,000 emoji glued to the answer (same regex: symbols \\p{S} too; a run after "
        "a space is fast)",
    ),
]


@pytest.mark.parametrize(("name", "attack", "should", "today"), ROWS)
def test_redteam_text3(
    name: str, attack: Callable[[], Any], should: Callable[[Any], bool], today: str
) -> None:
    got = attack()
    assert should(got), f"{name}: earns {got!r} ({today})"
