"""Specs that score a sample against its group, and the trainer calls that cannot bring one.

Absolute imports only: verl loads `verl.py` by file path (as a module outside any package),
and that module imports this one.
"""

from __future__ import annotations

from rewardsmith._exceptions import ConfigError
from rewardsmith.spec import RewardSpec

__all__ = ["group_scoped", "refuse_groups", "without_group_transform"]


def without_group_transform(spec: RewardSpec) -> RewardSpec:
    """The spec without `group_transform:`: advantages are the trainer's own job."""
    if getattr(spec, "group_transform", None) is None:
        return spec
    return spec.with_group_transform(None)  # type: ignore[attr-defined, no-any-return]


def group_scoped(spec: RewardSpec) -> str | None:
    """Why the spec needs the other completions of each sample's group (a group-scoped reward
    type such as `majority_vote`, or a group-scoped `transform:`), or None."""
    for name, component in spec.rewards.items():
        if component.group_scoped:
            return f"component {name!r} (type {component.type}) is scored against its group"
        for transform in component.transform:
            if transform.group_scoped:
                return f"component {name!r} has a group-scoped transform ({transform.type})"
    return None


def refuse_groups(spec: RewardSpec, how: str) -> None:
    """Fail clearly when the spec needs whole groups and the trainer's call (`how`) does not
    bring them: scoring each sample alone would silently give wrong rewards."""
    why = group_scoped(spec)
    if why is not None:
        raise ConfigError(
            f"the spec needs each sample's whole group ({why}), but {how}; use a trainer call "
            "that passes whole groups (see the README: trainers and groups), or drop it"
        )
