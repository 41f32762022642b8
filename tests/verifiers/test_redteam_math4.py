"""Fourth red-team pass on the `math` reward, against the changes of 1d4cd61 (negated/bounded
final lines, alternatives, second phrases, retractions, "likely", verdict words as units,
unicode radicals, cancelling factors, arithmetic on infinity, labels). Every row FAILS at
1d4cd61: it asserts what the completion should earn; `today` says what it earns.

Two halves: false positives that get around the new rules, and NEW false negatives the new
rules introduced on correct answers (each earned 1 at d4217a7). The first six false-negative
rows are real final sentences (Qwen2.5-Math idx 14, MATH-500 number_theory/931 and
counting_and_probability/71) read without their `\\boxed{}`.
"""

from __future__ import annotations

from typing import Any

import pytest

from .test_redteam_math import OK0, OK1, Outcome, both, direct

SAME = "two sentences of one value each are a hedge only when their other words match"
WORDS = "number words are not numbers to the or-hedge check"
SLASH = "a slash between two numbers is a fraction"
LAST_TWO = "the or-hedge check looks only at the last number and the one before it"
PHRASE = "a second answer phrase in the sentence is read as introducing the first one's answer"
WORD_VALUE = "a retraction's value in number words is not read"
TUPLE = "a tuple's labels are read as written, not paired by name"
CASE = "capital X, Y, Z are no coordinates: a record of them keeps its written order"
LIMITS: dict[str, str] = {
    "She has 3 apples. She has 5.": SAME,
    "So she has three or 5 left.": WORDS,
    "The answer is three or 5.": WORDS,
    "So 3 / 5.": SLASH,
    "So 3 apples or 1*5 apples.": LAST_TWO,
    "The answer is 3, and the answer is 5.": PHRASE,
    "The answer is 3 (the answer is 5 if we count the edge).": PHRASE,
    "The answer is 3. Wait, actually it is five.": WORD_VALUE,
    "\\boxed{(q,p)=(2,3)}": TUPLE,
    "\\boxed{(y,x)=(4,3)}": TUPLE,
    "\\boxed{(y,x)=(1,2)}": TUPLE,
    "\\boxed{Y=1, X=2}": CASE,
}
"""Rows still open, by completion: each is a strict xfail naming the limit."""


def _marks(completion: str) -> Any:
    reason = LIMITS.get(completion)
    return () if reason is None else pytest.mark.xfail(strict=True, reason=reason)


def row(family: str, completion: str, gold: str, should: Outcome, today: Outcome) -> Any:
    return pytest.param(
        (lambda: direct(completion, gold)),
        should,
        today,
        id=f"{family}: {completion!r} / {gold}",
        marks=_marks(completion),
    )


def hedge(completion: str, today: Outcome, golds: tuple[str, str] = ("3", "5")) -> Any:
    """Two values named: the completion must earn neither gold."""
    return pytest.param(
        (lambda: both(completion, *golds)),
        (0.0, 0.0),
        today,
        id=f"hedge: {completion!r}",
        marks=_marks(completion),
    )


FALSE_POSITIVES = [
    # ------------------------------------ a verdict on the value read as its unit (gold 5)
    *(
        row("verdict-as-unit", text, "5", OK0, OK1)
        for text in (
            r"\boxed{5 \text{ extraneous}}",
            r"\boxed{5 \text{ rejected}}",
            r"\boxed{5 \text{ ruled out}}",
            r"\boxed{5 \text{ nope}}",
            r"\boxed{5 \text{ wrongly}}",
            r"\boxed{5 \text{ upper bound}}",
            r"\boxed{5 \text{ doubtful}}",
            r"\boxed{5 \text{ I think}}",
            "The answer is 5 nope.",
            "The answer is 5 (extraneous).",
        )
    ),
    # ------------------------------------ negations and bounds _BOUND does not list (gold 5)
    *(
        row("negated", text, "5", OK0, OK1)
        for text in (
            "So x \u2a7e 5.",  # ⩾
            "So x \u2267 5.",  # ≧
            "So x \u2266 5.",  # ≦
            "So x \u226f 5.",  # ≯
            "So x \u2249 5.",  # ≉
            "So x \u2243 5.",  # ≃
            "So x ~ 5.",
            "So x =/= 5.",
            "So x <> 5.",
            "So x \uff1e 5.",  # fullwidth >
            "So x is above 5.",
            "So x is below 5.",
            "So x is over 5.",
            "So x is under 5.",
            "So x is bigger than 5.",
            "So x is a maximum of 5.",
            "x is different from 5.",
            "x isnt 5.",
            "It can be anything apart from 5.",
            "Everything besides 5.",
            "So x is 5 or more.",
            "So x is 5 at most.",
            "Close to 5.",
            "It should be 5-ish.",
            "Presumably 5.",
            "Could be 5.",
        )
    ),
    # ------------------------------------ two values the new hedge rules miss
    *(
        hedge(text, (0.0, 1.0))
        for text in (
            "It is 3. It's 5.",
            "It is 3; it is 5.",
            "It is 3. It is also 5.",
            "She has 3 apples. She has 5.",
            "So she has three or 5 left.",
            "So 3 / 5.",
            "So 3 vs 5.",
            "So 3 apples or 1*5 apples.",
            "The answer is three or 5.",
            "The answer is 3, and the answer is 5.",
            "The answer is 3 (the answer is 5 if we count the edge).",
        )
    ),
    # ------------------------------------ retractions _RETRACTION does not see (gold 3)
    *(
        row("retraction", text, "3", OK0, OK1)
        for text in (
            "The answer is 3. Hmm, no, it's 5.",
            "The answer is 3. Sorry, I meant 5.",
            "The answer is 3. Hold on, it's 5.",
            "The answer is 3. Never mind, it's 5.",
            "The answer is 3. Make that 5.",
            "The answer is 3. Nope, 5.",
            "The answer is 3. W\u0430it, it is 5.",  # Cyrillic а
            "The answer is 3. Wait. It is 5.",
            "The answer is 3. Wait, actually it is five.",
            "The answer is 3. Wait, actually it is 5, not 3.",
            "\\boxed{3} Wait, actually it is 5.",
        )
    ),
    # ------------------------------------ labels: the variable check is skipped
    hedge(r"\boxed{y=4 \text{ or } x=4}", (1.0, 1.0), ("x=4", "y=4")),
    hedge(r"\boxed{x=4 \text{ and } y=4}", (1.0, 1.0), ("x=4", "y=4")),
    hedge("So $y = 4$ or $x = 4$.", (1.0, 1.0), ("x=4", "y=4")),
    row("labels", r"\boxed{\{x=4\}}", "y=4", OK0, OK1),
    row("labels", r"\boxed{(q,p)=(2,3)}", "(p,q)=(2,3)", OK0, OK1),
    row("labels", r"\boxed{(y,x)=(4,3)}", "(x,y)=(4,3)", OK0, OK1),
    row("labels", r"\boxed{(y,x)=(1,2)}", "(1,2)", OK0, OK1),
    row("labels", r"\boxed{Y=1, X=2}", "(1,2)", OK0, OK1),
    # ------------------------------------ arithmetic on infinity the rule misses
    row("unfinished", r"\boxed{\sqrt{\infty}}", r"\infty", OK0, OK1),
    row("unfinished", r"\boxed{-(-\infty)}", r"\infty", OK0, OK1),
]

NEW_FALSE_NEGATIVES = [
    # ------------------------------------ real final sentences (unboxed): `_alternatives`
    row(
        "real-or",
        "Therefore, the number of given numbers that are factors of 34 or multiples of 7"
        " is \\(6\\).",
        "6",
        OK1,
        OK0,
    ),
    row(
        "real-or",
        "Only $49$ has a remainder of 1 when divided by 2, 3, 4, or 6.",
        "49",
        OK1,
        OK0,
    ),
    row(
        "real-or",
        "Since both the balls and boxes are indistinguishable, we can arrange them with 5 in one"
        " and 0 in the other, 4 in one and 1 in the other, or 3 in one and 2 in the other, for a"
        " total of $3$ different arrangements.",
        "3",
        OK1,
        OK0,
    ),
    *(
        row("or-in-the-question", text, gold, OK1, OK0)
        for text, gold in (
            ("The number of integers divisible by 3 or 5 is 47.", "47"),
            ("The probability of rolling a 2 or a 3 is 1/3.", r"\frac13"),
            ("The number of ways to choose 2 or 3 items is 13.", "13"),
            ("Each of the 3 or more people gets 5.", "5"),
            ("Checking n = 1 and n = 2, the total is 5.", "5"),
            ("The solutions are 3 or 5.", "3, 5"),
        )
    ),
    # ------------------------------------ `_BOUND` words that bound nothing
    *(
        row("bound", text, gold, OK1, OK0)
        for text, gold in (
            ("So between them they have 15 apples.", "15"),
            ("Everyone except Tom ate 15 cookies.", "15"),
            ("All but Tom ate 15 cookies.", "15"),
            ("He ran around the track 15 times.", "15"),
            ("She thought about it for 15 minutes.", "15"),
            ("So the remaining students that are not boys number 15.", "15"),
            ("The minimum is 5, since fewer is impossible.", "5"),
        )
    ),
    # ------------------------------------ "likely" as an adjective
    row("likely", "The likely outcome count is 7.", "7", OK1, OK0),
    row("likely", "So the number of likely outcomes is 7.", "7", OK1, OK0),
    # ------------------------------------ verdict words inside a real unit
    row("unit", r"\boxed{5 \text{ false coins}}", "5", OK1, OK0),
    row("unit", r"\boxed{5 \text{ wrong answers}}", "5", OK1, OK0),
    row("unit", r"\boxed{3 \text{ invalid ballots}}", "3", OK1, OK0),
    # ------------------------------------ a check after the answer read as a retraction
    row(
        "retraction",
        "The answer is 5.\n\nWait, what about x = -2? It fails the original equation.",
        "5",
        OK1,
        OK0,
    ),
    row("retraction", "\\boxed{12}\n\nActually, she started with 20.", "12", OK1, OK0),
    row(
        "retraction",
        "\\boxed{12}\n\nWait, she also had 3 from before, but those were eaten.",
        "12",
        OK1,
        OK0,
    ),
    row("retraction", "The answer is 12. Actually, 12 is also divisible by 3.", "12", OK1, OK0),
    # ------------------------------------ labels: a value named by another letter
    row("labels", r"\boxed{k=5}", "n=5", OK1, OK0),
    row("labels", r"\boxed{x_1 = 4}", "x = 4", OK1, OK0),
]


@pytest.mark.parametrize(("run", "should", "today"), FALSE_POSITIVES + NEW_FALSE_NEGATIVES)
def test_hole(run: Any, should: Outcome, today: Outcome) -> None:
    assert run() == should, f"earns {run()} (red team: {today})"
