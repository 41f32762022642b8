"""Must show 1: HumanEval, all 164 problems. Canonical solutions pass; the five-line forger,
the next task's canonical body and `return None` stubs do not."""

from __future__ import annotations

import ast
import gzip
import json
from typing import Any

import pytest

from rewardsmith.verifiers.code import code

from ._code_helpers import HUMANEVAL, needs_bwrap, sample

pytestmark = [
    needs_bwrap,
    pytest.mark.skipif(not HUMANEVAL.exists(), reason=f"HumanEval data absent: {HUMANEVAL}"),
]

FORGER = """import sys, os
def f(x): return x
e = sys._getframe(1).f_locals["emit"]; e("test 0 1 -"); e("done 1"); os._exit(0)
"""
"""The five-line program of issue #9: 1.0 on 164/164 when the verdict was made in its process."""


def _problems() -> list[dict[str, Any]]:
    with gzip.open(HUMANEVAL, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _stub(problem: dict[str, Any]) -> str:
    """The prompt with the entry point's body replaced by `return None`."""
    program = problem["prompt"] + problem["canonical_solution"]
    tree = ast.parse(program)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == problem["entry_point"]:
            doc = ast.get_docstring(node, clean=False)
            node.body = [ast.Expr(ast.Constant(doc))] if doc else []
            node.body.append(ast.Return(ast.Constant(None)))
    return ast.unparse(tree)


def _reference(problem: dict[str, Any]) -> dict[str, str]:
    return {"test": problem["test"], "entry_point": problem["entry_point"]}


def _scores(fn, completions: list[str]) -> list[Any]:
    """Each problem scored with its own prompt (the dataset's `prompt` column)."""
    problems = _problems()
    return [
        fn(sample(completion, _reference(problem), prompt=problem["prompt"]))
        for problem, completion in zip(problems, completions, strict=True)
    ]


@pytest.fixture(scope="module")
def fn():
    return code()


def test_canonical_solutions_all_pass(fn) -> None:
    problems = _problems()
    scores = _scores(fn, [p["prompt"] + p["canonical_solution"] for p in problems])
    failures = [
        (p["task_id"], s.status, s.detail.get("reason"))
        for p, s in zip(problems, scores, strict=True)
        if s.status != "ok" or s.score != 1.0
    ]
    assert len(problems) == 164
    assert failures == []


def test_the_five_line_forger_scores_zero_everywhere(fn) -> None:
    scores = _scores(fn, [FORGER] * 164)
    assert [(s.status, s.score) for s in scores] == [("ok", 0.0)] * 164
    assert all("emit" in s.detail["reason"] for s in scores)  # no such frame to find


def test_the_next_tasks_canonical_body_scores_zero_everywhere(fn) -> None:
    problems = _problems()
    shifted = [
        p["prompt"] + problems[(i + 1) % len(problems)]["canonical_solution"]
        for i, p in enumerate(problems)
    ]
    scores = _scores(fn, shifted)
    assert [(s.status, s.score) for s in scores] == [("ok", 0.0)] * 164


def test_return_none_stubs_fail(fn) -> None:
    problems = _problems()
    scores = _scores(fn, [_stub(p) for p in problems])
    assert all(s.status == "ok" for s in scores)
    passed = [p["task_id"] for p, s in zip(problems, scores, strict=True) if s.score != 0.0]
    assert len(passed) <= 4, passed


def test_prompt_helpers_come_from_the_prompt_not_the_completion(fn) -> None:
    """find_zero's test evaluates `poly` from the prompt: a completion that redefines `poly`
    to return 0 (so that any root "works") and answers 0 scores 0; the canonical solution
    passes (the prompt is given here as the reference's `prompt`)."""
    problem = next(p for p in _problems() if p["entry_point"] == "find_zero")
    reference = {**_reference(problem), "prompt": problem["prompt"]}
    hack = "def poly(xs, x):\n    return 0\n\ndef find_zero(xs):\n    return 0.0\n"
    assert fn(sample(hack, reference)).score == 0.0
    canonical = problem["prompt"] + problem["canonical_solution"]
    assert fn(sample(canonical, reference)).score == 1.0


def test_canonical_solutions_pass_with_prepend_prompt_and_fences() -> None:
    fn = code(prepend_prompt=True)
    for problem in _problems()[:10]:
        completion = "Here you go:\n```python\n" + problem["canonical_solution"] + "```\n"
        score = fn(sample(completion, _reference(problem), prompt=problem["prompt"]))
        assert score.score == 1.0, (problem["task_id"], score.detail)
