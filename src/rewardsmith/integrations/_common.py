"""What the trainer adapters share: per-component values and the process's shared engines.

Conversions the reward server shares too (query -> completion, the always-a-float reward,
per-component logs) are in `rewardsmith.integrations._protocol`, which builds on this module.

Absolute imports only: verl loads `verl.py` by file path (as a module outside any package),
and that module imports this one.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import socket
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rewardsmith._exceptions import ConfigError
from rewardsmith.combine import charged_value, counted, fired_veto
from rewardsmith.engine import Engine
from rewardsmith.engine._capacity import WORKERS_ENV, register_process, worker_count
from rewardsmith.integrations._remote import URL_ENV, RemoteEngine
from rewardsmith.models import FAILURE_STATUSES, Result
from rewardsmith.registry import registry
from rewardsmith.spec import ComponentSpec, RewardSpec, load_spec

__all__ = [
    "SPEC_ENV",
    "URL_ENV",
    "WORKERS_ENV",
    "charged_rewards",
    "check_split",
    "close_shared_engines",
    "component_values",
    "count_this_process",
    "counts_tokens",
    "failure_counts",
    "gated_scores",
    "group_scoped",
    "missing_spec_error",
    "normalise_chat",
    "open_engine",
    "plain",
    "refuse_groups",
    "shared_engine",
    "splits_into_components",
    "without_group_transform",
]

SPEC_ENV = "REWARDSMITH_SPEC"
"""Environment variable naming the spec (a path, or YAML text) for file-based adapters."""


def plain(value: Any) -> Any:
    """Trainer data (numpy arrays and scalars, OmegaConf containers) as plain Python data."""
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return plain(tolist())
    if isinstance(value, Sequence):  # e.g. OmegaConf ListConfig
        return [plain(v) for v in value]
    return value


_READABLE_PARTS = ("text", "image_url")
"""Content block types a reward can read (verifiers the text, judges the images too)."""


def normalise_chat(value: Any) -> Any:
    """A prompt or completion as the data contract wants it.

    Text stays text. A conversation keeps its messages; multimodal content blocks keep their
    text and ``image_url`` parts (judges receive the images) and drop the others, such as the
    ``{"type": "image"}`` placeholders of vision trainers, whose pixels travel in another
    column and which no reward can read.
    """
    if not isinstance(value, list):
        return value
    messages = []
    for message in value:
        if isinstance(message, Mapping) and isinstance(message.get("content"), list):
            kept = [
                block
                for block in message["content"]
                if isinstance(block, Mapping) and block.get("type", "text") in _READABLE_PARTS
            ]
            message = {**message, "content": [{"type": "text", **b} for b in kept]}
        messages.append(message)
    return messages


def gated_scores(spec: RewardSpec, result: Result) -> dict[str, float | None]:
    """Each component's value as the total used it: its (shaped) score when it counted, None
    when it did not apply, failed or its `only_if` gate was closed (a gate reads the gated
    value: `bonus -> correct -> safe` is closed when `safe` fails). Every adapter reports
    per-component values through this one function, so they agree with the engine's total."""
    values: dict[str, float | None] = dict.fromkeys(spec.rewards)
    for c in counted(spec, result.components):
        values[c.name] = c.score
    return values


def charged_rewards(
    spec: RewardSpec, results: Sequence[Result], groups: Sequence[Any] | None = None
) -> list[float | None]:
    """For each result whose failure the completion caused, the reward it is charged (see
    `rewardsmith.combine._failures`); None for every other result.

    The charge is ``min(on_error, the lowest reward of the sample's group, the lowest total
    the spec can produce)`` (whichever exist; strictly below the group's lowest when the
    spec's lowest total is unknown), so a failure never earns a trainer's group baseline more
    than the group's worst answer, even in a group whose other answers are all correct.
    `groups` gives each result's group (None: each result is a group of its own).
    """
    keys = list(groups) if groups is not None else [object() for _ in results]
    rewards: dict[Any, list[float]] = {}
    for key, result in zip(keys, results, strict=True):
        if result.status == "ok" and result.reward is not None:
            rewards.setdefault(key, []).append(result.reward)
    return [
        charged_value(spec, rewards.get(key, [])) if result.cause == "completion" else None
        for key, result in zip(keys, results, strict=True)
    ]


def _carried(spec: RewardSpec, first: Sequence[str], total: float | None) -> list[float | None]:
    """Values whose weighted sum is exactly `total`: ``total / weight`` on the first of
    `first` (then of all components) with a non-zero weight, None elsewhere."""
    names = list(spec.rewards)
    values: list[float | None] = [None] * len(names)
    carrier = next((n for n in [*first, *names] if spec.rewards[n].weight != 0), None)
    if total is not None and carrier is not None:
        values[names.index(carrier)] = total / spec.rewards[carrier].weight
    return values


def component_values(
    spec: RewardSpec, result: Result, charged: float | None = None
) -> list[float | None]:
    """The result split into one value per component, in spec order, for trainers that sum.

    Trainers such as TRL compute ``sum(weight_i * value_i)`` over the values that are not
    None. These values make that sum equal the spec's `weighted_sum` total:

    - a component that counted gives its (shaped) score (`gated_scores`);
    - a component that does not apply, or whose gate is closed, gives None (not counted);
    - when a `veto` fired, the total is the veto's (the lowest the spec can produce), carried
      by the veto component: ``total / weight`` there, None elsewhere;
    - a failed sample carries, on its first failed component, `charged` when the completion
      caused the failure (`charged_rewards`), else the spec's `on_error`; when that is None,
      every value is None and the trainer sees no reward for it at all.
    """
    components = result.components
    if result.status in FAILURE_STATUSES:
        failed = [n for n in spec.rewards if components[n].status in FAILURE_STATUSES]
        total = charged if result.cause == "completion" else spec.on_error
        return _carried(spec, failed, total)
    veto = fired_veto(spec, components, counted(spec, components))
    if veto is not None:
        return _carried(spec, [veto], result.reward)
    values = gated_scores(spec, result)
    return [values[name] for name in spec.rewards]


def splits_into_components(spec: RewardSpec) -> str | None:
    """None when `component_values` reproduces the spec's totals, else why not."""
    if spec.combine != "weighted_sum":
        return f"combine: {spec.combine} is not a weighted sum"
    return None


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


def check_split(
    spec: RewardSpec, result: Result, values: Sequence[float | None], charged: float | None = None
) -> None:
    """Fail loudly when the weighted sum of `values` is not the spec's total for `result`
    (for a charged failure: the charge)."""
    pairs = zip(spec.rewards.values(), values, strict=True)
    parts = [component.weight * v for component, v in pairs if v is not None]
    total = math.fsum(parts) if parts else None
    expected = result.reward if charged is None else charged
    if total is None and expected is None:
        return
    if (
        total is not None
        and expected is not None
        and math.isclose(total, expected, rel_tol=1e-9, abs_tol=1e-9)
    ):
        return
    raise ConfigError(
        f"sample {result.id}: the weighted sum of the per-component rewards ({total}) is not "
        f"the spec's total reward ({expected}); this spec does not split into weighted "
        "components (its combination or shaping is not a weighted sum). Use one reward "
        "function for the total instead (rewardsmith.integrations.trl.total_reward_func)."
    )


def failure_counts(spec: RewardSpec, results: Sequence[Result]) -> dict[str, dict[str, int]]:
    """Per component: how many results were `failed` (timeout/error/invalid), `not_applicable`."""
    counts = {name: {"failed": 0, "not_applicable": 0} for name in spec.rewards}
    for result in results:
        for name, score in result.components.items():
            if score.status in FAILURE_STATUSES:
                counts[name]["failed"] += 1
            elif score.status == "not_applicable":
                counts[name]["not_applicable"] += 1
    return counts


# One engine per spec per process, for adapters that trainers load as plain functions (verl,
# OpenRLHF): the first call starts the worker pool and later calls reuse it. The engine's
# front takes calls from any number of threads and coroutines at once, sample by sample.
_ENGINES: dict[tuple[int, str, int | None, str | None], Engine | RemoteEngine] = {}
_ENGINES_LOCK = threading.Lock()

SpecSource = str | os.PathLike[str] | RewardSpec | Mapping[str, Any]


def _spec_key(source: SpecSource) -> str:
    if isinstance(source, RewardSpec):
        return source.model_dump_json()
    if isinstance(source, Mapping):
        return json.dumps(plain(source), sort_keys=True, default=str)
    text = os.fspath(source)
    path = Path(text)
    if "\n" not in text and path.suffix in {".yaml", ".yml", ".json"}:
        return str(path.resolve())
    return text


def _workers(workers: Any) -> int | None:
    """`workers` from a trainer's config (often a string); None leaves the engine's default
    (`REWARDSMITH_WORKERS`, else this process's share of the node's cores)."""
    if workers is None:
        return None
    try:
        return worker_count(workers)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def missing_spec_error() -> ConfigError:
    """The error for a trainer process that has no spec, saying how to give it one."""
    return ConfigError(
        f"no reward spec in this process (pid {os.getpid()} on {socket.gethostname()}): "
        f"{SPEC_ENV} is not set here. Set it to the spec file's absolute path (or pass the "
        "spec: verl's +reward.custom_reward_function.reward_kwargs.spec=/abs/spec.yaml). The "
        "reward function runs in Ray workers: a cluster started before the job (`ray "
        "start`) does not see the job's environment, so export the variable before `ray "
        "start` on every node, or pass it with the job, e.g. ray job submit "
        f'--runtime-env-json=\'{{"env_vars": {{"{SPEC_ENV}": "/abs/spec.yaml"}}}}\''
    )


def counts_tokens(component: ComponentSpec) -> bool:
    """Whether a component measures the completion in tokens (`length`, `unit: tokens`)."""
    if component.type != "length":
        return False
    default = registry.get("length").params["unit"].default
    return bool(component.params.get("unit", default) == "tokens")


def count_this_process() -> None:
    """Count this process among the node's reward processes (`_capacity`), unless its samples
    go to a reward server (`REWARDSMITH_URL`): then it runs no workers and takes no share."""
    if not os.environ.get(URL_ENV):
        register_process()


def open_engine(spec: RewardSpec, workers: int | None = None) -> Engine | RemoteEngine:
    """An engine for an adapter: the reward server at `REWARDSMITH_URL` when it is set (no
    pool in this process), else an in-process engine with its own worker pool."""
    url = os.environ.get(URL_ENV)
    if url:
        return RemoteEngine(url, spec)
    return Engine(spec, workers=workers)


def shared_engine(source: SpecSource | None = None, workers: Any = None) -> Engine | RemoteEngine:
    """The process's engine for a spec, started once and reused by every thread (with
    `REWARDSMITH_URL` set: a client of that reward server, see `open_engine`).

    Args:
        source: the spec (a path, YAML text, a dict or a `RewardSpec`); default: the
            `REWARDSMITH_SPEC` environment variable.
        workers: worker processes; default: `REWARDSMITH_WORKERS`, else this process's
            share of the node's cores.

    Raises:
        ConfigError: no spec given and `REWARDSMITH_SPEC` unset, or an invalid spec.
    """
    if source is None:
        source = os.environ.get(SPEC_ENV)
        if not source:
            raise missing_spec_error()
    count = _workers(workers)
    # a forked child starts its own; a server set later is used from then on
    key = (os.getpid(), _spec_key(source), count, os.environ.get(URL_ENV))
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            if isinstance(source, Mapping) and not isinstance(source, dict):
                source = plain(source)
            spec = load_spec(os.fspath(source) if isinstance(source, os.PathLike) else source)
            for name, component in spec.rewards.items():
                if counts_tokens(component):
                    raise ConfigError(
                        f"rewards.{name}: a length in tokens needs each completion's token "
                        "ids, and verl and OpenRLHF hand a reward function text only, so it "
                        "could never apply. Set unit: words or chars, or use the trainer's own "
                        "overlong penalty (verl: the dapo reward manager's overlong_buffer_cfg; "
                        "OpenRLHF: --reward.overlong_buffer_len)"
                    )
            engine = open_engine(without_group_transform(spec), count)
            _ENGINES[key] = engine
        return engine


def close_shared_engines() -> None:
    """Stop the workers of every shared engine (they restart on the next call)."""
    with _ENGINES_LOCK:
        engines = list(_ENGINES.values())
    for engine in engines:
        engine.close()


def _forget_parent_engines() -> None:
    """In a forked child: the lock may have been held by a parent thread at the fork."""
    global _ENGINES_LOCK
    _ENGINES_LOCK = threading.Lock()


atexit.register(close_shared_engines)
os.register_at_fork(after_in_child=_forget_parent_engines)
