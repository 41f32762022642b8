"""Red team of the agent rewards, second round: `sql`, `tool_call` and `scope: turns`.

One row per hole, written as a policy paid for every unit of reward would try it (or, for the
dataset rows, as the contract promises). Each row says what it earned when the red team wrote
it (`today`), what an honest wrong answer earns, and what it should earn; the test asserts the
last, so every row here fails until its hole is fixed.

Rows that go through the engine use the default `timeout_s` (5 s) and a query that SQLite runs
as one VM step for several seconds (`trim` over 60,000 characters: ~8 s here), stopped only by
the query process's kill at `time_limit_s` + 0.25 s.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import score
from rewardsmith._exceptions import ConfigError
from rewardsmith.models import Sample
from rewardsmith.spec import RewardSpec
from rewardsmith.turns import per_turn
from rewardsmith.verifiers.agents import sql_exec
from rewardsmith.verifiers.agents.sql import sql
from rewardsmith.verifiers.agents.sql_exec import run_query
from rewardsmith.verifiers.agents.tools import tool_call

from .test_redteam_agents import (
    SQL_GOLD,
    Attack,
    Env,
    Outcome,
    engine_outcome,
    guard,
)

# trim(X, Y) with 60,000 characters each: one VM step, quadratic (~8 s here); the progress
# handler never runs, the query process is killed at time_limit_s + 0.25 s.
TRIM_HANG = "SELECT length(trim(printf('%.*c', 60000, 'a'), printf('%.*c', 60000, 'b') || 'a'))"


def hanging_turns(env: Env) -> Outcome:
    """Three assistant turns, each a query that runs until it is killed (2.25 s each)."""
    turn = {"role": "assistant", "content": f"```sql\n{TRIM_HANG}\n```"}
    tool = {"role": "tool", "content": "error"}
    sample = {
        "id": "h",
        "completion": [turn, tool, turn, tool, turn],
        "reference": {"db": str(env.db), "query": SQL_GOLD},
    }
    spec = {"rewards": {"q": {"type": "sql", "scope": "turns"}}, "timeout_s": 10}
    return engine_outcome(spec, sample)


def spec_accepted(component: dict[str, Any]) -> Outcome:
    try:
        RewardSpec.from_dict({"rewards": {"q": component}})
    except ConfigError:
        return ("refused",)
    return ("accepted",)


def hang_under_long_limit(env: Env) -> Outcome:
    """`time_limit_s: 4.9` under the default `timeout_s: 5`: the spec is accepted."""
    sample = {
        "id": "l",
        "completion": f"```sql\n{TRIM_HANG}\n```",
        "reference": {"db": str(env.db), "query": SQL_GOLD},
    }
    try:
        return engine_outcome({"rewards": {"q": {"type": "sql", "time_limit_s": 4.9}}}, sample)
    except ConfigError:
        return ("refused",)


def memory_of_a_large_result(env: Env) -> Outcome:
    """Rows of ~memory_mb (32 MB) in total: the peak memory of the query process (over its
    idle size) and of the caller (Python allocations), as multiples of memory_mb."""
    mb = 32
    limits = {"time_limit_s": 2, "max_rows": 10_000, "memory_mb": mb}
    run_query(env.db, "SELECT 1", **limits)
    pid = sql_exec._PROCESS._proc.pid  # type: ignore[union-attr]

    def kb(key: str) -> int:
        status = Path(f"/proc/{pid}/status").read_text()
        return int(status.split(key + ":")[1].split("kB")[0])

    idle = kb("VmRSS")
    query = (
        f"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < {mb - 2}) "
        "SELECT i || printf('%.*c', 999950, 'a') FROM c"
    )
    tracemalloc.start()
    rows = run_query(env.db, query, **limits)
    caller = tracemalloc.get_traced_memory()[1] / 2**20 / mb
    tracemalloc.stop()
    child = (kb("VmHWM") - idle) / 1024 / mb
    assert len(rows) == mb - 2
    over = [name for name, ratio in (("query process", child), ("caller", caller)) if ratio > 1.5]
    return ("within", 1.5) if not over else ("over", tuple(over))


def constant_guess(env: Env) -> Outcome:
    reference = {"db": str(env.db), "query": "SELECT count(*) FROM singer WHERE age > 25"}
    result = sql()(Sample(id="c", completion="```sql\nSELECT 3\n```", reference=reference))
    return result.status, result.score


TOOL_GOLD_TURN = {"tool_calls": [{"name": "get_weather", "parameters": {"city": "Paris"}}]}


def openai_call(name: str, **arguments: Any) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"role": "assistant", "content": None, "tool_calls": [{"function": function}]}


def turns_direct(completion: list[dict[str, Any]], references: list[Any]) -> Outcome:
    fn = per_turn(tool_call())
    result = fn(Sample(id="t", completion=completion, metadata={"turn_references": references}))
    return result.status, result.score


TOOL_GOLD = {"tool_calls": [{"name": "f", "parameters": {"q": 1}}]}
CALL_TEXT = '{"name": "f", "parameters": {"q": 1}}'


def no_assistant_message(role: str, scope: str) -> Outcome:
    """The gold call written by another party (a tool result, a user message) or under a role
    that is not exactly `assistant`, in a conversation with no `assistant` message."""
    completion = [{"role": "tool", "content": "f was called"}, {"role": role, "content": CALL_TEXT}]
    spec = {"rewards": {"t": {"type": "tool_call", "think": False, "scope": scope}}}
    (result,) = score([{"completion": completion, "reference": TOOL_GOLD}], spec)
    return result.status, result.reward


ATTACKS = [
    # ---------------------------------------------------------------- sql, time
    guard(
        Attack(
            "turns-sql-hanging-turns-timeout",
            "scope: turns with sql's defaults: three turns, each a query killed at 2.25 s; "
            "per_turn ran them one after another past the spec's timeout_s (a 5 s spec is now "
            "refused for sql under scope: turns; under 10 s, the turn budget is 5.15 s)",
            today="timeout (null reward)",
            honest_wrong="ok 0 (three wrong queries)",
            # Fixed: the three turns start within the budget and each runs to its kill (0); a
            # turn that would start past the budget scores the floor (-1), so hanging a turn
            # never spares the later ones (test_turns.py)
            should=("ok", 0.0),
            run=hanging_turns,
        )
    ),
    guard(
        Attack(
            "sql-time-limit-not-declared",
            "sql does not declare its worst case (registry.timed): time_limit_s 4.9 under the "
            "default timeout_s 5 is accepted, though one sample takes 2 x 5.15 s",
            today="accepted",
            honest_wrong="-",
            should=("refused",),
            run=lambda env: spec_accepted({"type": "sql", "time_limit_s": 4.9}),
        )
    ),
    guard(
        Attack(
            "sql-hang-under-accepted-spec",
            "the spec of the row above, and one query that runs until it is killed",
            today="timeout (null reward)",
            honest_wrong="ok 0",
            should=("refused",),
            run=hang_under_long_limit,
        )
    ),
    guard(
        Attack(
            "turns-hides-sql-time-limit",
            "scope: turns drops the worst case the reward declares (registry.timed): code "
            "with timeout_s 10 is refused under the spec's 5 s, the same under scope: turns "
            "is accepted (one turn alone outlives the spec's timeout)",
            today="accepted",
            honest_wrong="-",
            should=("refused",),
            run=lambda env: spec_accepted({"type": "code", "timeout_s": 10, "scope": "turns"}),
        )
    ),
    # ---------------------------------------------------------------- sql, memory
    guard(
        Attack(
            "sql-memory-copies-not-counted",
            "rows of ~memory_mb: the query process holds the rows and their marshal copy "
            "(~2.8x memory_mb), the caller the bytes and the rows (~1.8x): ~4.6x the budget "
            "(1.2 GB per sample at the default 256 MB)",
            today="over (query process 2.8x, caller 1.8x)",
            honest_wrong="-",
            should=("within", 1.5),
            run=memory_of_a_large_result,
        )
    ),
    # ---------------------------------------------------------------- sql, luck
    guard(
        Attack(
            "sql-constant-guess",
            "a count guessed as a constant, no table read: SELECT 3 for "
            "SELECT count(*) FROM singer WHERE age > 25",
            today="ok 1",
            honest_wrong="ok 0",
            should=("ok", 0.0),
            run=constant_guess,
        ),
        marks=pytest.mark.xfail(
            strict=True,
            reason="execution accuracy compares results, not how they were reached: a "
            "constant equal to the gold's result scores 1 (the README says so)",
        ),
    ),
    # ---------------------------------------------------------------- scope: turns, references
    guard(
        Attack(
            "turns-validity-depends-on-trajectory",
            "turn_references [good, malformed]: a trajectory that stops after one wrong turn "
            "is ok -2.5; the same trajectory with a second turn reaches the malformed gold "
            "and is invalid (left out), so going on escapes the penalty",
            today="ok -2.5 (one turn) / invalid (two turns)",
            honest_wrong="ok -2.5",
            should=("invalid", None),
            run=lambda env: turns_direct(
                [openai_call("search", q="x")], [TOOL_GOLD_TURN, {"tool_calls": "oops"}]
            ),
        )
    ),
    guard(
        Attack(
            "turns-empty-references",
            "metadata.turn_references is []: every trajectory scores the floor, ok, the "
            "right call included (a dataset without golds)",
            today="ok -3",
            honest_wrong="ok -3",
            should=("invalid", None),
            run=lambda env: turns_direct([openai_call("get_weather", city="Paris")], []),
        )
    ),
    # ---------------------------------------------------------------- who wrote the answer
    guard(
        Attack(
            "final-turn-is-a-tool-message",
            "no assistant message: the last message, a tool result, is read as the answer",
            today="ok 3",
            honest_wrong="ok -3",
            should=("invalid", None),  # the pipeline's chat, never read as an answer
            run=lambda env: no_assistant_message("tool", "final"),
        )
    ),
    guard(
        Attack(
            "turns-scores-a-user-message",
            "scope: turns, no assistant message: the last message (a user's) is the one turn",
            today="ok 3",
            honest_wrong="ok -3",
            should=("invalid", None),  # the pipeline's chat, never read as an answer
            run=lambda env: no_assistant_message("user", "turns"),
        )
    ),
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack(attack: Attack, env: Env) -> None:
    assert attack.run(env) == attack.should, attack.attack
