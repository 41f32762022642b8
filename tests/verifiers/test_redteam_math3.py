"""Third red-team pass on the `math` reward: holes the first two passes (`test_redteam_math.py`,
`test_redteam_math2.py`) do not cover. Every row here FAILS today: it asserts what the attack
should earn, and `today` says what it earns. Mark a row `xfail(strict=True)` (a stated limit)
or fix the reward; do not delete it.

Families (each row: completion, gold, what it should earn):
- negated: an unmarked final line that negates or bounds its number ("It is not 5.", "So x >= 5.",
  "at least 5") is read as that number (`_extract._unmarked` / `_sentence_value` only look for a
  negation AFTER the number, and drop a relation written without `$...$`).
- hedge: an unmarked final line naming two values ("So x = 3 or x = 5.", "3 apples (or 5)")
  pays its last one; the `$3$ or $5$` check only counts math spans.
- nested-phrase: "The answer is 3. The answer is 5." and "Answer: 3\\nAnswer: 5" read only the
  last phrase (`_phrases` re-reads a phrase found anywhere later in the paragraph as nested).
- unreadable-phrase: a phrase whose value cannot be read ("The answer is 3 to 5") falls back to
  the last number of the final line, though an answer was committed (`extract_answer`).
- last-line: a final display or math span holding a relation (`$x = 5$`) after `\\boxed{3}` is
  dropped (`_bare` returns None for it), so the box wins alone.
- retraction: a phrase answer followed by second thoughts ("Wait, actually it is 5.") keeps the
  retracted answer.
- doubt: "likely" is not a doubt word as "probably" is ("The answer is likely 5." pays 5).
- labels: `x = 4` matches the gold line `y = 4`; labelled values are read in written order, not
  by label, against a tuple gold (`q=2, p=3` for `(p,q)=(2,3)`).
- unicode-root: `√53` is normalised to `\\sqrt53` = `\\sqrt{5}\\cdot 3` (`_normalize` maps `√` to
  `\\sqrt` without braces): it earns `3\\sqrt{5}`, and `√51` misses `\\sqrt{51}`.
- unfinished: an integer times a fraction that cancels it (`2 \\cdot \\frac{\\pi}{2}`,
  `6 \\cdot \\frac{\\sqrt{3}}{3}`) and arithmetic on infinity pass the finished-form rule while
  `\\frac{2\\pi}{2}` and `2 \\cdot \\frac{3}{2}` do not.
"""

from __future__ import annotations

from typing import Any

import pytest

from rewardsmith import score

from .test_redteam_math import OK0, OK1, Outcome, both, direct

SPEC = {"rewards": {"m": {"type": "math"}}}
ASYMPTOTE = "What is the equation of the horizontal asymptote of $y=\\frac{4x^2}{x^2+1}$?"


def row(family: str, completion: str, gold: str, should: Outcome, today: Outcome) -> Any:
    return pytest.param(
        (lambda: direct(completion, gold)), should, today, id=f"{family}: {completion!r}"
    )


def limit(param: Any, why: str) -> Any:
    """A row kept open on purpose (a stated limit): a strict xfail."""
    return pytest.param(
        *param.values, id=param.id, marks=pytest.mark.xfail(strict=True, reason=f"limit: {why}")
    )


def hedge(completion: str, today: Outcome) -> Any:
    """Two values named: the completion must earn neither gold 3 nor gold 5."""
    return pytest.param(
        (lambda: both(completion, "3", "5")), (0.0, 0.0), today, id=f"hedge: {completion!r}"
    )


ROWS = [
    # ---------------------------------------------- negated or bounded final line (gold 5)
    *(
        row("negated", text, "5", OK0, OK1)
        for text in (
            "It is not 5.",
            "So the total is not 5.",
            "So it costs 3 dollars, not 5.",
            "x cannot be 5.",
            "So the answer can't be 5.",
            "So it is wrong to say 5.",
            "Anything but 5.",
            "5 is impossible.",
            "Thus x \u2260 5.",
            "So x != 5.",
            "So x >= 5.",
            "So x < 5.",
            "So n > 5.",
            "Therefore the number is greater than 5.",
        )
    ),
    *(
        limit(
            row("negated", text, "5", OK0, OK1),
            "'at least 9' is how a minimum is stated: 'Jane needs to score at least 9 points"
            " on the third test.' is a correct GSM8K final sentence (gold 9)",
        )
        for text in ("So x is at least 5.", "So at most 5.")
    ),
    # ---------------------------------------------- doubt: "likely" like "probably" (gold 5)
    *(
        row("doubt", text, "5", OK0, OK1)
        for text in (
            "The answer is likely 5.",
            "\\boxed{5}, likely.",
            "So she likely has 5 apples left.",
        )
    ),
    # ---------------------------------------------- hedges in an unmarked final line
    *(
        hedge(text, (0.0, 1.0))
        for text in (
            "So x = 3 or x = 5.",
            "Therefore, n = 3 or n = 5.",
            "So she has 3 or 5 left.",
            "She ends up with 3 apples (or 5).",
            "So she makes $3 or $5.",
            "x could be 3 or 5.",
            "So x=3 / x=5",
            "I'd say 3 but 5 works too.",
            "It is 3. It is 5.",
            "The answer is 3 if n is odd and 5 if n is even.",
            "Thus, x \u2208 {3, 5}.",
            "So x is between 3 and 5.",
        )
    ),
    # ---------------------------------------------- several phrases in one paragraph
    hedge("The answer is 3. The answer is 5.", (0.0, 1.0)),
    hedge("The answer is 3.\nThe answer is 5.", (0.0, 1.0)),
    hedge("Answer: 3\nAnswer: 5", (0.0, 1.0)),
    hedge("The final answer is $3$. I hope it is correct. The final answer is $5$.", (0.0, 1.0)),
    # ---------------------------------------------- a committed but unreadable phrase
    hedge("The answer is 3 to 5", (0.0, 1.0)),
    hedge("The answer is in [3, 5].", (0.0, 1.0)),
    hedge("Answer: 3 (if we count the edge case, 5)", (0.0, 1.0)),
    # ---------------------------------------------- a relation on the last line is dropped
    hedge("\\boxed{3}\n\n$x = 5$", (1.0, 0.0)),
    hedge("\\boxed{3}\n\n\\[x = 5\\]", (1.0, 0.0)),
    hedge("The answer is $3$.\n\n$x = 5$", (1.0, 0.0)),
    # ---------------------------------------------- a retracted answer still counts
    row("retraction", "The answer is 3.\n\nWait, actually it is 5.", "3", OK0, OK1),
    row("retraction", "The answer is 3. Just kidding, it's 5.", "3", OK0, OK1),
    # ---------------------------------------------- a verdict on the value read as its unit
    *(
        row("verdict-as-unit", text, "5", OK0, OK1)
        for text in (
            r"\boxed{5 is impossible}",
            r"\boxed{5 is wrong}",
            "The answer is 5 is wrong.",
            r"\boxed{5 \text{ is incorrect}}",
            r"\boxed{5 if n is odd}",
        )
    ),
    # ---------------------------------------------- labels
    row("labels", r"\boxed{x=4}", "y=4", OK0, OK1),
    pytest.param(
        (lambda: direct(r"The asymptote is $\boxed{x = 4}$.", "y=4", ASYMPTOTE)),
        OK0,
        OK1,
        id="labels: vertical line for the horizontal asymptote y=4",
    ),
    row("labels", r"\boxed{q=2, p=3}", "(p,q)=(2,3)", OK0, OK1),
    row("labels", r"\boxed{y=1, x=2}", "(1,2)", OK0, OK1),
    row("labels", r"\boxed{y=3, x=2}", "(2,3)", OK1, OK0),
    row("labels", r"\boxed{q=3, p=2}", "(p,q)=(2,3)", OK1, OK0),
    row("labels", r"\boxed{x = 2+2 = 4}", "y=4", OK0, OK1),
    row("labels", r"\boxed{a=2, b=3}", "x=2, y=3", OK0, OK1),
    # ---------------------------------------------- the unicode radical sign
    row("unicode-root", "\\boxed{\u221a53}", r"3\sqrt{5}", OK0, OK1),
    row("unicode-root", "The answer is \u221a35.", r"5\sqrt{3}", OK0, OK1),
    row("unicode-root", "\\boxed{\u221a72}", r"2\sqrt{7}", OK0, OK1),
    row("unicode-root", "\\boxed{\u221a51}", r"\sqrt{51}", OK1, OK0),
    row("unicode-root", "\\boxed{2\u221a13}", r"2\sqrt{13}", OK1, OK0),
    row("unicode-root", "So the side is \u221a113 units.", r"\sqrt{113}", OK1, OK0),
    row("unicode", "\\boxed{\u00b13}", "3, -3", OK1, OK0),
    row("unicode", "\\boxed{x\u2074}", "x^4", OK1, OK0),
    row("unicode", "\\boxed{\u2205}", r"\emptyset", OK1, OK0),
    row("unicode", "\\boxed{\u2213 2}", "2, -2", OK1, OK0),
    row("unicode", "\\boxed{10\u2076}", "10^6", OK1, OK0),
    row("unicode", "\\boxed{1\u00bd}", r"\frac{3}{2}", OK1, OK0),
    row("unicode-root", "\\boxed{2\u221b3}", r"2\sqrt[3]{3}", OK1, OK0),
    row("unicode-root", "\\boxed{\u221c2}", r"\sqrt[4]{2}", OK1, OK0),
    row("unicode-root", "\\boxed{\u221a(x+1)}", r"\sqrt{x+1}", OK1, OK0),
    row("unicode-root", "\\boxed{\u221ax}", r"\sqrt{x}", OK1, OK0),
    # ---------------------------------------------- unfinished products and infinity
    row("unfinished", r"\boxed{2 \cdot \frac{\pi}{2}}", r"\pi", OK0, OK1),
    row("unfinished", r"\boxed{2\frac{\pi}{2}}", r"\pi", OK0, OK1),
    row("unfinished", r"\boxed{6 \cdot \frac{\sqrt{3}}{3}}", r"2\sqrt{3}", OK0, OK1),
    row("unfinished", r"\boxed{10 \cdot \frac{\pi}{5}}", r"2\pi", OK0, OK1),
    row("unfinished", r"\boxed{\infty + 1}", r"\infty", OK0, OK1),
    row("unfinished", r"\boxed{2\infty}", r"\infty", OK0, OK1),
    row("unfinished", r"\boxed{\frac{1}{\infty}}", "0", OK0, OK1),
    row("unfinished", r"\boxed{\frac{3}{2} \cdot \frac{\pi}{3}}", r"\frac{\pi}{2}", OK0, OK1),
    row("unfinished", r"\boxed{-\infty + 5}", r"-\infty", OK0, OK1),
]


@pytest.mark.parametrize(("run", "should", "today"), ROWS)
def test_hole(run: Any, should: Outcome, today: Outcome) -> None:
    assert run() == should, f"earns {run()} (red team: {today})"


@pytest.mark.parametrize(
    ("completion", "gold"),
    [("60/8=7.5 8 point bucks", "5"), ("12 5 dollar bills", "240")],  # GSM8K lines, no `A:`
)
def test_two_numbers_side_by_side_are_read_not_an_internal_error(
    completion: str, gold: str
) -> None:
    """A decimal-looking answer holding two numbers (`7.5 8`) is no number: it was a tree
    with no value, which failed the comparison (0, with `internal_error` and a traceback)."""
    result = score([{"completion": completion, "reference": gold}], SPEC)[0]
    assert result.reward == 0.0 and result.status == "ok"
    assert "internal_error" not in result.components["m"].detail
