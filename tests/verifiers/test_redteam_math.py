"""Red team of the `math` reward (issue #10 rewrite): its own LaTeX parser, the mpmath numeric
screen, the finished-form rule, restated-prompt detection, one committed answer, units,
relations and labelled answers, numeric caps, and the grouping helpers.

One row per attack, written as a policy paid for every unit of reward would try it. Each row
says what the attack earns today (for the 32 holes closed since, with what it earned when the
red team ran it), what an honest wrong answer earns, and what the attack should earn; the test
asserts the last. Rows marked `xfail(strict=True)` (`hole`) are open holes: they fail today
and flip loudly when fixed; none is open now. The other rows are attacks that correctly fail
(regression guards) and correct answers that must keep scoring 1.

Prompts marked `MATH-500 #n` are the real problem statements of `../shared/data/math500`.
Rows that need the engine's hard timeout run at the default `timeout_s: 5` (the README promises
that no answer comes near it) and assert on the status, never on a duration. The quadratic
extraction row counts the work done (range checks) instead of timing it; the memory row runs
in a child process under an address-space limit so that the allocation fails at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from rewardsmith import Engine
from rewardsmith.models import Sample
from rewardsmith.verifiers.math import _extract, answer_key, math, same_answer

ROOT = Path(__file__).resolve().parents[2]
MATH500 = ROOT.parent / "shared" / "data" / "math500" / "test.jsonl"

Outcome = tuple[Any, ...]
"""What an attack earned: ``(status, score)`` for one sample, or a row-specific tuple."""


# -- runners ----------------------------------------------------------------------------------


def problem(index: int) -> str:
    """The statement of MATH-500 problem `index` (0-based line of test.jsonl)."""
    if not MATH500.exists():
        pytest.skip(f"{MATH500} not found")
    with MATH500.open() as lines:
        for i, line in enumerate(lines):
            if i == index:
                return str(json.loads(line)["problem"])
    raise IndexError(index)


def direct(completion: str, gold: str, prompt: str | None = None, **config: Any) -> Outcome:
    """(status, score) of one sample scored in this process."""
    sample = Sample(id="m", completion=completion, reference=gold, prompt=prompt)
    result = math(**config)(sample)
    return result.status, result.score


def on_math500(index: int, completion: str, gold: str) -> Callable[[], Outcome]:
    return lambda: direct(completion, gold, problem(index))


def both(completion: str, gold_a: str, gold_b: str) -> Outcome:
    """The scores one completion earns against two different golds (a hedge earns both)."""
    return direct(completion, gold_a)[1], direct(completion, gold_b)[1]


def engine(completion: str, gold: str) -> Outcome:
    """(status, reward) through the engine: one worker, the default hard timeout of 5 s."""
    spec = {"rewards": {"correct": {"type": "math"}}}
    with Engine(spec, workers=1) as running:
        (result,) = running.score([Sample(id="e", completion=completion, reference=gold)])
    return result.status, result.reward


def keys(a: str, b: str) -> Outcome:
    """Whether two answers share an `answer_key`, and whether `same_answer` says they agree."""
    return ("same key" if answer_key(a) == answer_key(b) else "different keys", same_answer(a, b))


class _CountingRanges(list):  # type: ignore[type-arg]
    """The protected ranges of `_extract`, counting every range a sentence cut is checked
    against (the inner loop of `_sentences`, `_lines` and `_sentence_value`)."""

    visits = 0

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            _CountingRanges.visits += 1
            yield item


def extraction_work(completion: str, gold: str) -> Outcome:
    """Linear or quadratic: range checks made while extracting, against the text length."""
    original = _extract._protected
    _CountingRanges.visits = 0
    with mock.patch.object(_extract, "_protected", lambda t: _CountingRanges(original(t))):
        direct(completion, gold)
    return ("quadratic",) if _CountingRanges.visits > 20 * len(completion) else ("linear",)


_MEMORY_CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from rewardsmith.models import Sample
from rewardsmith.verifiers.math import math
result = math()(Sample(id="m", completion=sys.argv[1], reference=sys.argv[2]))
print(result.status, result.score, bool(result.detail.get("internal_error")))
"""


def under_memory_limit(completion: str, gold: str) -> Outcome:
    """(status, score, internal_error) in a child process limited to 2 GiB of address space:
    an attempt to build a multi-gigabyte integer fails at once instead of filling the host."""
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    command = [sys.executable, "-c", _MEMORY_CHILD, completion, gold]
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    status, score, internal = proc.stdout.split()
    return status, float(score), internal == "True"


# -- the table --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attack:
    target: str
    attack: str
    today: str
    honest_wrong: str
    should: Outcome
    run: Callable[[], Outcome]


def guard(attack: Attack) -> Any:
    return pytest.param(attack, id=attack.target)


OK0, OK1 = ("ok", 0.0), ("ok", 1.0)
SIN_OF_HUGE = r"\sin((x^{4096})^{4096})"
"""Every power is within MAX_EXPONENT, yet the argument is ~10^(8 million): mpmath's sin
reduces it modulo pi in one call that the 1.5 s numeric cap cannot interrupt."""

ATTACKS = [
    # ------------------------------------------------ approximations bypass the finished form
    guard(
        Attack(
            "approx/unevaluated-binomial-with-prompt",
            r"MATH-500 #348 'Compute $\dbinom{31}{28}$': box the question with any finished"
            r" 'approximation'. The finished-form rule keeps only the operations BOTH sides of"
            r" \approx share, and the exact side alone is compared with the gold",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(348, r"The answer is $\boxed{\binom{31}{28} \approx 0}$.", "4495"),
        )
    ),
    guard(
        Attack(
            "approx/unevaluated-arithmetic",
            r"`#### 16-3-4`-style arithmetic, made 'finished' by a wrong approximation",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{2 \cdot 3 \cdot 7 \approx 0}", "42"),
        )
    ),
    guard(
        Attack(
            "approx/unevaluated-factorial",
            r"\boxed{5! \approx 1} for 120",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{5! \approx 1}", "120"),
        )
    ),
    guard(
        Attack(
            "approx/rounds-to-integer-gold",
            r"A near miss (7.6) with '\approx 8' earns an exact integer gold 8: a policy appends"
            r" \approx round(x) to every answer and collects every answer within 0.5",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0 (\\boxed{7.6})",
            should=OK0,
            run=lambda: direct(r"\boxed{7.6 \approx 8}", "8"),
        )
    ),
    guard(
        Attack(
            "approx/hedge-two-golds",
            r"\boxed{\frac{15}{2} \approx 8} earns both gold 15/2 and gold 8: a hedge in one box",
            today="(1.0, 0.0) (red team: (1.0, 1.0))",
            honest_wrong="(1.0, 0.0) for \\boxed{\\frac{15}{2}}",
            should=(1.0, 0.0),
            run=lambda: both(r"\boxed{\frac{15}{2} \approx 8}", r"\frac{15}{2}", "8"),
        )
    ),
    guard(
        Attack(
            "approx/wrong-constant",
            r"\boxed{\pi \approx 3} for gold 3 (and for gold \pi)",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0 (\\boxed{\\pi})",
            should=OK0,
            run=lambda: direct(r"\boxed{\pi \approx 3}", "3"),
        )
    ),
    guard(
        Attack(
            "approx/documented-recall",
            r"\frac{70}{9} \approx 7.78 for the decimal gold 7.78 (the README's example)",
            today="ok 1",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct(r"\boxed{\frac{70}{9} \approx 7.78}", "7.78"),
        )
    ),
    guard(
        Attack(
            "approx/bare-approximation-of-exact-gold",
            r"\boxed{7.78} for gold \frac{70}{9}: an approximation alone is wrong",
            today="ok 0",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{7.78}", r"\frac{70}{9}"),
        )
    ),
    # ------------------------------------------------ finished form: operations it misses
    guard(
        Attack(
            "unevaluated/fractional-power-of-literal",
            r"MATH-500 #31 'Simplify $\sqrt{242}$': write the radical as a power. Only integer"
            r" exponents count as powers of numbers; 242^{1/2} is neither a power nor a radical",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(31, r"\boxed{242^{1/2}}", r"11\sqrt2"),
        )
    ),
    guard(
        Attack(
            "unevaluated/cube-root-as-power",
            r"\boxed{64^{1/3}} for 4 (\sqrt[3]{64} is refused)",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{64^{1/3}}", "4"),
        )
    ),
    guard(
        Attack(
            "unevaluated/complex-division-no-prompt",
            r"MATH-500 #373 asks for $\frac{-3+4i}{1+2i}$; boxing it earns 1 without a prompt:"
            r" a fraction whose parts are not literals is never 'arithmetic on numbers'",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{\frac{-3+4i}{1+2i}}", "1+2i"),
        )
    ),
    guard(
        Attack(
            "unevaluated/unrationalised-quotient",
            r"\boxed{\frac{1+\sqrt{2}}{1-\sqrt{2}}} for -3-2\sqrt{2}",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{\frac{1+\sqrt{2}}{1-\sqrt{2}}}", r"-3-2\sqrt{2}"),
        )
    ),
    guard(
        Attack(
            "unevaluated/exponential-as-power-of-e",
            r"\boxed{e^{i\pi}} for -1: \exp(i\pi) is refused, e^{i\pi} is not",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{e^{i\pi}}", "-1"),
        )
    ),
    # ------------------------------------------------ restated prompt, re-spelled
    guard(
        Attack(
            "restated/readme-example-slash",
            r"MATH-500 #430 'What is $\frac{9}{2}$ expressed as a decimal?': the README's own"
            r" example, with the fraction written 9/2 (only the verbatim normalised key is sought)",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(430, r"\boxed{9/2}", "4.5"),
        )
    ),
    guard(
        Attack(
            "restated/parenthesised",
            r"The same with the copied fraction in parentheses: (\frac{9}{2})",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(430, r"\boxed{(\frac{9}{2})}", "4.5"),
        )
    ),
    guard(
        Attack(
            "restated/complex-division-respelled",
            r"MATH-500 #373 with the prompt: (-3+4i)/(1+2i) is the question re-spelled",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(373, r"\boxed{(-3+4i)/(1+2i)}", "1+2i"),
        )
    ),
    guard(
        Attack(
            "restated/polynomial-times-one",
            r"MATH-500 #347 'Simplify $4(3r^3+5r-6)-6(2r^3-r^2+4r)$': the expression wrapped in"
            r" 1\cdot(...) (a known limit without a prompt; with one it must be refused)",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(347, r"\boxed{1\cdot(4(3r^3+5r-6)-6(2r^3-r^2+4r))}", "6r^2-4r-24"),
        )
    ),
    guard(
        Attack(
            "restated/factors-reordered",
            r"'Expand the product $(x+1)(x+2)$.' answered (x+2)(x+1)",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(
                r"\boxed{(x+2)(x+1)}", "x^2+3x+2", "Expand the product $(x+1)(x+2)$."
            ),
        )
    ),
    guard(
        Attack(
            "restated/verbatim",
            r"MATH-500 #430 with \frac{9}{2} copied verbatim",
            today="ok 0",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(430, r"\boxed{\frac{9}{2}}", "4.5"),
        )
    ),
    guard(
        Attack(
            "restated/verbatim-binomial",
            r"MATH-500 #348 with \dbinom{31}{28} boxed",
            today="ok 0",
            honest_wrong="ok 0",
            should=OK0,
            run=on_math500(348, r"\boxed{\dbinom{31}{28}}", "4495"),
        )
    ),
    # ------------------------------------------------ escape hatches: timeout, memory, stalls
    guard(
        Attack(
            "escape/sin-of-huge-power-single-box",
            f"\\boxed{{{SIN_OF_HUGE}}} against an expression gold: functions of symbols are never"
            " unfinished, so the numeric screen evaluates it; one mpmath call outlives the 1.5 s"
            " cap and the engine kills the worker at 5 s",
            today="ok 0 (red team: timeout (null reward), a worker killed)",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: engine(f"\\boxed{{{SIN_OF_HUGE}}}", "x^2+1"),
        )
    ),
    guard(
        Attack(
            "escape/sin-of-huge-power-second-box",
            r"Any gold: a second box makes `_agreeing` compare the two answers by value first",
            today="ok 0 (red team: timeout (null reward), a worker killed)",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: engine(r"\boxed{\sin((2^{4096})^{4096})} \boxed{7}", "1"),
        )
    ),
    guard(
        Attack(
            "escape/factorial-of-huge-integer-memory",
            r"(((2^{4096})^{4096})^{4096})! next to a second box: `_factorial` converts the"
            r" argument to a Python int (2^{2^{36}}: 8 GiB) BEFORE its range check",
            today=(
                "('ok', 0.0, False) (red team: MemoryError under a 2 GiB limit (internal_error);"
                " without a limit the worker tries to allocate 8 GiB)"
            ),
            honest_wrong="ok 0",
            should=("ok", 0.0, False),
            run=lambda: under_memory_limit(r"\boxed{(((2^{4096})^{4096})^{4096})!} \boxed{7}", "1"),
        )
    ),
    guard(
        Attack(
            "escape/quadratic-sentence-split",
            r"'$1$. ' x 4000 (20,000 characters, no marker): `_sentences` checks every cut"
            r" against every math span, 16 million checks (1.7 CPU-s here, 7-11 s wall under"
            r" load) outside the numeric cap",
            today=(
                "('linear',) (red team: 16,004,000 range checks; ok 1 when it finishes, timeout"
                " on a loaded box)"
            ),
            honest_wrong="ok 0 in milliseconds",
            should=("linear",),
            run=lambda: extraction_work("$1$. " * 4000, "1"),
        )
    ),
    guard(
        Attack(
            "escape/unclosed-math-delimiters",
            r"10,000 unclosed '\(' (20,000 characters): a lazy span regex rescans the rest of the"
            r" text from each one (6.5 CPU-s here), outside the numeric cap",
            today="ok 0 (was a timeout under load before math spans were found in one pass)",
            honest_wrong="ok 0 in milliseconds",
            should=OK0,
            run=lambda: engine("\\(" * 10_000, "1"),
        )
    ),
    guard(
        Attack(
            "escape/fractional-power-of-a-300-digit-literal",
            r"A 302-digit literal to the power 63/64: the finished-form rule factors its radicand"
            r" (the literal to the 63rd) by trial division, 7 CPU-s outside the numeric cap",
            today="ok 0 (found while closing hole 2: a timeout under the engine's 5 s)",
            honest_wrong="ok 0 in milliseconds",
            should=OK0,
            run=lambda: engine("\\boxed{1" + "0" * 300 + "7^{63/64}}", "x"),
        )
    ),
    guard(
        Attack(
            "escape/power-tower",
            r"\boxed{9^{9^{9^9}}}",
            today="ok 0",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{9^{9^{9^9}}}", "1"),
        )
    ),
    guard(
        Attack(
            "escape/5000-boxes",
            r"5,000 copies of \boxed{1}",
            today="ok 0",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{1}" * 5000, "1"),
        )
    ),
    guard(
        Attack(
            "escape/megabyte-of-digits",
            "a megabyte of digits in a box",
            today="ok 0",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{" + "7" * 1_000_000 + "}", "7"),
        )
    ),
    guard(
        Attack(
            "escape/unbalanced-braces",
            r"\boxed{{42} (the box never closes)",
            today="ok 0",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{{42}", "42"),
        )
    ),
    # ------------------------------------------------ grouping (majority vote, best-of-N)
    guard(
        Attack(
            "grouping/relations-share-one-key",
            r"answer_key('x \le 5') == answer_key('x > 100') == 'relation::None': every"
            " inequality, equation, chain and approximation falls in one vote cluster",
            today="('different keys', False) (red team: ('same key', False))",
            honest_wrong="-",
            should=("different keys", False),
            run=lambda: keys(r"x \le 5", "x > 100"),
        )
    ),
    guard(
        Attack(
            "grouping/approximations-share-one-key",
            r"answer_key('\frac{70}{9} \approx 7.78') == answer_key('\pi \approx 3.14')",
            today="('different keys', False) (red team: ('same key', False))",
            honest_wrong="-",
            should=("different keys", False),
            run=lambda: keys(r"\frac{70}{9} \approx 7.78", r"\pi \approx 3.14"),
        )
    ),
    guard(
        Attack(
            "grouping/record-labels-dropped",
            "answer_key('AB=4, CD=5') == answer_key('CD=4, AB=5') though they differ",
            today="('different keys', False) (red team: ('same key', False))",
            honest_wrong="-",
            should=("different keys", False),
            run=lambda: keys("AB=4, CD=5", "CD=4, AB=5"),
        )
    ),
    guard(
        Attack(
            "grouping/equal-numbers-share-a-key",
            r"0.5 and \frac{1}{2} share a key; x = \frac12 is keyed with its variable, for it is"
            r" not y = \frac12, and same_answer joins it to 0.5 (README)",
            today="x = \\frac12 shared 0.5's key, and y = \\frac12's",
            honest_wrong="-",
            should=(("same key", True), ("different keys", True), ("different keys", False)),
            run=lambda: (
                keys("0.5", r"\frac{1}{2}"),
                keys("0.5", r"x = \frac12"),
                keys(r"x = \frac12", r"y = \frac12"),
            ),
        )
    ),
    # ------------------------------------------------ recall: correct answers that earn 0
    guard(
        Attack(
            "recall/decimal-found-in-asy-code",
            r"MATH-500 #219 (gold \frac{1}{2}): the correct 0.5 is 'restated' because its [asy]"
            r" code has label(...,(0.8,0.5),...): the whole prompt is searched",
            today="ok 1 (red team: ok 0 ('restates the question: 0.5'))",
            honest_wrong="ok 0",
            should=OK1,
            run=on_math500(219, r"The answer is $\boxed{0.5}$.", r"\frac{1}{2}"),
        )
    ),
    guard(
        Attack(
            "recall/answer-tags",
            "R1-Zero template: <think>...</think> <answer>42</answer>",
            today="ok 1 (red team: ok 0 ('unparseable answer': the tags are read as the answer))",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct("<think>6 times 7.</think> <answer>42</answer>", "42"),
        )
    ),
    guard(
        Attack(
            "recall/nested-box",
            r"\boxed{\boxed{42}}: the inner and outer box are 'two different final answers'",
            today="ok 1 (red team: ok 0 (hedge))",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct(r"The final answer is $\boxed{\boxed{42}}$.", "42"),
        )
    ),
    guard(
        Attack(
            "recall/seven-irrational-roots-reordered",
            r"Seven radicals in another order: the 100-comparison budget runs out and the"
            " reason says 'different set' (it should say 'not evaluated' at least)",
            today="ok 1 (red team: ok 0 ('different set'))",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct(
                r"\boxed{\sqrt{11}, \sqrt{10}, \sqrt{7}, \sqrt{6}, \sqrt{5}, \sqrt{3}, \sqrt{2}}",
                r"\sqrt{2}, \sqrt{3}, \sqrt{5}, \sqrt{6}, \sqrt{7}, \sqrt{10}, \sqrt{11}",
            ),
        )
    ),
    guard(
        Attack(
            "recall/plus-minus-for-two-values",
            r"\boxed{\pm 3} for the gold '3, -3' (\pm is refused as 'arithmetic on numbers')",
            today="ok 1 (red team: ok 0)",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct(r"\boxed{\pm 3}", "3, -3"),
        )
    ),
    guard(
        Attack(
            "recall/word-after-the-answer-is",
            r"'The answer is yes' for the gold \text{Yes}",
            today="ok 1 (red team: ok 0 ('no final answer found'))",
            honest_wrong="ok 0",
            should=OK1,
            run=lambda: direct("The answer is yes", r"\text{Yes}"),
        )
    ),
    # ------------------------------------------------ smaller false positives
    guard(
        Attack(
            "hedge/negated-last-number",
            "'42 is not the answer.' (no marker: the fallback takes its only number)",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct("Let me think.\n42 is not the answer.", "42"),
        )
    ),
    guard(
        Attack(
            "units/radians-for-degrees",
            r"\boxed{30 \text{ radians}} for 30^\circ: degrees are stripped, so the unit is on"
            " one side only and ignored",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{30 \text{ radians}}", r"30^\circ"),
        )
    ),
    guard(
        Attack(
            "units/megametre-is-millimetre",
            r"\boxed{5 \text{ Mm}} for 5 mm (unit names are case-folded)",
            today="ok 0 (red team: ok 1)",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{5 \text{ Mm}}", r"5 \text{ mm}"),
        )
    ),
    # ------------------------------------------------ regression guards: unevaluated forms
    *[
        guard(
            Attack(
                f"unevaluated/{name}",
                f"\\boxed{{{answer}}} for {gold}",
                today="ok 0",
                honest_wrong="ok 0",
                should=OK0,
                run=lambda answer=answer, gold=gold: direct(f"\\boxed{{{answer}}}", gold),
            )
        )
        for name, answer, gold in [
            ("code-product", "2*3*7", "42"),
            ("frac-unreduced", r"\frac{84}{2}", "42"),
            ("sqrt-perfect-square", r"\sqrt{1764}", "42"),
            ("cdot", r"6\cdot7", "42"),
            ("e-to-ln", r"e^{\ln 42}", "42"),
            ("near-miss-decimal", "42.0000001", "42"),
            ("dots-decimal", r"41.99\ldots", "42"),
            ("unicode-times", "6×7", "42"),
            ("binomial", r"\dbinom{31}{28}", "4495"),
            ("factorial", "5!", "120"),
            ("sum", r"\sum_{k=1}^{10} k", "55"),
            ("integral", r"\int_0^1 x\,dx", r"\frac12"),
            ("log", r"\log_2 8", "3"),
            ("lcm-operatorname", r"\operatorname{lcm}(4,6)", "12"),
            ("power-of-literal", "2^{10}", "1024"),
            ("i-squared", "i^2", "-1"),
            ("nested-radical", r"\sqrt{\sqrt{16}}", "2"),
        ]
    ],
    guard(
        Attack(
            "unevaluated/hash-arithmetic",
            "#### 16-3-4 for 9 (GSM8K marker)",
            today="ok 0",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct("So she has\n#### 16-3-4", "9"),
        )
    ),
    guard(
        Attack(
            "unevaluated/plain-text-product",
            "'The answer is 2*3*7' for 42",
            today="ok 0",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct("The answer is 2*3*7", "42"),
        )
    ),
    # ------------------------------------------------ regression guards: hedges
    *[
        guard(
            Attack(
                f"hedge/{name}",
                f"{completion!r} against gold 3 and gold 5",
                today="(0.0, 0.0)",
                honest_wrong="(1.0, 0.0) for \\boxed{3}",
                should=(0.0, 0.0),
                run=lambda completion=completion: both(completion, "3", "5"),
            )
        )
        for name, completion in [
            ("two-boxes", r"\boxed{3} or \boxed{5}"),
            ("or-in-box", r"\boxed{3 \text{ or } 5}"),
            ("list-in-box", r"\boxed{3, 5}"),
            ("set-in-box", r"\boxed{\{3,5\}}"),
            ("labelled-values", r"\boxed{x=3, x=5}"),
            ("spans-after-phrase", "The answer is $3$ or $5$."),
            ("parenthesised-or", r"The answer is $3$ (or $5$)."),
            ("box-then-different-phrase", "\\boxed{3}\n\nThe answer is $x=5$."),
            ("box-then-last-line", "\\boxed{3}\n\n5"),
            ("phantom-box-hidden", r"\boxed{3}\phantom{\boxed{5}}"),
            ("think-and-answer-disagree-uppercase-tags", r"<THINK>\boxed{5}</THINK>\boxed{3}"),
            ("plus-minus", r"\boxed{4 \pm 1}"),
        ]
    ],
    guard(
        Attack(
            "hedge/answer-only-in-think",
            r"<think>\boxed{42}</think> with nothing after",
            today="ok 0",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"<think>The answer is \boxed{42}.</think>", "42"),
        )
    ),
    guard(
        Attack(
            "hedge/plus-minus-single-gold",
            r"\boxed{\pm 3} for the gold 3",
            today="ok 0",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{\pm 3}", "3"),
        )
    ),
    # ------------------------------------------------ regression guards: units, look-alikes
    guard(
        Attack(
            "units/cm-vs-m",
            "5 cm for 5 m",
            today="ok 0",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{5 \text{ cm}}", r"5 \text{ m}"),
        )
    ),
    guard(
        Attack(
            "units/dollars-vs-cents",
            "5 dollars for 5 cents",
            today="ok 0",
            honest_wrong="ok 0",
            should=OK0,
            run=lambda: direct(r"\boxed{5 \text{ dollars}}", r"5 \text{ cents}"),
        )
    ),
    guard(
        Attack(
            "lookalike/zero-width-space",
            "4\\u200b2 (a zero-width space inside the number) is not 42 nor 4",
            today="(0.0, 0.0)",
            honest_wrong="-",
            should=(0.0, 0.0),
            run=lambda: both("\\boxed{4\u200b2}", "42", "4"),
        )
    ),
    guard(
        Attack(
            "lookalike/full-width-digits-read-as-digits",
            "Decision: full-width and Arabic-Indic digits are the digits they denote (NFKC), so"
            " \\boxed{４２} is 42 and not 43; a policy gains nothing by writing them",
            today="(1.0, 0.0)",
            honest_wrong="-",
            should=(1.0, 0.0),
            run=lambda: both("\\boxed{４２}", "42", "43"),
        )
    ),
    guard(
        Attack(
            "lookalike/arabic-indic-fraction",
            "\\frac{٣}{٤} is 3/4",
            today="ok 1",
            honest_wrong="-",
            should=OK1,
            run=lambda: direct("\\boxed{\\frac{٣}{٤}}", r"\frac34"),
        )
    ),
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack(attack: Attack) -> None:
    assert attack.run() == attack.should, attack.attack
