"""Where evaluation samples are scored: the engine in this process (`--spec`), or a running
`rewardsmith serve` (`--url`). Both take data-contract samples and give `Result`s in order,
so every metric is computed the same way from either.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from .._exceptions import ConfigError
from ..engine import Engine
from ..models import Result
from ..spec import RewardSpec

__all__ = ["EngineScorer", "HttpScorer", "Scorer"]

TOKEN_ENV = "REWARDSMITH_TOKEN"
_BATCH = 256
"""Samples per request to a reward server (whole groups are never split)."""
_RETRIES = 30


class Scorer(Protocol):
    """Scores samples in input order; `types` maps component -> reward type when known."""

    types: dict[str, str] | None

    def score(
        self, samples: Iterable[dict[str, Any]], advance: Callable[[int], None]
    ) -> Iterator[Result]: ...

    def close(self) -> None: ...


class EngineScorer:
    """The engine's worker pool, started once for every pass of the evaluation."""

    def __init__(self, spec: RewardSpec, workers: int | None = None) -> None:
        self.spec = spec
        self.types: dict[str, str] | None = {n: c.type for n, c in spec.rewards.items()}
        self._engine = Engine(spec, workers=workers)

    def score(
        self, samples: Iterable[dict[str, Any]], advance: Callable[[int], None]
    ) -> Iterator[Result]:
        for result in self._engine.iter_score(samples):
            advance(1)
            yield result

    def close(self) -> None:
        self._engine.close()


class HttpScorer:
    """`POST /v1/score` of a running `rewardsmith serve`, in batches of whole groups."""

    def __init__(
        self, url: str, *, token: str | None = None, spec: RewardSpec | None = None
    ) -> None:
        try:
            import httpx
        except ImportError as exc:
            raise ConfigError('--url needs httpx: pip install "rewardsmith[judge]"') from exc
        token = token or os.environ.get(TOKEN_ENV)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=600)
        self.types = {n: c.type for n, c in spec.rewards.items()} if spec is not None else None

    def score(
        self, samples: Iterable[dict[str, Any]], advance: Callable[[int], None]
    ) -> Iterator[Result]:
        for batch in _whole_groups(samples, _BATCH):
            results = self._post(batch)
            advance(len(results))
            yield from results

    def _post(self, batch: list[dict[str, Any]]) -> list[Result]:
        for _ in range(_RETRIES):
            response = self._client.post("/v1/score", json={"samples": batch})
            if response.status_code == 503:  # queue full: the server asks us to come back
                time.sleep(float(response.headers.get("retry-after", "1")))
                continue
            if response.status_code != 200:
                raise ConfigError(
                    f"--url: the server answered {response.status_code}: {response.text[:300]}"
                )
            results = [Result.model_validate(r) for r in response.json()["results"]]
            if len(results) != len(batch):
                raise ConfigError(f"--url: {len(batch)} samples sent, {len(results)} results")
            return results
        raise ConfigError(f"--url: the server stayed busy (503) after {_RETRIES} tries")

    def close(self) -> None:
        self._client.close()


def _whole_groups(samples: Iterable[dict[str, Any]], size: int) -> Iterator[list[dict[str, Any]]]:
    """Batches of about `size` samples, cut only between groups."""
    batch: list[dict[str, Any]] = []
    for sample in samples:
        group = sample.get("group")
        if len(batch) >= size and (group is None or group != batch[-1].get("group")):
            yield batch
            batch = []
        batch.append(sample)
    if batch:
        yield batch
