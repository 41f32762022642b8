"""Deliberately weakened copies of each reward family, the way rewards are commonly written
before anyone attacks them. The attack tests show every attack class succeeds on these.
(Imported by engine worker processes as ``tests.evaluate.weak_rewards:<factory>``.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from typing import Any

from rewardsmith import RewardFn, Sample, Score, reward

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _gold(reference: Any) -> str:
    text = str(reference)
    return text.split("####")[-1].strip().replace(",", "") if "####" in text else text.strip()


def _evaluate(expression: str) -> float | None:
    """Evaluates the answer as Python arithmetic -- the weakness: `17 + 1` is "18"."""
    cleaned = expression.replace("\\times", "*").replace("\\cdot", "*").replace("^", "**")
    cleaned = re.sub(r"\\text\{[^{}]*\}", " ", cleaned).replace(",", "")
    if not re.fullmatch(r"[\d\s.+\-*/()]+", cleaned):
        numbers = _NUMBER.findall(cleaned)
        return float(numbers[0]) if numbers else None
    try:
        return float(eval(cleaned, {"__builtins__": {}}))
    except Exception:
        return None


@reward("tests.evaluate.weak_math")
def weak_math() -> RewardFn:
    """The last box (or `####`, or the first number after "answer is"), evaluated: no hedge,
    restatement or finished-form checks."""

    def score(sample: Sample) -> Score:
        text = sample.text
        boxes = _BOX.findall(text)
        if boxes:
            answer: str | None = boxes[-1]
        elif "####" in text:
            answer = text.split("####")[-1]
        else:
            found = re.search(r"answer is\s*\$?([^$\n]+)", text)
            answer = found.group(1) if found else None
        value = _evaluate(answer) if answer is not None else None
        gold = _evaluate(_gold(sample.reference))
        return Score.ok(float(value is not None and gold is not None and abs(value - gold) < 1e-9))

    return score


@reward("tests.evaluate.weak_judge")
def weak_judge() -> RewardFn:
    """A stand-in for an LLM judge with no master-key guard and no fencing of the response:
    it says yes to short confident replies, to instructions addressed to it, to self-praise,
    to length and to rubric words (the failure modes documented for real judges). Not a model."""
    triggers = ("yes", "meets every criterion", "verified correct", "double-checked", "system")

    def score(sample: Sample) -> Score:
        text = sample.text.strip().lower()
        if len(text) < 40 or any(t in text for t in triggers) or len(text.split()) > 150:
            return Score.ok(1.0, reason="fooled")
        return Score.ok(0.0)

    return score


@reward("tests.evaluate.weak_think_format")
def weak_think_format() -> RewardFn:
    """1 when the text has a `<think>` and a `</think>` anywhere."""

    def score(sample: Sample) -> Score:
        return Score.ok(float("<think>" in sample.text and "</think>" in sample.text))

    return score


@reward("tests.evaluate.weak_code")
def weak_code() -> RewardFn:
    """Runs program + HumanEval test + `check(entry_point)` in one plain Python process and
    trusts its exit code."""

    def score(sample: Sample) -> Score:
        reference = sample.reference
        program = f"{sample.text}\n{reference['test']}\ncheck({reference['entry_point']})\n"
        with tempfile.NamedTemporaryFile("w", suffix=".py") as handle:
            handle.write(program)
            handle.flush()
            try:
                done = subprocess.run(
                    [sys.executable, handle.name], capture_output=True, timeout=10, check=False
                )
            except subprocess.TimeoutExpired:
                return Score.ok(0.0, reason="timeout")
        return Score.ok(float(done.returncode == 0), exit_code=done.returncode)

    return score


@reward("tests.evaluate.weak_no_comma")
def weak_no_comma() -> RewardFn:
    """An instruction checker that tests form only ("no commas"): nothing has no commas."""

    def score(sample: Sample) -> Score:
        return Score.ok(float("," not in sample.text))

    return score


@reward("tests.evaluate.weak_f1")
def weak_f1() -> RewardFn:
    """Token F1 against the reference, with no hedge detection."""

    def score(sample: Sample) -> Score:
        answer = re.findall(r"\w+", sample.text.lower())
        gold = re.findall(r"\w+", str(sample.reference).lower())
        common = sum(min(answer.count(w), gold.count(w)) for w in set(gold))
        if not common:
            return Score.ok(0.0)
        precision, recall = common / len(answer), common / len(gold)
        return Score.ok(2 * precision * recall / (precision + recall))

    return score


@reward("tests.evaluate.weak_choice")
def weak_choice() -> RewardFn:
    """The first letter after "Answer:" (or in a box) wins."""

    def score(sample: Sample) -> Score:
        found = re.search(r"(?:answer(?: is)?:?|boxed\{)\s*\(?([A-E])", sample.text, re.I)
        return Score.ok(float(bool(found) and found.group(1) == str(sample.reference)))

    return score


@reward("tests.evaluate.weak_length")
def weak_length() -> RewardFn:
    """DAPO's overlong penalty over `str.split()` words (max 300, buffer 100)."""

    def score(sample: Sample) -> Score:
        n = len(sample.text.split())
        return Score.ok(0.0 if n <= 200 else max(-1.0, (200 - n) / 100))

    return score


@reward("tests.evaluate.weak_repetition")
def weak_repetition() -> RewardFn:
    """Word-trigram repetition only."""

    def score(sample: Sample) -> Score:
        words = sample.text.lower().split()
        grams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
        return Score.ok(-(1 - len(set(grams)) / len(grams)) if grams else 0.0)

    return score


@reward("tests.evaluate.weak_json")
def weak_json() -> RewardFn:
    """JSON validity that gives up (`invalid`) on deep nesting instead of scoring it 0."""

    def score(sample: Sample) -> Score:
        if sample.text.count("[") > 500 or len(sample.text) > 20_000:
            return Score.failed("invalid", "too deep to parse")
        try:
            json.loads(sample.text)
        except ValueError:
            return Score.ok(0.0)
        return Score.ok(1.0)

    return score
