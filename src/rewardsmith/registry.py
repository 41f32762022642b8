"""One registry of reward types: name -> factory.

A reward type is a factory. Its keyword arguments are the reward's configuration (the keys a
spec may set); it returns the function that scores one sample::

    @reward("shouting")
    def shouting(*, threshold: float = 0.5) -> RewardFn:
        def score(sample: Sample) -> Score:
            letters = [c for c in sample.text if c.isalpha()]
            upper = sum(c.isupper() for c in letters) / max(len(letters), 1)
            return Score.ok(1.0 if upper < threshold else 0.0, upper_ratio=upper)
        return score

Built-in types are registered lazily as ``"module:attr"`` strings, so `import rewardsmith`
does not import sympy. A spec may also name a factory by its import path,
``"package.module:attr"``; the module is imported, and the attribute must be a registered
reward factory (decorated with `@reward`): a spec can reach only what someone made a reward,
never any callable (``"os:system"``).

A group-scoped type (``@reward("majority_vote", group_scoped=True)``) needs every sample of
its group: its factory returns a `GroupRewardFn`, whose call reads one sample in a worker (under
the hard timeout, like any reward) and whose `group` turns the per-sample scores of a whole
group into the final ones, in the engine, once the group is complete.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from ._exceptions import ConfigError, UnknownRewardError
from .models import Sample, Score

__all__ = [
    "GroupRewardFn",
    "ReferenceCheck",
    "Registry",
    "RewardFn",
    "RewardInfo",
    "bounded",
    "checks_references",
    "declared_bounds",
    "declared_reference_check",
    "declared_time",
    "problem_of",
    "registry",
    "reward",
    "timed",
]

RewardFn = Callable[[Sample], Score]
"""Scores one sample. Runs in a worker process under a hard timeout; may raise (-> `error`)."""


@runtime_checkable
class GroupRewardFn(Protocol):
    """The product of a group-scoped reward type: a per-sample step and a group step."""

    def __call__(self, sample: Sample) -> Score:
        """Read one sample (in a worker, under the timeout): the expensive, per-sample part."""
        ...

    def group(self, samples: Sequence[Sample], scores: Sequence[Score]) -> list[Score]:
        """The final scores of a whole group, from the per-sample ones (same order). Runs in
        the engine's process: keep it cheap and bounded. Failed scores pass through."""
        ...


_GROUP_SCOPED = "__rewardsmith_group_scoped__"
"""Attribute that `reward(..., group_scoped=True)` sets on a factory."""


def bounded(score: RewardFn, low: float, high: float) -> RewardFn:
    """`score`, declaring that every value it returns lies in [low, high].

    Combinations that must know a reward's range read it: a veto's lowest total, `product`'s
    non-negative members, `uncertainty`'s monotonicity check and the default
    `correct_threshold` of the length transforms. A range nobody declared is unknown (those
    combinations then ask the spec for it), never guessed.
    """
    if not low <= high:
        raise ValueError(f"bounds: low ({low}) is above high ({high})")
    # A bound method takes no attributes of its own, and reads its function's: the range of
    # a method is declared for every instance of its class.
    target = getattr(score, "__func__", score)
    target.bounds = (float(low), float(high))  # type: ignore[union-attr]
    return score


def declared_bounds(score: RewardFn) -> tuple[float, float] | None:
    """The range `score` declared with `bounded`, or None."""
    found = getattr(score, "bounds", None)
    if isinstance(found, tuple) and len(found) == 2 and all(isinstance(v, float) for v in found):
        return found
    return None


def timed(score: RewardFn, seconds: float) -> RewardFn:
    """`score`, declaring that one sample can take it up to `seconds` of wall clock (its own
    time limits and start-up). A spec whose `timeout_s` is not above that is refused: the
    engine would kill the worker first, and a slow sample would score null instead of the
    value the reward's own limits give it. `score` must take attributes (a function or a
    callable object, not a bound method)."""
    score.worst_case_s = float(seconds)  # type: ignore[attr-defined]
    return score


def declared_time(score: RewardFn) -> float | None:
    """The wall clock `score` declared with `timed`, or None."""
    found = getattr(score, "worst_case_s", None)
    return found if isinstance(found, float) else None


ReferenceCheck = Callable[[Any], "str | None"]
"""A reward's test of one reference: the problem that makes it `invalid`, or None."""


def checks_references(score: RewardFn, check: ReferenceCheck) -> RewardFn:
    """`score`, declaring `check`: what it finds wrong with a reference (the problem `score`
    reports as `invalid`), or None. `scope: turns` runs it on every entry of
    ``metadata.turn_references`` before scoring any turn, so the dataset alone decides
    validity, not how many turns the trajectory reaches. `score` must take attributes."""
    score.reference_check = check  # type: ignore[attr-defined]
    return score


def declared_reference_check(score: RewardFn) -> ReferenceCheck | None:
    """The reference test `score` declared with `checks_references`, or None."""
    found = getattr(score, "reference_check", None)
    return found if callable(found) else None


def problem_of(parse: Callable[[Any], object]) -> ReferenceCheck:
    """A reference check from a gold parser that returns its problem as a string."""

    def check(reference: Any) -> str | None:
        found = parse(reference)
        return found if isinstance(found, str) else None

    return check


RewardFactory = Callable[..., RewardFn]
F = TypeVar("F", bound=RewardFactory)


@dataclass(frozen=True)
class RewardInfo:
    """Everything known about one reward type."""

    name: str
    """The `type:` a spec uses."""
    factory: RewardFactory
    """Builds the scoring function from the spec's parameters."""
    preload: tuple[str, ...] = ()
    """Heavy modules workers import once at start (e.g. sympy), not inside a timed task."""

    @property
    def params(self) -> dict[str, inspect.Parameter]:
        """The configuration keys this type accepts, with their defaults."""
        return {
            name: p
            for name, p in inspect.signature(self.factory).parameters.items()
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
        }

    @property
    def group_scoped(self) -> bool:
        """Whether the type needs its whole group (its factory returns a `GroupRewardFn`)."""
        return bool(getattr(self.factory, _GROUP_SCOPED, False))

    @property
    def description(self) -> str:
        """First line of the factory's docstring."""
        return (inspect.getdoc(self.factory) or "").split("\n", 1)[0]


class Registry:
    """Thread-safe name -> reward factory map with lazy ``"module:attr"`` entries."""

    def __init__(self) -> None:
        self._entries: dict[str, RewardFactory | str] = {}
        self._preload: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()

    def register(
        self, name: str, target: RewardFactory | str, preload: tuple[str, ...] = ()
    ) -> None:
        """Add a type. Registering a name twice with a different target is an error."""
        with self._lock:
            if preload:
                self._preload[name] = preload
            current = self._entries.get(name)
            if current is None or current is target:
                self._entries[name] = target
                return
            if isinstance(current, str) and _defined_under(target, current):
                self._entries[name] = target  # the lazy placeholder resolving to itself
                return
            raise ValueError(f"reward type {name!r} is already registered to {current!r}")

    def names(self) -> list[str]:
        """Registered type names, sorted."""
        with self._lock:
            return sorted(self._entries)

    def get(self, name: str) -> RewardInfo:
        """Resolve a type name (or the ``"module:attr"`` path of a registered factory)."""
        with self._lock:
            target = self._entries.get(name)
        if target is None:
            if ":" in name:
                factory = _import(name, name)
                registered = self._name_of(factory)
                if registered is None:
                    raise ConfigError(
                        f"reward type {name!r} is not a reward factory: a type given by its "
                        "import path must be registered in its module with "
                        "@rewardsmith.reward('<name>')"
                    )
                return RewardInfo(name, factory, self._preload.get(registered, ()))
            hint = difflib.get_close_matches(name, self.names(), n=1)
            did_you_mean = f" Did you mean: {hint[0]}?" if hint else ""
            raise UnknownRewardError(
                f"unknown reward type {name!r}.{did_you_mean} "
                f"Allowed: {', '.join(self.names())} (or an importable 'module:factory')"
            )
        if isinstance(target, str):
            factory = _import(target, name)
            self.register(name, factory)
            target = factory
        return RewardInfo(name, target, self._preload.get(name, ()))

    def _name_of(self, factory: Any) -> str | None:
        """The name `factory` is registered under, if it is."""
        with self._lock:
            return next((n for n, t in self._entries.items() if t is factory), None)


def _defined_under(factory: Any, path: str) -> bool:
    """True when `factory` is what the lazy `path` names: same name, defined in that module
    or in a private module below it (``pkg.math._reward`` re-exported as ``pkg.math:math``)."""
    module, _, attr = path.partition(":")
    own = getattr(factory, "__module__", "")
    same_place = own == module or own.startswith(module + ".")
    return same_place and getattr(factory, "__qualname__", None) == attr


def _import(path: str, name: str) -> RewardFactory:
    module_name, _, attr = path.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise UnknownRewardError(
            f"reward type {name!r}: cannot import {path!r}: {exc} "
            "(is the extra it needs installed? e.g. pip install 'rewardsmith[instructions]')"
        ) from exc
    if not callable(factory):
        raise ConfigError(f"reward type {name!r}: {path!r} is not callable")
    return factory  # type: ignore[no-any-return]


registry = Registry()
"""The registry every spec resolves against."""


def reward(
    name: str, *, preload: tuple[str, ...] = (), group_scoped: bool = False
) -> Callable[[F], F]:
    """Register a reward factory under `name` (the spec's `type:`).

    Args:
        name: the type name specs use.
        preload: modules the factory's scoring function imports lazily and that are slow to
            import; workers load them at start, so no task pays for them inside its timeout.
        group_scoped: the factory returns a `GroupRewardFn`: the type needs its whole group.
    """

    def decorate(factory: F) -> F:
        if group_scoped:
            setattr(factory, _GROUP_SCOPED, True)
        registry.register(name, factory, preload)
        return factory

    return decorate


_BUILTIN = {
    "math": "rewardsmith.verifiers.math:math",
    "exact_match": "rewardsmith.verifiers.text:exact_match",
    "f1": "rewardsmith.verifiers.text:f1",
    "choice": "rewardsmith.verifiers.text:choice",
    "regex": "rewardsmith.verifiers.text:regex",
    "think_format": "rewardsmith.verifiers.format:think_format",
    "json": "rewardsmith.verifiers.format:json_valid",
    "length": "rewardsmith.verifiers.length:length",
    "repetition": "rewardsmith.verifiers.length:repetition",
    "ifeval": "rewardsmith.verifiers.instructions:ifeval",
    "ifbench": "rewardsmith.verifiers.instructions:ifbench",
    "constraints": "rewardsmith.verifiers.instructions:constraints",
    "code": "rewardsmith.verifiers.code:code",
    "tool_call": "rewardsmith.verifiers.agents:tool_call",
    "sql": "rewardsmith.verifiers.agents:sql",
    "iou": "rewardsmith.verifiers.agents:iou_reward",
    "detection": "rewardsmith.verifiers.agents:detection",
    "gui_action": "rewardsmith.verifiers.agents:gui_action",
    "rubric": "rewardsmith.judges:rubric",
    "judge_pointwise": "rewardsmith.judges:judge_pointwise",
    "judge_pairwise": "rewardsmith.judges:judge_pairwise",
    "judge_group": "rewardsmith.judges:judge_group",
    "judge_reference": "rewardsmith.judges:judge_reference",
    "judge_principles": "rewardsmith.judges:judge_principles",
    "reward_model": "rewardsmith.reward_models:reward_model",
    "process": "rewardsmith.reward_models:process",
    "similarity": "rewardsmith.reward_models:similarity",
    "likelihood": "rewardsmith.reward_models:likelihood",
    "majority_vote": "rewardsmith.selection:majority_vote",
}
for _name, _target in _BUILTIN.items():
    registry.register(_name, _target)
