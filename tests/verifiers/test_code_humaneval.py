"""Must show 1: every HumanEval canonical solution passes; a stubbed body fails."""

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


def test_canonical_solutions_all_pass() -> None:
    fn = code()
    failures = []
    for problem in _problems():
        score = fn(sample(problem["prompt"] + problem["canonical_solution"], _reference(problem)))
        if score.status != "ok" or score.score != 1.0:
            failures.append((problem["task_id"], score.status, score.detail.get("reason")))
    assert failures == []


def test_canonical_solutions_pass_with_prepend_prompt_and_fences() -> None:
    fn = code(prepend_prompt=True)
    for problem in _problems()[:10]:
        completion = "Here you go:\n```python\n" + problem["canonical_solution"] + "```\n"
        score = fn(sample(completion, _reference(problem), prompt=problem["prompt"]))
        assert score.score == 1.0, (problem["task_id"], score.detail)


def test_stubbed_bodies_fail() -> None:
    fn = code()
    zeros, not_zero = 0, []
    problems = _problems()
    for problem in problems:
        score = fn(sample(_stub(problem), _reference(problem)))
        assert score.status == "ok", (problem["task_id"], score.detail)
        if score.score == 0.0:
            zeros += 1
        else:
            not_zero.append(problem["task_id"])
    assert zeros >= 160, not_zero
