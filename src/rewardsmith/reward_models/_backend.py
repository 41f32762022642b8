"""Where a model reward's model runs: in the node's model host (``backend: transformers``) or
on a server (``vllm``, ``sglang``, ``openrlhf``), and the checks both need at build time.

Building a reward (the engine does it once in its own process to check the spec, then once in
each worker) loads the tokenizer and, for ``transformers``, connects to the model's host,
starting it and waiting for its load the first time, so a model that cannot load fails the
spec, not a sample.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from ..judges._backends import BackendConfig
from ._ahead import Ahead
from ._host import HostedModel, host_client
from ._remote import Endpoint, Server, ServerClient, ServerKind
from ._transformers import Dtype, TorchModel

__all__ = [
    "Backend",
    "check_common",
    "hosted",
    "local_folder",
    "model_client",
    "served",
    "tokenizer_folder",
]

Backend = Literal["transformers", "vllm", "sglang", "openrlhf"]


def local_folder(path: str | None, key: str) -> str:
    """`path` as an absolute local folder; an error naming `key` otherwise."""
    if not path:
        raise ValueError(f"{key}: give a local model folder")
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise ValueError(
            f"{key}: {path!r} is not a folder (models load from local folders; nothing is "
            "downloaded)"
        )
    return str(folder.resolve())


def hosted(model: HostedModel) -> Callable[[], Ahead]:
    """This process's client of `model`'s host, the host started (and loaded) now."""
    host_client(model).connect()
    return lambda: host_client(model)


_SERVERS: dict[tuple[int, Server, BackendConfig, int], ServerClient] = {}
_SERVERS_LOCK = threading.Lock()


def served(
    kind: ServerKind,
    *,
    base_url: str | None,
    model: str | None,
    endpoint: Endpoint,
    activation: bool = False,
    batch_size: int,
    api_key_env: str,
    max_concurrency: int,
    request_timeout_s: float,
    max_retries: int,
) -> Callable[[], Ahead]:
    """This process's client of a reward-model server (one per process and server)."""
    if not base_url:
        raise ValueError(f"backend {kind}: set base_url")
    if max_concurrency < 1 or max_retries < 0 or request_timeout_s <= 0:
        raise ValueError("max_concurrency >= 1, max_retries >= 0 and request_timeout_s > 0")
    server = Server(kind, base_url, model, endpoint, activation)
    transport = BackendConfig(
        kind="openai",
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        max_concurrency=max_concurrency,
        request_timeout_s=request_timeout_s,
        max_retries=max_retries,
    )

    def client() -> Ahead:
        key = (os.getpid(), server, transport, batch_size)
        with _SERVERS_LOCK:
            found = _SERVERS.get(key)
            if found is None:
                found = _SERVERS[key] = ServerClient(server, transport, batch_size)
            return found

    return client


def check_common(*, batch_size: int, max_length: int, deadline_s: float) -> None:
    """The bounds every model reward checks."""
    if batch_size < 1:
        raise ValueError(f"batch_size: must be >= 1, got {batch_size}")
    if max_length < 2:
        raise ValueError(f"max_length: must be >= 2, got {max_length}")
    if deadline_s <= 0:
        raise ValueError(f"deadline_s: must be > 0, got {deadline_s}")


def tokenizer_folder(backend: Backend, model: str | None, tokenizer: str | None) -> str:
    """The local folder holding the tokenizer: `tokenizer`, or the model's folder in process."""
    if tokenizer is not None or backend != "transformers":
        if tokenizer is None:
            raise ValueError(
                f"backend {backend}: set tokenizer (a local folder with the served model's "
                "tokenizer files): inputs are tokenized here, so the server sees the RM's "
                "template and no doubled BOS"
            )
        return local_folder(tokenizer, "tokenizer")
    return local_folder(model, "model")


def model_client(
    backend: Backend,
    kind: type[TorchModel],
    *,
    model: str | None,
    pad_id: int,
    batch_size: int,
    device: str,
    dtype: Dtype,
    threads: int | None,
    load_timeout_s: float,
    base_url: str | None = None,
    endpoint: Endpoint = "classify",
    activation: bool = False,
    api_key_env: str = "REWARDSMITH_RM_API_KEY",
    max_concurrency: int = 8,
    request_timeout_s: float = 20.0,
    max_retries: int = 3,
    **fields: Any,
) -> Callable[[], Ahead]:
    """The client of a model reward's model: a `kind` model (with `fields`) from the folder
    `model` in the node's host, or the server at `base_url`."""
    if backend == "transformers":
        return hosted(
            kind(
                path=local_folder(model, "model"),
                batch_size=batch_size,
                load_timeout_s=load_timeout_s,
                device=device,
                dtype=dtype,
                threads=threads,
                pad_id=pad_id,
                **fields,
            )
        )
    return served(
        backend,
        base_url=base_url,
        model=model,
        endpoint=endpoint,
        activation=activation,
        batch_size=batch_size,
        api_key_env=api_key_env,
        max_concurrency=max_concurrency,
        request_timeout_s=request_timeout_s,
        max_retries=max_retries,
    )
