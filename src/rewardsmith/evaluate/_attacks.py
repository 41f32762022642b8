"""Red-team attacks: the API attack generators are written against, and their registry.

An attack is an optimizer's trick. It is built from one data row (a `Target`: the prompt,
the reference, the gold answer and honest answers) and yields `Case`s: a completion that does
not do the task better, and the honest completion it must not beat (by default the row's
honest wrong answer). Generators live beside the reward families they attack
(`verifiers/math/_attacks.py`, `judges/_attacks.py`, ...) and register with `@attack`::

    @attack("hedge_two_boxes", family="answers", targets=("math",))
    def two_boxes(target: Target) -> Iterator[Case]:
        if target.gold is not None:
            yield Case(f"\\\\boxed{{{target.gold}}} or \\\\boxed{{{wrong_value(target.gold)}}}")

A module of your own that registers attacks is picked up when it is imported (for example
by the module of a custom reward type your spec names).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._exceptions import ConfigError

__all__ = [
    "Attack",
    "Case",
    "Target",
    "attack",
    "attacks_for",
    "honest_wrong",
    "registered_attacks",
    "wrong_makers",
]


@dataclass(frozen=True)
class Target:
    """One data row as the attacker sees it."""

    id: str
    prompt: str
    """The prompt as text ("" when the row has none)."""
    reference: Any
    metadata: dict[str, Any]
    gold: str | None
    """The gold final answer as text, when the reference has one."""
    right: str | None
    """An honest correct completion (the data's, or the reference solution), if any."""
    wrong: str | None
    """An honest wrong completion (the data's, or one made by a family's `honest_wrong`)."""
    params: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Reward type -> the parameters of the spec's components of that type (empty when the
    spec is unknown), so an attack can fit the spec (e.g. exceed its `max_length`)."""


@dataclass(frozen=True)
class Case:
    """One attacked completion and what it must not beat."""

    completion: str
    against: Literal["wrong", "right"] = "wrong"
    """Compared with the row's honest wrong answer, or with its honest right one (for tricks
    that keep the right answer but skip the work, such as an empty `<think>`)."""
    baseline: str | None = None
    """A baseline of the case's own instead (e.g. the same overlong text with plain spaces)."""
    note: str = ""
    """Which variant this is (shown in the report)."""


AttackFn = Callable[[Target], Iterable[Case]]


@dataclass(frozen=True)
class Attack:
    """A registered attack generator."""

    name: str
    family: str
    """The class of trick: answers, judges, format, code, instructions, text, length,
    repetition, failure."""
    targets: frozenset[str]
    """Reward types it is aimed at (`*`: every type)."""
    make: AttackFn
    description: str
    rows: int | None = None
    """Most rows it is built from (for tricks that do not depend on the row, such as a
    pathological text: a few rows show the hole, thousands only cost time)."""
    by_failure: bool = False
    """Only a failure (`timeout`, `error`, `invalid`) with no value better than the baseline
    counts as a success: the trick is the failure itself, not whatever score the text gets."""


_ATTACKS: dict[str, Attack] = {}
_WRONG_MAKERS: list[Callable[[Target], str | None]] = []
_BUILTIN_MODULES = (
    "rewardsmith.verifiers.math._attacks",
    "rewardsmith.verifiers._text_attacks",
    "rewardsmith.verifiers._format_attacks",
    "rewardsmith.verifiers._length_attacks",
    "rewardsmith.verifiers.instructions._attacks",
    "rewardsmith.verifiers.code._attacks",
    "rewardsmith.judges._attacks",
    "rewardsmith.combine._attacks",
)


def attack(
    name: str,
    *,
    family: str,
    targets: Sequence[str],
    description: str | None = None,
    rows: int | None = None,
    by_failure: bool = False,
) -> Callable[[AttackFn], AttackFn]:
    """Register an attack generator under `name` (names are unique)."""

    def register(make: AttackFn) -> AttackFn:
        current = _ATTACKS.get(name)
        if current is not None and current.make is not make:
            raise ValueError(f"attack {name!r} is already registered")
        doc = description or (make.__doc__ or "").strip().split("\n")[0]
        _ATTACKS[name] = Attack(name, family, frozenset(targets), make, doc, rows, by_failure)
        return make

    return register


def honest_wrong(make: Callable[[Target], str | None]) -> Callable[[Target], str | None]:
    """Register a maker of honest wrong answers (the first that gives one for a row wins)."""
    if make not in _WRONG_MAKERS:
        _WRONG_MAKERS.append(make)
    return make


def registered_attacks() -> dict[str, Attack]:
    """Every attack, built-in ones imported on first use."""
    for module in _BUILTIN_MODULES:
        importlib.import_module(module)
    return dict(_ATTACKS)


def wrong_makers() -> list[Callable[[Target], str | None]]:
    """The registered honest-wrong makers, in registration order."""
    registered_attacks()
    return list(_WRONG_MAKERS)


def attacks_for(selection: str, types: Iterable[str] | None) -> list[Attack]:
    """The attacks `--attacks` selects: `all` (those aimed at the spec's reward types; every
    one when the types are unknown or a type has none aimed at it, as a custom type: no
    attack list is no evidence that a trick fails), `none`, or comma-separated attack or
    family names."""
    known = registered_attacks()
    if selection == "none":
        return []
    if selection == "all":
        aimed = {t for a in known.values() for t in a.targets}
        wanted = set(types) if types is not None else None
        if wanted is None or not wanted <= aimed:
            return list(known.values())
        return [a for a in known.values() if "*" in a.targets or a.targets & wanted]
    chosen: list[Attack] = []
    for name in (n.strip() for n in selection.split(",") if n.strip()):
        matches = [a for a in known.values() if name in (a.name, a.family)]
        if not matches:
            families = sorted({a.family for a in known.values()})
            raise ConfigError(
                f"--attacks: unknown attack {name!r}. Families: {', '.join(families)}; "
                f"attacks: {', '.join(sorted(known))}"
            )
        chosen += [a for a in matches if a not in chosen]
    return chosen
