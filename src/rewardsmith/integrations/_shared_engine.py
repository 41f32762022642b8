"""The process's shared engines, for adapters that trainers load as plain functions.

Absolute imports only: verl loads `verl.py` by file path (as a module outside any package),
and that module imports this one.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rewardsmith._exceptions import ConfigError
from rewardsmith.engine import Engine
from rewardsmith.engine._capacity import register_process, worker_count
from rewardsmith.integrations._groups import without_group_transform
from rewardsmith.integrations._remote import URL_ENV, RemoteEngine
from rewardsmith.integrations._trainer_data import plain
from rewardsmith.registry import registry
from rewardsmith.spec import ComponentSpec, RewardSpec, load_spec

__all__ = [
    "SPEC_ENV",
    "SpecSource",
    "close_shared_engines",
    "count_this_process",
    "counts_tokens",
    "missing_spec_error",
    "open_engine",
    "shared_engine",
]

SPEC_ENV = "REWARDSMITH_SPEC"
"""Environment variable naming the spec (a path, or YAML text) for file-based adapters."""


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
