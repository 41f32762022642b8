"""Answers as keys: group completions by the answer they commit to (majority vote, best-of-N
clustering) with the math reward's own rules.

`committed_answer` is the extraction the reward uses (hedges, restatements and answers not in
finished form give no answer); `answer_key` is a canonical key (equal keys are the same
answer: `0.5`, `\\frac{2}{4}` and `x = \\frac12` share `n:1/2`); `same_answer` decides the pairs
keys cannot (`\\sqrt{12}` and `2\\sqrt{3}`). Group by key first, then compare one
representative per key pairwise.
"""

from __future__ import annotations

from dataclasses import replace

from ._answer import Answer, parse_answer
from ._config import MathConfig
from ._equivalence import compare
from ._extract import Extraction, extract_answer
from ._form import absolute_operations
from ._normalize import key, normalize, parse_number
from ._numeric import time_limit

__all__ = ["answer_key", "committed_answer", "same_answer"]

_DEFAULT = MathConfig()


def committed_answer(
    completion: str, config: MathConfig = _DEFAULT, *, prompt: str | None = None
) -> Extraction:
    """The one answer a completion commits to, or no answer (with the reason) when it hedges,
    restates the question, or is not in finished form (`\\binom{31}{28}`, `16-3-4`: there is
    no gold to compare forms with, so any operation left on numbers counts)."""
    with time_limit():
        got = extract_answer(completion, config, prompt=prompt)
    if got.answer is None or not config.finished_form:
        return got
    left = absolute_operations(normalize(got.answer), config)
    if left:
        return Extraction(
            None, got.source, "no answer: not evaluated: " + ", ".join(sorted(left)), got.candidates
        )
    return got


def _key(answer: Answer) -> str:
    if answer.kind == "expr":
        number = parse_number(answer.text) if answer.tree is None else None
        if number is not None and answer.unit is not None:
            dims = ",".join(f"{name}^{power}" for name, power in answer.unit.dims)
            return f"n:{number * answer.unit.factor}[{dims}]"
        if number is not None:
            return f"n:{number}"
        return key(answer.text) + (f"[{answer.unit.text}]" if answer.unit else "")
    if answer.kind in ("set", "list", "union"):
        return "{" + ",".join(sorted({_key(item) for item in answer.items})) + "}"
    if answer.kind == "record":  # `AB=4, CD=5`: each value under its label, in any order
        labelled = zip(answer.labels, answer.items, strict=True)
        pairs = sorted(f"{label}={_key(item)}" for label, item in labelled)
        return f"record({','.join(pairs)})"
    if answer.kind in ("tuple", "matrix"):
        inner = ",".join(_key(item) for item in answer.items)
        return f"{answer.kind}{answer.brackets}({inner})"
    if answer.kind in ("relation", "chain", "approx"):  # `x \\le 5`, `x = 2+3 = 5`, `a \\approx b`
        sides = [_key(item) for item in answer.items]
        ops = answer.ops or ("=" if answer.kind == "chain" else "\\approx",) * (len(sides) - 1)
        joined = "".join(f"{op}{side}" for op, side in zip(ops, sides[1:], strict=True))
        return f"{answer.kind}({sides[0]}{joined})"
    return f"{answer.kind}:{key(answer.text)}:{answer.value}"


def answer_key(answer: str) -> str:
    """A canonical key for an extracted answer: equal keys are the same answer. Different keys
    may still be the same answer (`\\sqrt{12}`, `2\\sqrt{3}`): ask `same_answer`."""
    structure = parse_answer(normalize(answer))
    if structure.kind in ("set", "list") and len(structure.items) == 1:
        structure = structure.items[0]
    if structure.kind == "record":  # a record's labels are part of it
        return _key(structure)
    return _key(replace(structure, labels=()))


def same_answer(a: str, b: str, *, symbolic: bool = True) -> bool:
    """Whether two extracted answers are the same (symmetric; units converted, labels and
    order of set elements ignored). Like the reward, it gives up (False) past the numeric
    time limit."""
    return compare(a, b, symbolic=symbolic).equal and compare(b, a, symbolic=symbolic).equal
