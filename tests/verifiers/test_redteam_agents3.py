"""Red team of the agent rewards, third round: the changes of 1d4cd61 (row digests, the turn
time budget, `final_turn` without a fallback, declared reference checks).

One row per hole, written as a policy paid for every unit of reward would try it (or, for the
dataset and spec rows, as the contract promises). Each row says what it earned when the red
team wrote it (`today`), what an honest wrong answer earns, and what it should earn; the test
asserts the last, so every row here fails until its hole is fixed.
"""

from __future__ import annotations

import contextlib
import importlib
import time
import tracemalloc
from typing import Any

import pytest

from rewardsmith._exceptions import ConfigError
from rewardsmith.models import Sample, Score
from rewardsmith.spec import RewardSpec
from rewardsmith.turns import per_turn

from .test_redteam_agents import (
    SQL_GOLD,
    Attack,
    Env,
    Outcome,
    engine_outcome,
    guard,
)

sql_module = importlib.import_module("rewardsmith.verifiers.agents.sql")


SLOW_GOLD = (
    "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3300000) "
    "SELECT count(*) FROM c"
)


def wide_row(columns: int) -> str:
    """One row of `columns` values of 999,000 U+0001 each: under the 1 MB value cap, the
    memory_mb of Python objects and SQLite's heap, but the digest's repr makes each 4 MB."""
    return "SELECT " + ", ".join(["printf('%.*c', 999000, char(1))"] * columns)


# ---------------------------------------------------------------- sql: digests in the worker


def digest_overruns_the_deadline(env: Env) -> Outcome:
    """sql at its defaults (time_limit_s 2, so the spec's 5 s is accepted: 4.75 s declared),
    a gold that takes ~1 s (under its 2 s limit), and a prediction of one row of 150
    `zeroblob(999000)`: 150 MB,
    under memory_mb (256) and the 1 MB value cap. The row arrives at ~1.4 s, before the
    deadline (2.25 s); the worker then spends ~4 s making its digest (repr: 4 bytes per zero
    byte, its UTF-8 copy, BLAKE2b of 600 MB) before it looks at the deadline again."""
    query = "SELECT " + ", ".join(["zeroblob(999000)"] * 150)
    sample = {
        "id": "w",
        "completion": f"```sql\n{query}\n```",
        "reference": {"db": str(env.db), "query": SLOW_GOLD},
    }
    return engine_outcome({"rewards": {"q": {"type": "sql"}}}, sample)


def digest_holds_past_the_deadline(env: Env) -> Outcome:
    """The prediction's query alone, as `sql` runs it (digests kept), with time_limit_s 2:
    how long it holds the caller, against the time_limit_s + 0.25 s that `worst_case_s` (and
    so the spec's refusal) counts on. Returns ("within", 2.5) or ("over", seconds)."""
    limits = {"time_limit_s": 2, "max_rows": 10_000, "memory_mb": 256}
    sql_module._digests(env.db, "SELECT 1", limits)  # the query process is up
    query = "SELECT " + ", ".join(["zeroblob(999000)"] * 150)
    started = time.monotonic()
    with contextlib.suppress(sql_module.QueryFailed):
        sql_module._digests(env.db, query, limits)
    held = time.monotonic() - started
    return ("within", 2.5) if held <= 2.5 else ("over", round(held))


def digest_memory(env: Env) -> Outcome:
    """The caller's peak Python allocations while digesting a 32-column row (32 MB of
    values), as a multiple of the values' size (d4217a7 held the row once: ~2x)."""
    limits = {"time_limit_s": 30, "max_rows": 10_000, "memory_mb": 256}
    sql_module._digests(env.db, "SELECT 1", limits)
    tracemalloc.start()
    digests = sql_module._digests(env.db, wide_row(32), limits)
    peak = tracemalloc.get_traced_memory()[1] / 2**20 / 32
    tracemalloc.stop()
    assert len(digests) == 16
    return ("within", 2.0) if peak <= 2.0 else ("over", round(peak))


# ---------------------------------------------------------------- scope: turns, the budget


def slow_golds_correct_turns(env: Env) -> Outcome:
    """Three turns, each the exact gold query; each gold takes ~1.5 s (under its 2 s limit),
    so each turn takes ~3 s. timeout_s 10 (budget 5.15 s): the third turn starts at ~6 s and
    scores the floor (-1, the bad-format score) with status ok, although it would have ended
    at ~9 s, inside the timeout."""

    def query(k: int) -> str:
        return (
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c "
            f"WHERE i < {5_000_000 + k}) SELECT count(*) - {k} FROM c"
        )

    completion: list[dict[str, Any]] = []
    for k in range(3):
        completion += [
            {"role": "assistant", "content": f"```sql\n{query(k)}\n```"},
            {"role": "tool", "content": "1 row"},
        ]
    references = [{"db": str(env.db), "query": query(k)} for k in range(3)]
    sample = {"id": "s", "completion": completion, "metadata": {"turn_references": references}}
    spec = {"rewards": {"q": {"type": "sql", "scope": "turns"}}, "timeout_s": 10}
    status, reward = engine_outcome(spec, sample)
    return status, None if reward is None else round(reward, 2)


def many_turns(env: Env) -> Outcome:
    """tool_call under scope: turns (default spec, timeout_s 5), one gold turn, 50,000
    one-character assistant turns (~1.8 MB of JSON). Every turn past the first is the floor
    without calling the reward, but each view copies its whole prefix: quadratic, ~6 s."""
    gold = {"tool_calls": [{"name": "f", "parameters": {}}]}
    sample = {
        "id": "m",
        "completion": [{"role": "assistant", "content": "x"}] * 50_000,
        "metadata": {"turn_references": [gold]},
    }
    return engine_outcome({"rewards": {"t": {"type": "tool_call", "scope": "turns"}}}, sample)


def unbounded_floor_is_zero(env: Env) -> Outcome:
    """A reward that declares no range (reward_model's raw logit, likelihood's logprob,
    similarity, rubric) under scope: turns: every turn is bad (-2) and slow (0.3 s); under a
    1 s timeout the budget (half of it) floors turns 2 and on at 0, above what they earn.
    Returns (the 2-turn trajectory's score, the 8-turn one's)."""

    def slow_bad(sample: Sample) -> Score:
        time.sleep(0.3)
        return Score.ok(-2.0)

    fn = per_turn(slow_bad, timeout_s=1.0)
    turn = {"role": "assistant", "content": "bad"}

    def run(n: int) -> float | None:
        return fn(Sample(id="u", completion=[turn] * n, reference="r")).score

    return run(2), run(8)


# ---------------------------------------------------------------- spec loading


def string_timeout(env: Env) -> Outcome:
    """`timeout_s: "5"` (a JSON spec, or a quoted YAML value): pydantic reads it as 5.0, but
    `ComponentSpec.under` only passes numbers on, so the turns get no budget and declare no
    worst case: the spec that is refused with `timeout_s: 5` is accepted."""
    try:
        RewardSpec.from_dict(
            {"rewards": {"q": {"type": "sql", "scope": "turns"}}, "timeout_s": "5"}
        )
    except ConfigError:
        return ("refused",)
    return ("accepted",)


TRIM_HANG = "SELECT length(trim(printf('%.*c', 60000, 'a'), printf('%.*c', 60000, 'b') || 'a'))"


def string_timeout_hangs(env: Env) -> Outcome:
    """The spec of the row above and three turns that each run until their query is killed."""
    turn = {"role": "assistant", "content": f"```sql\n{TRIM_HANG}\n```"}
    tool = {"role": "tool", "content": "error"}
    sample = {
        "id": "h",
        "completion": [turn, tool, turn, tool, turn],
        "reference": {"db": str(env.db), "query": SQL_GOLD},
    }
    spec = {"rewards": {"q": {"type": "sql", "scope": "turns"}}, "timeout_s": "5"}
    try:
        return engine_outcome(spec, sample)
    except ConfigError:
        return ("refused",)


# ---------------------------------------------------------------- final_turn without fallback


def role_spelling(reward: dict[str, Any], content: str) -> Outcome:
    """A chat whose only message has the role `model` (Gemini's spelling; `gpt` in ShareGPT,
    `Assistant`): no `assistant` message, so the text is "" and every reward scores an empty
    answer, status ok (d4217a7 scored the message)."""
    sample = {"id": "r", "completion": [{"role": "model", "content": content}], "reference": "4"}
    return engine_outcome({"rewards": {"c": reward}}, sample)


LONG = "The answer is \\boxed{4}. " + "pad " * 40


ATTACKS = [
    guard(
        Attack(
            "sql-digest-overruns-deadline",
            "one predicted row of 150 zeroblob(999000) under sql's defaults and the default "
            "timeout_s 5 (accepted: 4.75 s declared), a gold of ~1 s; the worker digests a "
            "batch after receiving it and checks the deadline only before the next one, so the "
            "prediction holds the worker ~5.5 s, not time_limit_s + 0.25 (d4217a7: ok 0)",
            today="timeout (null reward)",
            honest_wrong="ok 0",
            should=("ok", 0.0),
            run=digest_overruns_the_deadline,
        )
    ),
    guard(
        Attack(
            "sql-digest-holds-past-the-deadline",
            "the query of the row above, alone: the 150 MB row arrives before the 2.25 s "
            "deadline and its digest takes 2-4 s more; the deadline is checked only before "
            "the next batch (d4217a7: within, the reply was one message read by the deadline)",
            today="over (3-6 s)",
            honest_wrong="-",
            should=("within", 2.5),
            run=digest_holds_past_the_deadline,
        )
    ),
    guard(
        Attack(
            "sql-digest-repr-amplification",
            "a 32-column row of 999,000 U+0001 per value: row_digest builds repr (4 bytes "
            "per U+0001) and its UTF-8 copy, so the worker peaks at ~9.5x the values (a "
            "100-column row: +956 MB of RSS, d4217a7 +196 MB)",
            today="over (9.5x)",
            honest_wrong="-",
            should=("within", 2.0),
            run=digest_memory,
        )
    ),
    guard(
        Attack(
            "turns-budget-floors-correct-turns",
            "three correct sql turns whose golds take ~1.5 s each, timeout_s 10: the third "
            "turn starts past the 5.15 s budget and scores -1 (the bad-format floor), status "
            "ok; the sample ends at ~6 s, so scoring it would have fit under the timeout",
            today="ok 0.33 (-0.33 on a loaded machine: two turns floored)",
            honest_wrong="ok 0 (three wrong queries)",
            should=("ok", 1.0),
            run=slow_golds_correct_turns,
        ),
        marks=pytest.mark.xfail(
            strict=False,
            reason="documented limit: a turn that starts past the time budget scores the floor "
            "even if it would have been right; passes where each query takes under ~1.3 s "
            "(0.96 s on an idle machine here), fails on a loaded one",
        ),
    ),
    guard(
        Attack(
            "turns-quadratic-views-timeout",
            "tool_call, scope: turns, default spec: 50,000 one-character assistant turns; "
            "the budget floors turns but each floored view still copies its prefix",
            today="timeout (null reward)",
            honest_wrong="ok -3",
            should=("ok", -3.0),
            run=many_turns,
        )
    ),
    guard(
        Attack(
            "turns-budget-floor-zero-for-unbounded",
            "a reward without a declared range (reward_model raw, likelihood logprob, "
            "similarity, rubric): slow bad turns past the budget score 0, above their -2, so "
            "more bad turns raise the mean",
            today="(-2.0, -0.5)",
            honest_wrong="-2 per turn",
            should=(-2.0, -2.0),
            run=unbounded_floor_is_zero,
        )
    ),
    guard(
        Attack(
            "spec-string-timeout-drops-the-budget",
            'sql under scope: turns with timeout_s "5" (a string pydantic reads as 5.0): '
            "accepted, while timeout_s 5 is refused",
            today="accepted",
            honest_wrong="-",
            should=("refused",),
            run=string_timeout,
        )
    ),
    guard(
        Attack(
            "spec-string-timeout-hanging-turns",
            "the spec of the row above: three turns that each hang until their kill",
            today="timeout (null reward)",
            honest_wrong="ok 0",
            should=("refused",),
            run=string_timeout_hangs,
        )
    ),
    guard(
        Attack(
            "final-turn-role-model-math",
            "role 'model' (no 'assistant' message) holding a correct \\boxed{4}: scored as an "
            "empty answer with status ok (d4217a7: ok 1); a chat without an assistant "
            "message is the pipeline's wrapping, not the policy's text: it should say so",
            today="ok 0 (no answer: empty text)",
            honest_wrong="ok 0",
            should=("invalid", None),
            run=lambda env: role_spelling({"type": "math"}, LONG),
        )
    ),
    guard(
        Attack(
            "final-turn-role-model-length",
            "the same chat under an overlong penalty (max_length 20 chars): the 185-character "
            "answer is measured as empty and pays no penalty (d4217a7: -1)",
            today="ok 0 (best possible)",
            honest_wrong="ok -1",
            should=("invalid", None),
            run=lambda env: role_spelling(
                {"type": "length", "max_length": 20, "cache_length": 10, "unit": "chars"}, LONG
            ),
        )
    ),
]


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack(attack: Attack, env: Env) -> None:
    assert attack.run(env) == attack.should, attack.attack
