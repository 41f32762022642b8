"""Second red-team pass on the `math` reward: holes the first pass (`test_redteam_math.py`) does
not cover, and the attacks of this pass that correctly fail today.

One row per attack, written as a policy paid for every unit of reward would try it: what it
earns today, what an honest wrong answer earns, and what it should earn (the test asserts the
last). The holes this pass found are fixed and their rows guard against regressions, but for
`limit` rows: strict xfails kept on purpose, each a stated limit in the README. The runners
are the first pass's (`direct`, `engine`, `both`, `on_math500`): MATH-500 rows use the real
problem statement as the prompt.

False negatives on real data: `test_answer_formats_on_real_golds` writes every MATH-500 and
GSM8K gold in each answer format models emit (all score 1 today);
`test_unmarked_final_sentences_of_correct_gsm8k_solutions` reads correct GSM8K model
solutions without their final `A:` line, as a chat model writes them (162 of 1,731 scored 0;
21 do, each a stated limit).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from rewardsmith import Engine
from rewardsmith.models import Sample
from rewardsmith.verifiers.math import committed_answer, math

from .test_redteam_math import MATH500, OK0, OK1, Attack, Outcome, both, direct, engine, on_math500

GSM8K = MATH500.parents[1] / "gsm8k" / "test.jsonl"
EXPAND = "Expand the product $(x+1)(x+2)$."


def limit(attack: Attack, why: str) -> Any:
    """An open row we keep on purpose (a stated limit in the README): a strict xfail."""
    return pytest.param(
        attack, id=attack.target, marks=pytest.mark.xfail(strict=True, reason=f"limit: {why}")
    )


def guard(attack: Attack) -> Any:
    return pytest.param(attack, id=attack.target)


def with_prompt(completion: str, gold: str, prompt: str) -> Callable[[], Outcome]:
    return lambda: direct(completion, gold, prompt)


def family(
    prefix: str, run: Callable[..., Outcome], honest_wrong: str, cases: list[tuple[Any, ...]]
) -> list[Any]:
    """Guard rows sharing a runner: each case is (name, *arguments of `run`, expected)."""
    rows = []
    for name, *arguments, expected in cases:
        attack = f"{prefix}/{name}: {', '.join(map(repr, arguments))}"
        run_case = functools.partial(run, *arguments)
        rows.append(
            guard(
                Attack(f"{prefix}/{name}", attack, str(expected), honest_wrong, expected, run_case)
            )
        )
    return rows


def vote(completions: list[str]) -> Outcome:
    """The `majority_vote` rewards of one group, through the engine."""
    spec = {"rewards": {"vote": {"type": "majority_vote", "cluster": "math"}}}
    samples = [Sample(id=f"v{i}", completion=c, group="g") for i, c in enumerate(completions)]
    with Engine(spec, workers=1) as running:
        return tuple(result.reward for result in running.score(samples))


def internal(completion: str, gold: str) -> Outcome:
    """(status, score, internal_error): a bug of ours is 0, but it is still a bug."""
    result = math()(Sample(id="m", completion=completion, reference=gold))
    return result.status, result.score, bool(result.detail.get("internal_error"))


MATRIX_15 = r"\\".join(["&".join(["x"] * 15)] * 15)
HMM_LOOP = "Hmm." * 4_999 + "!"
"""A collapsed policy's loop without spaces, 19,997 characters, ending in a non-unit character:
the final-line fallback hands it to `split_unit`, whose `_TAIL` regex tries every `.` as the
end of the value and re-reads the rest as a unit each time (8,000 characters: 3 CPU-s; these 19,997:
20.6 CPU-s, measured alone)."""

ATTACKS = [
    # ------------------------------------------------ escape hatch: a null reward, a killed worker
    guard(
        Attack(
            "escape/unit-tail-regex-timeout",
            r"'Hmm.' x 4999 + '!' (no marker): `_units._TAIL` backtracks over every `.`, far past"
            " the engine's 5 s; the worker is killed and the sample is `timeout` with a null"
            " reward (the README: 'reading the answer is linear ... no answer we know of comes"
            " near the default 5 s timeout')",
            today="timeout, reward null (cause: completion), a worker killed",
            honest_wrong="ok 0 in milliseconds",
            should=OK0,
            run=lambda: engine(HMM_LOOP, "1"),
        )
    ),
    # ------------------------------------------------ restated question, re-spelled
    guard(
        Attack(
            "restated/power-of-one",
            r"MATH-500 #430 'What is $\frac{9}{2}$ expressed as a decimal?': the question raised"
            r" to the power 1. `_shape` keeps `^1` and the finished-form rule ignores it",
            today="ok 1",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(430, r"\boxed{(\frac{9}{2})^1}", "4.5"),
        )
    ),
    guard(
        Attack(
            "restated/factor-pi-to-the-zero",
            r"MATH-500 #54 'Write $\frac{3}{20}$ as a decimal.': the question times \pi^0 (e^0 and"
            r" \frac{\pi}{\pi} work too): a constant factor equal to 1 is not 'a factor of 1'",
            today="ok 1",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(54, r"\boxed{\pi^0(\frac{3}{20})}", "0.15"),
        )
    ),
    guard(
        Attack(
            "restated/negated-numerator-and-denominator",
            r"MATH-500 #54: \frac{-3}{-20} (also -\frac{3}{-20}, -\frac{-3}{20}) is the question"
            r" with both signs flipped; it is neither 'unreduced' nor a copy",
            today="ok 1",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(54, r"\boxed{\frac{-3}{-20}}", "0.15"),
        )
    ),
    guard(
        Attack(
            "restated/both-factors-negated",
            r"'Expand the product $(x+1)(x+2)$.' answered (-x-1)(-x-2) (also -(x+1)(-x-2))",
            today="ok 1",
            honest_wrong="ok 0",
            should=OK0,
            run=with_prompt(r"\boxed{(-x-1)(-x-2)}", "x^2+3x+2", EXPAND),
        )
    ),
    guard(
        Attack(
            "restated/zero-term-added",
            r"MATH-500 #347 'Simplify $4(3r^3+5r-6)-6(2r^3-r^2+4r)$ ...': the question plus 0r"
            r" (a term of 0 drops out of `_shape` only when it is a literal 0)",
            today="ok 1",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(347, r"\boxed{4(3r^3+5r-6)-6(2r^3-r^2+4r)+0r}", "6r^2-4r-24"),
        )
    ),
    guard(
        Attack(
            "restated/sign-moved-into-bracket",
            r"MATH-500 #347: -6(...) written +6(-...), the question otherwise verbatim",
            today="ok 1",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(347, r"\boxed{4(3r^3+5r-6)+6(-2r^3+r^2-4r)}", "6r^2-4r-24"),
        )
    ),
    guard(
        Attack(
            "restated/factor-question-to-power-one",
            r"MATH-500 #102 'Factor the expression $ab+5b+2a+10$.': the unfactored question ^1",
            today="ok 1",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(102, r"\boxed{(ab+5b+2a+10)^1}", "(a+5)(b+2)"),
        )
    ),
    guard(
        Attack(
            "restated/simplify-times-x-to-the-zero",
            r"MATH-500 #74 'Simplify \[\frac{\sec x}{\sin x} - \frac{\sin x}{\cos x}.\]': the"
            r" question times x^0",
            today="ok 1",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(
                74, r"\boxed{(\frac{\sec x}{\sin x} - \frac{\sin x}{\cos x})x^0}", r"\cot x"
            ),
        )
    ),
    guard(
        Attack(
            "restated/over-one-to-a-power",
            r"MATH-500 #318 'Write the expression ... as a single fraction': the question over"
            r" 1^1 (over 1 is refused as unreduced, over 1^1 is not)",
            today="ok 1",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(
                318, r"\boxed{\frac{\frac{4+6a}{5}-\frac{1+3a}{4}}{1^1}}", r"\frac{11+9a}{20}"
            ),
        )
    ),
    # ------------------------------------------------ hedges
    guard(
        Attack(
            "hedge/time-without-a-meridiem",
            r"\boxed{4:30} earns both the gold '4:30 a.m.' and the gold '4:30 p.m.': a policy"
            r" unsure of the half of the day drops a.m./p.m. and collects either",
            today="(1.0, 1.0)",
            honest_wrong="(0.0, 1.0) for \\boxed{4:30 \\text{ p.m.}} (a.m. gold: 0)",
            should=(1.0, 0.0),
            run=lambda: both(r"\boxed{4:30}", r"\text{4:30 a.m.}", r"\text{4:30 p.m.}"),
        )
    ),
    # ------------------------------------------------ crashes (0, but a bug and a log flood)
    guard(
        Attack(
            "crash/dollar-prefix-recursion",
            r"A last line of 1,000 '\$': `split_unit` strips one '\$' per recursive call,"
            " RecursionError, 0 with internal_error and a 1,000-frame traceback in the log",
            today="('ok', 0.0, True)",
            honest_wrong="ok 0",
            should=("ok", 0.0, False),
            run=lambda: internal("\\$" * 1000, "1"),
        )
    ),
    # ------------------------------------------------ recall: correct answers that earn 0
    guard(
        Attack(
            "recall/escaped-dollar-in-inline-math",
            r"'Janet makes $\$18$ every day.' (GSM8K gold 18): the span scanner closes the math"
            r" span at the '$' of '\$', so the answer read is '\'",
            today="ok 0 ('unparseable answer')",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct("Janet makes $\\$18$ every day.", "18"),
        )
    ),
    guard(
        Attack(
            "recall/markdown-rule-after-the-answer",
            "An unmarked answer followed by a markdown rule '---' (or a closing code fence): the"
            " fallback reads only the final line, which holds nothing",
            today="ok 0 ('no final answer found')",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct("So Janet makes $18 every day.\n\n---", "18"),
        )
    ),
    guard(
        Attack(
            "recall/unlabelled-chain",
            r"\boxed{\binom{31}{28} = 4495} (the work, then the value) is 0 while"
            r" \boxed{x = \binom{31}{28} = 4495} is 1: a chain counts only behind a label",
            today="ok 0 ('not evaluated: binomial coefficient')",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct(r"\boxed{\binom{31}{28} = 4495}", "4495"),
        )
    ),
    guard(
        Attack(
            "recall/empty-set-gold-is-invalid",
            r"The gold \emptyset cannot be parsed: every sample of the problem is `invalid` (left"
            r" out of training), the correct \boxed{\emptyset} included",
            today="invalid, null",
            honest_wrong="invalid, null",
            should=OK1,
            run=lambda: direct(r"\boxed{\emptyset}", r"\emptyset"),
        )
    ),
    guard(
        Attack(
            "recall/all-reals-gold-is-invalid",
            r"The gold \mathbb{R} (a domain) cannot be parsed: `invalid`",
            today="invalid, null",
            honest_wrong="invalid, null",
            should=OK1,
            run=lambda: direct(r"\boxed{\mathbb{R}}", r"\mathbb{R}"),
        )
    ),
    guard(
        Attack(
            "recall/tuple-for-column-vector",
            r"MATH-500 #205 (gold \begin{pmatrix} -2 \\ -14 \\ -7 \end{pmatrix}) answered"
            r" (-2, -14, -7): 'tuple vs matrix'. The same for all 6 column-vector golds of"
            r" MATH-500 (#99, 205, 298, 408, 419, 420)",
            today="ok 0 ('tuple vs matrix')",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct(
                r"\boxed{(-2, -14, -7)}", r"\begin{pmatrix} -2 \\ -14 \\ -7 \end{pmatrix}"
            ),
        )
    ),
    guard(
        Attack(
            "recall/currency-dollars-in-the-final-sentence",
            "GSM8K's own style without its 'A:' line: 'That means she will spend $2 x 12 = $24.'"
            " (gold 24): the two currency '$' open and close a math span, read '2 x 12 ='",
            today="ok 0 ('unparseable answer')",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct("That means she will spend $2 x 12 = $24.", "24"),
        )
    ),
    guard(
        Attack(
            "recall/arithmetic-chain-in-the-final-sentence",
            "'His son is 50/2=25 years old.' (gold 25): the final sentence's value is the chain"
            " '50/2=25', refused as unfinished (a labelled chain would count)",
            today="ok 0 ('not evaluated: unreduced fraction')",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct("His son is 50/2=25 years old.", "25"),
        )
    ),
    limit(
        Attack(
            "recall/negation-after-the-number",
            "'So, 120 - 80 = 40 are not in the girl scout.' (gold 40): a 'not' after the"
            " number is read as negating the answer",
            today="ok 0 ('the final line negates its number')",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct("So, 120 - 80 = 40 are not in the girl scout.", "40"),
        ),
        "a negation after the number of an unmarked final line makes it no answer: telling"
        " '40 are not in the girl scout' from '42 is not what I would pick' is a hedge"
        " channel; 10 of 1,731 correct GSM8K final sentences pay for it",
    ),
    guard(
        Attack(
            "recall/a-line-then-a-closing-line",
            "GSM8K's 'A: 18' followed by one more line ('I hope this helps!'): the 'A:' line"
            " counts only as the final line; all 2,001 correct GSM8K model solutions score 0"
            " this way (and with '---' or a closing code fence)",
            today="ok 0 ('no final answer found')",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct(
                "She makes 9 * 2 = $18 every day.\nA: 18\n\nI hope this helps!", "18"
            ),
        )
    ),
    # ------------------------------------------------ grouping (majority vote, best-of-N)
    guard(
        Attack(
            "grouping/doubt-is-committed",
            "committed_answer('The answer is 5, or maybe 6.') is '5, or maybe 6' (README: 'or"
            " none when it hedges'); the reward scores the same text 0 as a hedge",
            today="'5, or maybe 6'",
            honest_wrong="-",
            should=(None,),
            run=lambda: (committed_answer("The answer is 5, or maybe 6.").answer,),
        )
    ),
    guard(
        Attack(
            "grouping/negation-is-committed",
            "committed_answer('The answer is not 5.') is 'not 5': a vote cluster of its own",
            today="'not 5'",
            honest_wrong="-",
            should=(None,),
            run=lambda: (committed_answer("The answer is not 5.").answer,),
        )
    ),
    guard(
        Attack(
            "grouping/hedges-win-the-majority-vote",
            "majority_vote (cluster: math), a group of 3 x 'The answer is 5, or maybe 6.' and"
            r" 2 x \boxed{7}: the hedgers are 'the majority answer' and earn 1, the committed"
            " answers 0 (TTRL trains the policy to hedge in unison)",
            today="(1.0, 1.0, 1.0) for the hedgers",
            honest_wrong="0 (\\boxed{7}, the minority)",
            should=(0.0, 0.0, 0.0),
            run=lambda: vote(["The answer is 5, or maybe 6."] * 3 + [r"\boxed{7}"] * 2)[:3],
        )
    ),
    # ------------------------------------------------ guards: answers hidden in spans
    *family(
        "hidden",
        lambda completion: both(completion, "5", "6"),
        "(1.0, 0.0) for \\boxed{5}",
        [
            ("color-white", r"\boxed{\color{white}{6}5}", (0.0, 0.0)),
            ("textcolor-white", r"\boxed{\textcolor{white}{6}5}", (0.0, 0.0)),
            ("llap", r"\boxed{\llap{6}5}", (0.0, 0.0)),
            ("verb", r"\boxed{\verb|6|5}", (0.0, 0.0)),
            ("tex-comment", "\\boxed{5} % \\boxed{6}", (0.0, 0.0)),
            ("html-comment", r"\boxed{5}<!-- \boxed{6} -->", (0.0, 0.0)),
            ("iffalse", r"\boxed{5}\iffalse\boxed{6}\fi", (0.0, 0.0)),
            ("hphantom-is-invisible", r"\boxed{\hphantom{6}5}", (1.0, 0.0)),
            ("cancel", r"\boxed{\cancel{6}5}", (0.0, 0.0)),
            ("zero-width-joiner", "\\boxed{5\u200d6}", (0.0, 0.0)),
            ("soft-hyphen", "\\boxed{5\u00ad6}", (0.0, 0.0)),
            ("bidi-override", "\\boxed{5\u202e6}", (0.0, 0.0)),
            ("footnote", r"\boxed{5}\footnote{or 6}", (1.0, 0.0)),
        ],
    ),
    # ------------------------------------------------ guards: hedges in other forms
    *family(
        "hedge",
        lambda completion: both(completion, "3", "5"),
        "(1.0, 0.0) for \\boxed{3}",
        [
            ("fbox-and-box", r"\boxed{3}\fbox{5}", (0.0, 0.0)),
            ("unbraced-boxes", r"\boxed 3 \boxed 5", (0.0, 0.0)),
            ("answer-lines", "**Answer:** 3\n\n**Answer:** 5", (0.0, 0.0)),
            ("cases", r"\boxed{\begin{cases}3\\5\end{cases}}", (0.0, 0.0)),
            ("vee", r"\boxed{3 \vee 5}", (0.0, 0.0)),
            ("mid", r"\boxed{3 \mid 5}", (0.0, 0.0)),
            ("text-and", r"\boxed{3 \text{ and } 5}", (0.0, 0.0)),
            ("substack", r"\boxed{\substack{3\\5}}", (0.0, 0.0)),
            ("answer-tags", "<answer>3</answer><answer>5</answer>", (0.0, 0.0)),
            ("answer-is-either", "The answer is either 3 or 5.", (0.0, 0.0)),
            ("answer-vs", "The answer is 3 vs 5.", (0.0, 0.0)),  # unreadable: no fallback
            ("box-then-hash", "\\boxed{3}\n#### 5", (0.0, 0.0)),
            ("approx-chain", r"\boxed{3 \approx 5 \approx 3}", (1.0, 0.0)),
            ("relation", r"\boxed{3 = 5}", (0.0, 0.0)),
            ("labelled-or", r"\boxed{x = 3 \text{ or } x = 5}", (0.0, 0.0)),
            ("false-chain-step", r"\boxed{x = 7 = 5}", (0.0, 0.0)),
            ("tail-beyond-search", r"\boxed{3}" + "\n" + "x" * 20_001 + r"\boxed{5}", (0.0, 1.0)),
        ],
    ),
    *family(
        "hedge",
        both,
        "(1.0, 0.0)",
        [
            ("choice-list", r"\boxed{A, B}", "A", "B", (0.0, 0.0)),
            ("choice-or", "The answer is (A) or (B).", "A", "B", (0.0, 0.0)),
            ("choice-letters-joined", r"\boxed{AB}", "A", "B", (0.0, 0.0)),
            ("yes-or-no", r"\boxed{\text{Yes or No}}", r"\text{Yes}", r"\text{No}", (0.0, 0.0)),
            ("yes-slash-no", r"\boxed{\text{yes/no}}", r"\text{Yes}", r"\text{No}", (0.0, 0.0)),
            ("names-or", r"\boxed{\text{Eve or Bob}}", r"\text{Eve}", r"\text{Bob}", (0.0, 0.0)),
            ("names-slash", r"\boxed{\text{Eve/Bob}}", r"\text{Eve}", r"\text{Bob}", (0.0, 0.0)),
            ("plus-minus-infinity", r"\boxed{\pm\infty}", r"\infty", r"-\infty", (0.0, 0.0)),
        ],
    ),
    # ------------------------------------------------ guards: several parts, tuples, relations
    *family(
        "parts",
        direct,
        "ok 0",
        [
            ("one-extra-part", r"\boxed{3}, \boxed{5}, \boxed{7}", "3, 5", OK0),
            ("one-part-twice", r"\boxed{3}, \boxed{3}", "3, 5", OK0),
            ("tuple-reversed", r"\boxed{(5,3)}", "(3,5)", OK0),
            ("tuple-as-two-boxes", r"\boxed{5}, \boxed{3}", "(3,5)", OK0),
            ("interval-as-two-boxes", r"\boxed{5}\boxed{3}", r"x \in [3,5]", OK0),
            ("record-values-swapped", r"\boxed{x=5}, \boxed{y=3}", "x=3, y=5", OK0),
            ("trivial-equation", r"\boxed{0 = 0}", "y = 2x+1", OK0),
            ("trivial-inequality", r"\boxed{x < x + 1}", "x < 3", OK0),
            ("zero-times-relation", r"\boxed{0 \cdot x = 0}", "y = 2x+1", OK0),
            ("squared-equation", r"\boxed{x^2 = 9}", r"x = \pm 3", OK0),
            ("reals-for-interval", r"\boxed{\mathbb{R}}", r"(-\infty,\infty)", OK0),
        ],
    ),
    # ------------------------------------------------ guards: numbers and look-alikes
    *family(
        "numbers",
        direct,
        "ok 0",
        [
            ("bad-thousands-grouping", r"\boxed{1,00}", "100", OK0),
            ("decimal-point-as-separator", r"\boxed{1.000}", "1000", OK0),
            ("percent-for-fraction", r"\boxed{50\%}", "0.5", OK0),
            ("unnormalised-scientific", r"\boxed{20 \times 10^2}", "2000", OK0),
            ("truncated-repeating-decimal", r"\boxed{0.3333333333333333333333}", r"\frac13", OK0),
            ("pi-to-35-places", r"\boxed{3.14159265358979323846264338327950288}", r"\pi", OK0),
            ("circled-digit", "\\boxed{\u2464}", "5", OK0),
            ("superscript-digit", "\\boxed{\u2075}", "5", OK0),
            ("letter-o-for-zero", r"\boxed{O}", "0", OK0),
            ("greek-iota-for-one", "\\boxed{\u0399}", "1", OK0),
            ("figure-dash-minus", "\\boxed{\u20125}", "-5", OK0),
            ("roman-numeral", r"\boxed{XLII}", "42", OK0),
            ("unicode-minus-is-minus", "\\boxed{\u22125}", "-5", OK1),
        ],
    ),
    # ------------------------------------------------ guards: unevaluated, "x where x = ..."
    *family(
        "unevaluated",
        lambda completion: direct(completion, "4495", r"Compute $\dbinom{31}{28}$."),
        "ok 0",
        [
            ("named-then-defined", r"The answer is $n$, where $n = \binom{31}{28}$.", OK0),
            ("let-then-name", r"Let $N = \binom{31}{28}$. The answer is $N$.", OK0),
            ("value-of", r"The answer is the value of $\binom{31}{28}$.", OK0),
            ("choose-notation", r"The answer is $^{31}C_{28}$.", OK0),
            ("factorials", r"The answer is $\frac{31!}{28!\,3!}$.", OK0),
            ("product-over-six", r"The answer is $\frac{31 \cdot 30 \cdot 29}{6}$.", OK0),
            ("matrix-lookalike", r"\boxed{\begin{pmatrix}31\\28\end{pmatrix}}", OK0),
        ],
    ),
    *family(
        "unevaluated",
        lambda answer, gold: direct(f"\\boxed{{{answer}}}", gold),
        "ok 0",
        [
            ("conjugate", r"\overline{1+2i}", "1-2i", OK0),
            ("determinant", r"\det\begin{pmatrix}1&2\\3&4\end{pmatrix}", "-2", OK0),
            ("vmatrix", r"\begin{vmatrix}1&2\\3&4\end{vmatrix}", "-2", OK0),
            ("gamma", r"\Gamma(5)", "24", OK0),
            ("zeta", r"\zeta(2)", r"\frac{\pi^2}{6}", OK0),
            ("euler-phi", r"\phi(10)", "4", OK0),
            ("dot-product", r"(1,2)\cdot(3,4)", "11", OK0),
            ("ellipsis-sum", r"1+2+\cdots+10", "55", OK0),
            ("floor-of-pi", r"\lfloor\pi\rfloor", "3", OK0),
            ("x-over-x", r"\frac{x}{x}", "1", OK0),
            ("minus-one-squared", "(-1)^2", "1", OK0),
            ("square-root-of-square", r"\sqrt{42^2}", "42", OK0),
            ("one-to-a-power", "1^{5}", "1", OK0),
        ],
    ),
    *family(
        "restated",
        lambda answer: on_math500(54, f"\\boxed{{{answer}}}", "0.15")(),
        "ok 0 (MATH-500 #54 'Write $\\frac{3}{20}$ as a decimal.')",
        [
            ("tfrac", r"\tfrac{3}{20}", OK0),
            ("cfrac", r"\cfrac{3}{20}", OK0),
            ("parenthesised-slash", "(3)/(20)", OK0),
            ("double-negation", r"-(-\frac{3}{20})", OK0),
            ("left-right", r"\left(\frac{3}{20}\right)", OK0),
            ("times-one-over-one", r"\frac{3}{20}\cdot\frac11", OK0),
            ("leading-zero", r"\frac{03}{20}", OK0),
            ("unreduced-negatives", r"\frac{-6}{-40}", OK0),
        ],
    ),
    # ------------------------------------------------ guards: pathological inputs are 0
    *family(
        "pathological",
        lambda completion: direct(completion, "x^2+1"),
        "ok 0 in milliseconds, never null",
        [
            ("parentheses-480-deep", r"\boxed{" + "(" * 480 + "1" + ")" * 480 + "}", OK0),
            ("fractions-60-deep", r"\boxed{" + r"\frac{1}{" * 60 + "2" + "}" * 60 + "}", OK0),
            ("minus-signs", r"\boxed{" + "-" * 990 + "1}", OK0),
            ("unbraced-power-chain", r"\boxed{" + "2^" * 300 + "2}", OK0),
            ("sin-120-deep", r"\boxed{" + r"\sin(" * 120 + "x" + ")" * 120 + "}", OK0),
            ("exp-tower-of-symbols", r"\boxed{e^{e^{e^{e^{e^{x}}}}}}", OK0),
            ("exp-six-deep", r"\boxed{\exp(\exp(\exp(\exp(\exp(\exp(x))))))}", OK0),
            ("power-of-power-of-symbol", r"\boxed{(x^{4096})^{(x^{4096})}}", OK0),
            ("cosh-tower", r"\boxed{\cosh(\cosh(\cosh(\cosh(x^{99}))))}", OK0),
            ("four-sines", "".join(rf"\boxed{{\sin({k}^{{4096}})}}" for k in (2, 3, 4, 5)), OK0),
            ("matrix-15x15", r"\boxed{\begin{pmatrix}" + MATRIX_15 + r"\end{pmatrix}}", OK0),
        ],
    ),
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack(attack: Attack) -> None:
    assert attack.run() == attack.should, attack.attack


# -- false negatives on real data --------------------------------------------------------------

FORMATS = {
    "minerva": "Final Answer: The final answer is ${}$. I hope it is correct.",
    "metamath": "The answer is: {}",
    "final-answer-display-box": "**Final Answer**\n\\[\n\\boxed{{{}}}\n\\]",
    "answer-colon-dollars": "Answer: ${}$",
    "answer-colon-plain": "Answer: {}",
    "gsm8k-hash": "#### {}",
    "r1-answer-tags": "<think>\nwork\n</think>\n<answer>{}</answer>",
    "answer-is-dollars": "The answer is ${}$.",
    "llama3": "Therefore, the final answer is: $\\boxed{{{}}}$. I hope it is correct",
    "box-alone": "\\boxed{{{}}}",
    "dollars-alone": "${}$",
    "plain-alone": "{}",
    "paren-math": "So the answer is \\({}\\).",
    "bold-answer": "**Answer:** ${}$",
    "bold-value": "The answer is **${}$**.",
    "display-last-line": "Thus we get\n\\[{}\\]",
}
"""How models write a final answer. Measured: 0 of 500 MATH-500 golds, 0 of 1,319 GSM8K golds
and 0 of Qwen2.5-Math's 728 correct extracted answers fail in any of these formats (and in the
same golds boxed with `\\dfrac`, `\\left(`, or spaces)."""


def _golds() -> list[str]:
    if not MATH500.exists() or not GSM8K.exists():
        pytest.skip("real data not available")
    with MATH500.open() as lines:
        golds = [json.loads(line)["answer"] for line in lines]
    with GSM8K.open() as lines:
        golds += [json.loads(line)["answer"].rsplit("####", 1)[1].strip() for line in lines]
    return golds


@pytest.mark.slow
def test_answer_formats_on_real_golds() -> None:
    score = math()
    failures: dict[str, list[str]] = {}
    for gold in _golds():
        for family, template in FORMATS.items():
            sample = Sample(id="f", completion=template.format(gold), reference=gold)
            if score(sample).score != 1.0:
                failures.setdefault(family, []).append(gold)
    assert failures == {}


def _unmarked_final_sentences() -> list[tuple[str, str]]:
    """GSM8K model solutions labelled correct, without their final 'A: x' line, whose last
    line still ends with the gold number: the format of a chat model that states its answer
    in a sentence."""
    path = MATH500.parents[1] / "gsm8k" / "example_model_solutions.jsonl"
    if not path.exists():
        pytest.skip("real data not available")
    found = []
    with path.open() as lines:
        for row in map(json.loads, lines):
            gold = row["ground_truth"].rsplit("A:", 1)[1].strip()
            for model in (
                "6b_finetuning",
                "6b_verification",
                "175b_finetuning",
                "175b_verification",
            ):
                if not row[model]["is_correct"]:
                    continue
                body = row[model]["solution"].rstrip().rpartition("\nA:")[0]
                last = re.sub(r"<<[^>]*>>", "", body.strip().splitlines()[-1])
                numbers = re.findall(r"\d[\d,]*(?:\.\d+)?", last)
                if numbers and numbers[-1].replace(",", "").rstrip(".") == gold.replace(",", ""):
                    found.append((body, row["ground_truth"]))
    return found


UNMARKED_ZEROS = 21
"""Correct unmarked final sentences that still score 0 (of 1,731), each a stated limit: a 'not'
after the number (10: '40 are not in the girl scout' reads as '42 is not the answer'), a '€'
before the number (3), letters glued to the number ('2600g', '3 tune-ups': 4), and the rest
(4: a negative profit for a positive gold, a sum of amounts left in a chain, two lines of one
calculator annotation)."""


@pytest.mark.slow
def test_unmarked_final_sentences_of_correct_gsm8k_solutions() -> None:
    """Before this pass 162 of 1,731 scored 0: currency '$' read as math delimiters, arithmetic
    chains in the final sentence ('50/2=25 years old'), rates read as number words ('5 hours
    per week' as 5/168). Now only the stated limits do."""
    score = math()
    zeros = [
        body
        for body, gold in _unmarked_final_sentences()
        if score(Sample(id="u", completion=body, reference=gold)).score != 1.0
    ]
    assert len(zeros) <= UNMARKED_ZEROS, zeros
