"""The reward spec: which components, their parameters and weights, and how they combine.

    rewards:
      correct: {type: math, weight: 1.0}
      format:  {type: think_format, weight: 0.2, only_if: correct}
    combine: weighted_sum
    timeout_s: 5

A component's own keys (`type`, `weight`, `only_if`) sit beside the reward type's parameters
(the keyword arguments of its factory). Every unknown key is an error that names the key and
what is allowed, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import difflib
import math
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, validate_call

from ._exceptions import ConfigError
from .registry import RewardFn, registry

__all__ = ["CombineMode", "ComponentSpec", "RewardSpec", "load_spec"]

CombineMode = Literal["weighted_sum", "min", "product", "first_pass"]
"""How component scores become one reward (see `rewardsmith.combine`)."""

_COMPONENT_KEYS = ("type", "weight", "only_if")
_LAX = ConfigDict(arbitrary_types_allowed=True)


class ComponentSpec(BaseModel):
    """One named reward component."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str
    """Registered reward type, or an importable ``"module:factory"``."""
    weight: float = 1.0
    """Multiplies the component's score in the combination."""
    only_if: str | None = None
    """Gate: the component counts only when the named component passes (score > 0)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments for the reward type's factory."""

    def build(self) -> RewardFn:
        """Instantiate the scoring function, parameters checked against the factory's hints."""
        factory = registry.get(self.type).factory
        return validate_call(factory, config=_LAX)(**self.params)  # type: ignore[no-any-return]


class RewardSpec(BaseModel):
    """A validated reward spec. Build it with `load_spec` or `RewardSpec.from_dict`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rewards: dict[str, ComponentSpec]
    """Components in order; output `components` keep this order."""
    combine: CombineMode = "weighted_sum"
    """How components combine into the total reward."""
    timeout_s: float = Field(default=5.0, gt=0)
    """Hard wall-clock limit per sample per component; the worker is killed past it."""
    on_error: float | None = None
    """Total reward when a component fails (`timeout`/`error`/`invalid`); None keeps it null."""

    @classmethod
    def from_dict(cls, data: Any) -> RewardSpec:
        """Validate a spec given as plain data (the parsed YAML)."""
        if not isinstance(data, dict):
            raise ConfigError(f"a spec is a mapping, got {type(data).__name__}")
        _reject_unknown("spec", data, cls.model_fields)
        rewards = data.get("rewards")
        if not isinstance(rewards, dict) or not rewards:
            raise ConfigError("spec: 'rewards' must be a non-empty mapping of name -> component")
        components = {str(name): _component(str(name), body) for name, body in rewards.items()}
        try:
            spec = cls.model_validate({**data, "rewards": components})
        except ValidationError as exc:
            raise ConfigError(_describe(exc, "spec")) from None
        spec._check_gates()
        return spec

    def _check_gates(self) -> None:
        for name, component in self.rewards.items():
            if not math.isfinite(component.weight):
                raise ConfigError(f"rewards.{name}.weight must be a finite number")
            gate = component.only_if
            if gate is None:
                continue
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
    try:
        component = ComponentSpec.model_validate(
            {k: v for k, v in body.items() if k in _COMPONENT_KEYS} | {"params": params}
        )
    except ValidationError as exc:
        raise ConfigError(_describe(exc, where)) from None
    try:  # build once here so bad parameters fail at load time, not in every worker
        component.build()
    except ValidationError as exc:
        raise ConfigError(_describe(exc, f"{where} (type {info.name})")) from None
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where} (type {info.name}): {exc}") from None
    return component


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
        text = path.read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"spec is not valid YAML: {exc}") from None
    return RewardSpec.from_dict(data)
