"""The reward spec: which components, their parameters and weights, and how they combine.

    rewards:
      correct: {type: math, weight: 1.0}
      format:  {type: think_format, weight: 0.2, only_if: correct}
      rm:      {type: my.rm:factory, transform: {type: clip, min: -5, max: 5}, veto: false}
    combine: weighted_sum                       # or {type: uncertainty, lambda: 0.5}
    group_transform: {type: grpo, std: unbiased}
    timeout_s: 5

A component's own keys (`type`, `weight`, `only_if`, `veto`, `transform`, `scope`) sit beside the
reward type's parameters (the keyword arguments of its factory). `combine`, `transform` and
`group_transform` take a name, or a mapping with `type` and that choice's parameters. Every
unknown key is an error that names the key and what is allowed, so a typo never silently
falls back to a default; so is a key given twice (YAML would keep the last one silently), an
infinite or NaN number (a top-level key, a `weight`, or a parameter of `combine`, `transform`
or `group_transform`), and a spec file that is not UTF-8 text. Everything that decides a
number is in the spec, so every trainer adapter, the server and every backend compute the
same numbers from it.
"""

from __future__ import annotations

import difflib
import functools
import math
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
    validate_call,
)

from ._exceptions import ConfigError
from .combine import (
    COMBINE_TYPES,
    GROUP_TRANSFORM_TYPES,
    TRANSFORM_TYPES,
    Combiner,
    Finite,
    GroupTransform,
    ReNorm,
    Simple,
    Transform,
    check_combination,
)
from .registry import GroupRewardFn, RewardFn, declared_bounds, declared_time, registry
from .turns import per_turn

__all__ = ["CombineMode", "ComponentSpec", "RewardSpec", "load_spec"]

CombineMode = Literal[
    "weighted_sum",
    "min",
    "product",
    "first_pass",
    "average",
    "uncertainty",
    "lexicographic",
    "renorm",
]
"""How component scores become one reward (see `rewardsmith.combine`)."""

_COMPONENT_KEYS = ("type", "weight", "only_if", "veto", "transform", "scope")
_SPEC_KEYS = ("rewards", "combine", "group_transform", "timeout_s", "on_error", "veto_value")
_LAX = ConfigDict(arbitrary_types_allowed=True)


class ComponentSpec(BaseModel):
    """One named reward component."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    """Registered reward type, or an importable ``"module:factory"``."""
    weight: float = 1.0
    """Multiplies the component's score in the combination."""
    only_if: str | None = None
    """Gate: the component counts its score only when the named component passes (score > 0),
    else its lowest value (`combine._bounds.gated_off_score`)."""
    veto: bool = False
    """A hard rule: when it counts and does not pass (score <= 0), the total reward is the
    spec's `veto_value` (default: the lowest total the spec can produce)."""
    transform: tuple[Annotated[Transform, Field(discriminator="type")], ...] = ()
    """Shaping of the component's score before combination, applied in order."""
    scope: Literal["final", "turns"] = "final"
    """What of a conversation is scored: its last assistant turn (`final`), or every assistant
    turn, with per-turn values in `detail.steps` (`turns`, see `rewardsmith.turns`)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments for the reward type's factory."""
    sample_timeout_s: float | None = Field(default=None, exclude=True)
    """The spec's `timeout_s`, which `scope: turns` budgets its turns by (set by the spec that
    holds the component, never a key of its own, so no dump shows it)."""

    @property
    def group_scoped(self) -> bool:
        """Whether the reward type needs the whole group (e.g. `majority_vote`)."""
        return registry.get(self.type).group_scoped

    def build(self) -> RewardFn:
        """Instantiate the scoring function, parameters checked against the factory's hints."""
        factory = registry.get(self.type).factory
        fn: RewardFn = validate_call(factory, config=_LAX)(**self.params)
        return per_turn(fn, timeout_s=self.sample_timeout_s) if self.scope == "turns" else fn

    def under(self, timeout_s: float) -> ComponentSpec:
        """This component in a spec whose validated `timeout_s` is `timeout_s` (itself when
        that changes nothing: its scope is not `turns`, or it knows that timeout already)."""
        if self.scope != "turns" or timeout_s == self.sample_timeout_s:
            return self
        changed = self.model_copy(update={"sample_timeout_s": timeout_s})
        changed.__dict__.pop("worst_case_s", None)  # the cached one was for the old timeout
        return changed

    def build_group(self) -> GroupRewardFn:
        """Instantiate a group-scoped type, with both its per-sample and its group step."""
        fn = self.build()
        if not isinstance(fn, GroupRewardFn):
            raise ConfigError(
                f"reward type {self.type!r} is group-scoped but its factory returned "
                f"{type(fn).__name__}, not a GroupRewardFn (a call and a `group` method)"
            )
        return fn

    @functools.cached_property
    def bounds(self) -> tuple[float, float] | None:
        """The range the reward declares for its scores (`registry.bounded`), or None."""
        return declared_bounds(self.build())

    @functools.cached_property
    def worst_case_s(self) -> float | None:
        """The wall clock one sample can take the reward (`registry.timed`), or None."""
        return declared_time(self.build())


def _worst_case(scope: str, needed: float) -> str:
    """What a component's worst case `needed` is made of, for its refusal. Under `scope:
    turns` a refused one is two turns: its budget is never shorter than one turn."""
    if scope == "turns":
        return (
            f"under scope: turns one sample can take it up to {needed:g}s, two turns' worst "
            f"case ({needed / 2:g}s each, its own time limits and start-up: the time budget "
            f"lets a turn start after the first for as long as one turn can take)"
        )
    return f"one sample can take it up to {needed:g}s (its own time limits and start-up)"


class RewardSpec(BaseModel):
    """A validated reward spec. Build it with `load_spec` or `RewardSpec.from_dict`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rewards: dict[str, ComponentSpec]
    """Components in order; output `components` keep this order."""
    combine: CombineMode = "weighted_sum"
    """How components combine into the total reward (the name; parameters in `combiner`)."""
    combiner: Annotated[Combiner, Field(discriminator="type")] = Field(default_factory=Simple)
    """The combination with its parameters (from `combine:` given as a mapping)."""
    group_transform: Annotated[GroupTransform, Field(discriminator="type")] | None = None
    """How a group's rewards become each sample's `advantage` (None: no advantage)."""
    timeout_s: Finite = Field(default=5.0, gt=0)
    """Hard wall-clock limit per sample per component; the worker is killed past it."""
    on_error: Finite | None = None
    """Total reward when a component fails (`timeout`/`error`/`invalid`); None keeps it null."""
    veto_value: float | None = None
    """Total reward when a veto fires; None: the lowest total the spec can produce."""

    @model_validator(mode="before")
    @classmethod
    def _combiner_from_name(cls, data: Any) -> Any:
        """`combine: NAME` alone means that combination with its default parameters."""
        if isinstance(data, dict) and "combiner" not in data:
            name = data.get("combine", "weighted_sum")
            if isinstance(name, str) and name in COMBINE_TYPES:
                return {**data, "combiner": {"type": name}}
        return data

    @model_validator(mode="after")
    def _components_under_the_timeout(self) -> RewardSpec:
        """Each component learns the spec's validated `timeout_s` (a float, whether it came
        as 5, 5.0 or "5", through `from_dict` or `model_validate`), which `scope: turns`
        budgets by and the timeout check (`_check_timeouts`) then reads."""
        rewards = {name: c.under(self.timeout_s) for name, c in self.rewards.items()}
        self.__dict__["rewards"] = rewards  # frozen: set once, while the spec is validated
        return self

    @model_validator(mode="after")
    def _same_combination(self) -> RewardSpec:
        if self.combiner.type != self.combine:
            raise ValueError(
                f"combiner type {self.combiner.type!r} is not combine {self.combine!r}"
            )
        return self

    @model_validator(mode="after")
    def _keeps_its_promises(self) -> RewardSpec:
        """The refusals of a spec file hold however the spec is validated (`from_dict`, or
        `model_validate` of a mapping): gates, references, timeouts and the combination."""
        self._check_gates()
        self._check_references()
        self._check_timeouts()
        problem = check_combination(self)
        if problem is not None:
            raise ConfigError(problem)
        return self

    @property
    def needs_groups(self) -> bool:
        """Whether results need their whole group (a group transform, group-scoped shaping or
        a group-scoped reward type)."""
        return (
            self.group_transform is not None
            or any(t.group_scoped for c in self.rewards.values() for t in c.transform)
            or any(c.group_scoped for c in self.rewards.values())
        )

    def with_group_transform(self, value: str | dict[str, Any] | None) -> RewardSpec:
        """This spec with another `group_transform:` (a name, YAML text or a mapping; None
        removes it), validated as in a spec file. For `--group-transform` on the command line."""
        if isinstance(value, str):
            value = _parse_yaml(value, "group_transform")
        chosen = None if value is None else _choice("group_transform", value, GROUP_TRANSFORM_TYPES)
        return self.model_copy(update={"group_transform": chosen})

    @classmethod
    def from_dict(cls, data: Any) -> RewardSpec:
        """Validate a spec given as plain data (the parsed YAML)."""
        if not isinstance(data, dict):
            raise ConfigError(f"a spec is a mapping, got {type(data).__name__}")
        _reject_unknown("spec", data, _SPEC_KEYS)
        rewards = data.get("rewards")
        if not isinstance(rewards, dict) or not rewards:
            raise ConfigError("spec: 'rewards' must be a non-empty mapping of name -> component")
        components = {str(name): _component(str(name), body) for name, body in rewards.items()}
        combiner = _choice("combine", data.get("combine", "weighted_sum"), COMBINE_TYPES)
        chosen = data.get("group_transform")
        group_transform = (
            None if chosen is None else _choice("group_transform", chosen, GROUP_TRANSFORM_TYPES)
        )
        try:
            spec = cls.model_validate(
                {
                    **data,
                    "rewards": components,
                    "combine": combiner.type,
                    "combiner": combiner,
                    "group_transform": group_transform,
                }
            )
        except ValidationError as exc:
            raise ConfigError(_describe(exc, "spec")) from None
        return spec

    def _check_references(self) -> None:
        """`correct:` names another component; ReNorm's components exist and stand alone."""
        for name, component in self.rewards.items():
            for i, transform in enumerate(component.transform):
                correct = getattr(transform, "correct", None)
                if correct is not None and (correct not in self.rewards or correct == name):
                    others = [n for n in self.rewards if n != name]
                    raise ConfigError(
                        f"rewards.{name}.transform[{i}].correct: {correct!r} is not another "
                        f"component. Allowed: {', '.join(others)}"
                    )
        combiner = self.combiner
        if not isinstance(combiner, ReNorm):
            return
        roles = {"process": combiner.process, "outcome": combiner.outcome}
        for role, target in roles.items():
            if target not in self.rewards:
                raise ConfigError(
                    f"combine.{role}: {target!r} is not a component. "
                    f"Allowed: {', '.join(self.rewards)}"
                )
        if combiner.process == combiner.outcome:
            raise ConfigError("combine: renorm needs two different process and outcome components")
        extra = [n for n in self.rewards if n not in roles.values()]
        if extra:
            raise ConfigError(
                f"combine: renorm combines exactly its process and outcome components; "
                f"remove {', '.join(extra)} (they would not count)"
            )
        for target in roles.values():
            component = self.rewards[target]
            if component.veto or component.only_if is not None:
                raise ConfigError(
                    f"rewards.{target}: veto and only_if do not apply under combine: renorm"
                )

    def _check_timeouts(self) -> None:
        """Every component's own worst case fits under the spec's `timeout_s`."""
        for name, component in self.rewards.items():
            needed = component.worst_case_s
            if needed is not None and needed >= self.timeout_s:
                raise ConfigError(
                    f"rewards.{name}: {_worst_case(component.scope, needed)}, not under the "
                    f"spec's timeout_s ({self.timeout_s:g}s), which would kill it first (a "
                    f"null reward instead of its score): raise the spec's timeout_s above "
                    f"{needed:g} or lower the component's"
                )

    def _check_gates(self) -> None:
        for name, component in self.rewards.items():
            if not math.isfinite(component.weight):
                raise ConfigError(f"rewards.{name}.weight must be a finite number")
            gate = component.only_if
            if gate is None:
                continue
            if component.veto:
                raise ConfigError(
                    f"rewards.{name}: veto and only_if together: a policy would dodge the hard "
                    f"rule by failing {gate!r} (behind a closed gate the veto would not fire); "
                    "drop only_if, the veto applies to every sample"
                )
            if gate not in self.rewards or gate == name:
                others = [n for n in self.rewards if n != name]
                raise ConfigError(
                    f"rewards.{name}.only_if: {gate!r} is not another component. "
                    f"Allowed: {', '.join(others)}"
                )
        for name in self.rewards:  # gates must not form a cycle
            seen, current = {name}, self.rewards[name].only_if
            while current is not None:
                if current in seen:
                    raise ConfigError(
                        f"rewards.{name}.only_if: gates form a cycle through {current!r}"
                    )
                seen.add(current)
                current = self.rewards[current].only_if


def _component(name: str, body: Any) -> ComponentSpec:
    where = f"rewards.{name}"
    if not isinstance(body, dict) or "type" not in body:
        raise ConfigError(f"{where}: a component is a mapping with a 'type'")
    info = registry.get(str(body["type"]))
    allowed = info.params
    params = {k: v for k, v in body.items() if k not in _COMPONENT_KEYS}
    _reject_unknown(f"{where} (type {info.name})", params, [*_COMPONENT_KEYS, *allowed])
    own = {k: v for k, v in body.items() if k in _COMPONENT_KEYS}
    if "transform" in own:
        own["transform"] = _transforms(f"{where}.transform", own["transform"])
    try:
        component = ComponentSpec.model_validate(own | {"params": params})
    except ValidationError as exc:
        raise ConfigError(_describe(exc, where)) from None
    if info.group_scoped and component.scope == "turns":
        raise ConfigError(
            f"{where}: type {info.name} needs its whole group; scope: turns is not available for it"
        )
    try:  # build once here so bad parameters fail at load time, not in every worker
        built = component.build_group() if info.group_scoped else component.build()
        component.__dict__["bounds"] = declared_bounds(built)  # the cached properties
        component.__dict__["worst_case_s"] = declared_time(built)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, f"{where} (type {info.name})")) from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where} (type {info.name}): {exc}") from None
    return component


def _transforms(where: str, value: Any) -> tuple[BaseModel, ...]:
    """One transform or a list of them, each a name or a mapping with `type`."""
    if not isinstance(value, list):
        return (_choice(where, value, TRANSFORM_TYPES),)
    return tuple(_choice(f"{where}[{i}]", item, TRANSFORM_TYPES) for i, item in enumerate(value))


def _choice(where: str, value: Any, types: Mapping[str, type[BaseModel]]) -> BaseModel:
    """A spec choice given as a name, or as a mapping with `type` and the choice's parameters."""
    allowed = ", ".join(types)
    if isinstance(value, str):
        value = {"type": value}
    if not isinstance(value, dict) or "type" not in value:
        raise ConfigError(f"{where}: a name, or a mapping with a 'type' (allowed: {allowed})")
    name = value["type"]
    if name not in types:
        hint = difflib.get_close_matches(str(name), list(types), n=1)
        did_you_mean = f" Did you mean: {hint[0]}?" if hint else ""
        raise ConfigError(f"{where}: unknown type {name!r}.{did_you_mean} (allowed: {allowed})")
    model = types[name]
    keys = [field.alias or key for key, field in model.model_fields.items()]
    _reject_unknown(f"{where} (type {name})", value, keys)
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, f"{where} (type {name})")) from None


def _reject_unknown(where: str, given: dict[str, Any], allowed: Any) -> None:
    allowed = list(allowed)
    for key in given:
        if key not in allowed:
            hint = difflib.get_close_matches(str(key), allowed, n=1)
            did_you_mean = f" Did you mean: {hint[0]}?" if hint else ""
            raise ConfigError(
                f"{where}: unknown key {key!r}.{did_you_mean} Allowed: {', '.join(allowed)}"
            )


def _describe(exc: ValidationError, where: str) -> str:
    parts = []
    for error in exc.errors():
        refusal = error.get("ctx", {}).get("error")
        if isinstance(refusal, ConfigError):  # one of the spec's own checks: its own words
            parts.append(str(refusal))
            continue
        loc = ".".join(str(p) for p in error["loc"])
        message = error["msg"]
        if loc == "combine":
            message += f" (allowed: {', '.join(get_args(CombineMode))})"
        parts.append(f"{where}.{loc}: {message}" if loc else f"{where}: {message}")
    return "; ".join(parts)


def load_spec(source: str | Path | dict[str, Any] | RewardSpec) -> RewardSpec:
    """A spec from a YAML/JSON file path, a YAML string, a dict, or a spec (returned as is)."""
    if isinstance(source, RewardSpec):
        return source
    if isinstance(source, dict):
        return RewardSpec.from_dict(source)
    text = str(source)
    path = Path(text)
    if "\n" not in text and path.suffix in {".yaml", ".yml", ".json"}:
        if not path.is_file():
            raise ConfigError(f"spec file not found: {path}")
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"spec file {path} is not UTF-8 text: {exc}") from None
    return RewardSpec.from_dict(_parse_yaml(text, "spec"))


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that gives the same key twice."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)  # type: ignore[no-untyped-call]
            if isinstance(key, Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            if isinstance(key, Hashable):
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _parse_yaml(text: str, what: str) -> Any:
    """YAML (or JSON) text as data; a syntax error or a repeated key is a `ConfigError`."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} is not valid YAML: {exc}") from None
