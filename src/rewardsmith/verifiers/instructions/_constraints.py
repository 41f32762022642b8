"""The `constraints` reward: a small boolean expression over instruction checks.

The reference (or ``metadata.constraints``) is one expression node::

    {"id": "punctuation:no_comma"}                           # a leaf: one check
    {"id": "length_constraints:number_words",
     "kwargs": {"relation": "at least", "num_words": 300}}
    {"all_of": [node, ...]}                                  # parallel: every one holds
    {"any_of": [node, ...]}                                  # alternatives: one holds
    {"not": node}                                            # must not hold
    {"if": node, "then": node, "else": node}                 # branching ("else" optional)

Any of IFEval's 25 and IFBench's 58 instruction ids may be a leaf (the two id sets do not
overlap). ``reward: all`` gives the truth of the whole expression as 1/0; ``reward:
fraction`` (default) the fraction of *scored* leaves satisfied: a leaf under an odd number of
``not`` is satisfied when its check fails; the leaves of an ``if`` condition only decide the
branch and are not scored; the leaves of the branch not taken are not scored. With no scored
leaf left (e.g. an ``if`` without ``else`` whose condition fails) the reward is the truth of
the whole expression. Each leaf is checked once (strict, or loose over the official loose
variants), and `detail.leaves` lists every leaf with its verdict.

A response without a word (empty, blank, invisible, punctuation-only) is no answer: it
scores 0 whatever the expression, so ``{"not": <fewer than 50 words>}`` or an ``if`` without
``else`` never pays an empty reply. A checker that raises is an `error` of the sample (its
leaf's verdict None), never a verdict that ``not`` would flip into a pass.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ...models import Sample, Score
from ...registry import RewardFn, bounded, reward
from .._words import has_words
from ._attempt import MIN_PROSE_WORDS, attempt_rule, prompt_text
from ._base import Builder, Check, InstructionError, build
from ._evaluate import Evaluator
from ._ifbench import IFBENCH
from ._ifeval import IFEVAL
from ._reward import _PRELOAD, checker_failed, too_long

__all__ = ["ALL_CHECKERS", "MAX_DEPTH", "MAX_LEAVES", "Node", "constraints", "parse_expression"]

MAX_LEAVES = 64
"""Most leaf checks in one expression."""

MAX_DEPTH = 16
"""Deepest nesting of an expression."""

ALL_CHECKERS: dict[str, Builder] = {**IFEVAL, **IFBENCH}
"""Every instruction id a leaf may use."""


@dataclass
class Node:
    """One parsed expression node."""

    op: Literal["leaf", "all_of", "any_of", "not", "if"]
    children: list[Node] = field(default_factory=list)
    id: str = ""
    kwargs: dict[str, Any] = field(default_factory=dict)
    check: Check | None = None
    path: str = "$"


def parse_expression(data: Any, path: str = "$", depth: int = 0) -> Node:
    """Validate an expression and build its leaf checks; `InstructionError` names the place."""
    if depth > MAX_DEPTH:
        raise InstructionError(f"{path}: nested deeper than {MAX_DEPTH}")
    if not isinstance(data, Mapping):
        raise InstructionError(f"{path}: an expression node is an object, got {data!r}")
    keys = set(data)
    if "id" in keys:
        if not keys <= {"id", "kwargs"}:
            raise InstructionError(f"{path}: a leaf has only 'id' and 'kwargs', got {sorted(keys)}")
        kwargs = data.get("kwargs") or {}
        try:
            check = build(ALL_CHECKERS, data["id"], kwargs)
        except InstructionError as exc:
            raise type(exc)(f"{path}: {exc}") from None
        return Node("leaf", id=data["id"], kwargs=dict(kwargs), check=check, path=path)
    for op in ("all_of", "any_of"):
        if keys == {op}:
            items = data[op]
            if not isinstance(items, list) or not items:
                raise InstructionError(f"{path}.{op}: must be a non-empty list")
            children = [
                parse_expression(item, f"{path}.{op}[{i}]", depth + 1)
                for i, item in enumerate(items)
            ]
            return Node(op, children, path=path)  # type: ignore[arg-type]
    if keys == {"not"}:
        return Node("not", [parse_expression(data["not"], f"{path}.not", depth + 1)], path=path)
    if "if" in keys and "then" in keys and keys <= {"if", "then", "else"}:
        children = [
            parse_expression(data[k], f"{path}.{k}", depth + 1)
            for k in ("if", "then", "else")
            if k in data
        ]
        return Node("if", children, path=path)
    raise InstructionError(
        f"{path}: unknown node {sorted(keys)}; use id/kwargs, all_of, any_of, not, if/then/else"
    )


def _leaves(node: Node) -> list[Node]:
    return [node] if node.op == "leaf" else [leaf for c in node.children for leaf in _leaves(c)]


class _Run:
    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator
        self.verdicts: dict[int, bool | None] = {}
        self.scored: list[tuple[Node, bool]] = []  # (leaf, satisfied)
        self.failed = False  # a checker raised: the expression has no truth value

    def leaf(self, node: Node) -> bool:
        key = id(node)
        if key not in self.verdicts:
            assert node.check is not None
            self.verdicts[key] = self.evaluator.holds(node.check, node.id)
        verdict = self.verdicts[key]
        if verdict is None:
            self.failed = True
        return bool(verdict)

    def value(self, node: Node, negated: bool = False, scored: bool = True) -> bool:
        """Truth of `node`; records its leaves' satisfaction when `scored`."""
        if node.op == "leaf":
            holds = self.leaf(node)
            if scored:
                self.scored.append((node, holds != negated))
            return holds
        if node.op == "not":
            return not self.value(node.children[0], not negated, scored)
        if node.op == "if":
            condition = self.value(node.children[0], scored=False)
            if condition:
                return self.value(node.children[1], negated, scored)
            if len(node.children) == 3:
                return self.value(node.children[2], negated, scored)
            return True
        # all_of / any_of: every child is evaluated, so every leaf is scored
        values = [self.value(child, negated, scored) for child in node.children]
        return all(values) if node.op == "all_of" else any(values)


def _expression(sample: Sample) -> Any:
    data = sample.reference
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            return None
    if data is None:
        data = sample.metadata.get("constraints")
    return data


_LOOKALIKES = "a check's verdict differs on the text as a reader sees it (lookalike characters)"


@reward("constraints", preload=(*_PRELOAD, "emoji", "syllapy"))
def constraints(
    *,
    mode: Literal["strict", "loose"] = "strict",
    reward: Literal["fraction", "all"] = "fraction",
    training: bool = False,
    min_words: int = MIN_PROSE_WORDS,
    require_topic: bool = False,
) -> RewardFn:
    """A boolean expression (all_of / any_of / not / if-then-else) over instruction checks.

    ``reward: fraction`` scores the fraction of scored leaf constraints satisfied, ``all`` the
    truth of the whole expression. See the module docstring for the expression format.
    `training`, `min_words` and `require_topic` are those of `ifeval` (the prompt's words
    include every leaf's kwargs), except that a leaf whose verdict differs on the response
    as a reader sees it scores the whole sample 0: under a `not` the stricter verdict would
    be the looser one.
    """
    rule = attempt_rule(training, min_words, require_topic)

    def score(sample: Sample) -> Score:
        data = _expression(sample)
        if data is None:
            return Score.failed("not_applicable", "no constraint expression in the reference")
        try:
            root = parse_expression(data)
        except InstructionError as exc:
            return Score.failed(exc.status, str(exc), cause=exc.cause)  # type: ignore[arg-type]
        leaves = _leaves(root)
        if len(leaves) > MAX_LEAVES:
            return Score.failed("invalid", f"{len(leaves)} leaves, over {MAX_LEAVES}")
        response = sample.text
        over = too_long(response)
        if over is not None:
            return over
        if not has_words(response):
            return Score.ok(0.0, reason="no words: a blank response is no answer")
        if rule is not None:
            ids, kwargs = [leaf.id for leaf in leaves], [leaf.kwargs for leaf in leaves]
            why = rule.why_not(response, prompt_text(sample.prompt), ids, kwargs)
            if why is not None:
                return Score.ok(0.0, reason=f"no attempt at the task: {why}", training=True)
        run = _Run(Evaluator(response, mode, rule is not None))
        holds = run.value(root)
        detail: dict[str, Any] = {
            "mode": mode,
            "leaves": [
                {"path": leaf.path, "id": leaf.id, "follows": run.verdicts.get(id(leaf))}
                for leaf in leaves
            ],
        }
        if run.failed:
            return checker_failed(run.evaluator.errors, rule is not None, **detail)
        if run.evaluator.lookalikes:
            return Score.ok(0.0, reason=_LOOKALIKES, lookalikes=run.evaluator.lookalikes, **detail)
        if reward == "all" or not run.scored:
            value = float(holds)
        else:
            value = sum(ok for _, ok in run.scored) / len(run.scored)
        return Score.ok(
            value,
            **detail,
            holds=holds,
            satisfied_leaves=sum(ok for _, ok in run.scored),
            scored_leaves=len(run.scored),
        )

    return bounded(score, 0.0, 1.0)
