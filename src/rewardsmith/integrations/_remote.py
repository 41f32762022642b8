"""A node-shared reward server for trainers: `REWARDSMITH_URL`.

With ``REWARDSMITH_URL=http://127.0.0.1:8000`` (and `REWARDSMITH_TOKEN` when the server has
one), the TRL, verl and OpenRLHF adapters send their samples to a running `rewardsmith serve`
instead of starting a worker pool, so every rank and reward actor of a node shares one pool
sized to its cores. `RemoteEngine` stands in for `Engine` (`spec`, `score`, `ascore`,
`close`), so the adapters convert results exactly as they do in-process.

- One `httpx.Client` per process and server: HTTP/1.1 keep-alive connections, pooled and
  shared by every thread.
- The adapter's own spec must be the server's: the first call compares the spec's
  fingerprint with the one `/health` reports and refuses (`ConfigError`) a server that
  scores with another spec.
- Bounded retries with backoff on connection errors and on 503 (queue full, restarting),
  within a deadline per call. When the server cannot be reached, refuses the request or
  does not answer in time, the call's samples get `error` results (cause
  `infrastructure`): the trainer's `on_error` rules apply, and nothing hangs.
- Inputs that are not valid samples are `invalid` here, in place, as the engine makes them.

Absolute imports only: trainers load the adapter files by path.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import time
from collections.abc import Iterable
from typing import Any

from rewardsmith._exceptions import ConfigError
from rewardsmith.engine._engine import SampleLike, as_sample
from rewardsmith.models import Result, Sample, Score
from rewardsmith.spec import RewardSpec

__all__ = ["TOKEN_ENV", "URL_ENV", "RemoteEngine", "spec_fingerprint"]

URL_ENV = "REWARDSMITH_URL"
"""Environment variable: the reward server the adapters send samples to."""
TOKEN_ENV = "REWARDSMITH_TOKEN"
"""Environment variable: the server's bearer token."""

DEADLINE_S = 600.0
"""Longest a call may take, retries included."""
RETRIES = 6
"""Most attempts per call beyond the first (connection errors and 503 only)."""
BACKOFF_S = 0.1
"""Wait before the first retry; it doubles after each one, up to `_MAX_BACKOFF_S`."""
_MAX_BACKOFF_S = 5.0
_CONNECT_TIMEOUT_S = 5.0


def spec_fingerprint(spec: RewardSpec) -> str:
    """A short hash of what a trainer's results depend on in a spec: all of it but the
    `group_transform:` (advantages are the trainer's job). The server reports its own on
    `/health`; an adapter refuses a server whose spec is not its own."""
    text = spec.model_dump_json(exclude={"group_transform"})
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class RemoteEngine:
    """Scores samples on a running `rewardsmith serve`, as an `Engine` would in-process."""

    def __init__(
        self,
        url: str,
        spec: RewardSpec,
        *,
        token: str | None = None,
        deadline_s: float = DEADLINE_S,
        retries: int = RETRIES,
        backoff_s: float = BACKOFF_S,
    ) -> None:
        """Nothing connects until the first call.

        Args:
            url: the server's base URL (`http://127.0.0.1:8000`).
            spec: the spec the adapter converts results with; the server's must be the same.
            token: the server's bearer token (default: `REWARDSMITH_TOKEN`).
            deadline_s: longest a call may take, retries included.
            retries: most retries per call (connection errors and 503 only).
            backoff_s: wait before the first retry (then doubling).
        """
        self.url = url.rstrip("/")
        self.spec = spec
        self._token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        self._deadline_s = deadline_s
        self._retries = retries
        self._backoff_s = backoff_s
        self._client: Any = None
        self._checked = False
        self._lock = threading.Lock()

    def _http(self) -> Any:
        with self._lock:
            if self._client is None:
                import httpx

                headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
                self._client = httpx.Client(
                    base_url=self.url,
                    headers=headers,
                    limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
                )
            return self._client

    def score(self, samples: Iterable[SampleLike]) -> list[Result]:
        """Score samples on the server; one result per input, in input order."""
        items = [as_sample(self.spec, item, index) for index, item in enumerate(samples)]
        sent = [item for item in items if isinstance(item, Sample)]
        if not sent:
            return [item for item in items if isinstance(item, Result)]
        body = {"samples": [s.model_dump(mode="json", exclude_defaults=True) for s in sent]}
        answered = iter(self._post(body, [s.id for s in sent]))
        return [item if isinstance(item, Result) else next(answered) for item in items]

    async def ascore(self, samples: Iterable[SampleLike]) -> list[Result]:
        """`score` for coroutines (the request runs in a thread; the loop stays free)."""
        return await asyncio.to_thread(self.score, list(samples))

    def close(self) -> None:
        """Close the connections (they reopen on the next call)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()

    def __enter__(self) -> RemoteEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _post(self, body: dict[str, Any], ids: list[str]) -> list[Result]:
        import httpx

        http = self._http()
        deadline = time.monotonic() + self._deadline_s
        wait_s = self._backoff_s
        why = "no attempt made"
        for attempt in range(self._retries + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            timeout = httpx.Timeout(left, connect=min(left, _CONNECT_TIMEOUT_S))
            try:
                response = self._check_spec(http, timeout)
                if response is None:
                    response = http.post("/v1/score", json=body, timeout=timeout)
            except httpx.TimeoutException:
                why = f"no answer within {self._deadline_s:g} s"
                break
            except httpx.TransportError as exc:  # refused, reset, closed keep-alive...
                why = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code == 200:
                    results = [Result.model_validate(r) for r in response.json()["results"]]
                    if len(results) == len(ids):
                        return results
                    why = f"{len(results)} results for {len(ids)} samples"
                    break
                if response.status_code in (401, 403):
                    raise ConfigError(
                        f"the reward server at {self.url} refused the token ({URL_ENV} is set): "
                        f"set {TOKEN_ENV} to the server's token"
                    )
                why = f"HTTP {response.status_code}: {response.text[:300]}"
                if response.status_code != 503:
                    break
            if attempt < self._retries:
                time.sleep(max(0.0, min(wait_s, deadline - time.monotonic())))
                wait_s = min(2 * wait_s, _MAX_BACKOFF_S)
        reason = f"reward server {self.url} unavailable: {why}"
        return [self._unavailable(sample_id, reason) for sample_id in ids]

    def _check_spec(self, http: Any, timeout: Any) -> Any:
        """On the first call: None once the server's spec is known to be ours, else the
        `/health` response that did not say so."""
        if self._checked:
            return None
        response = http.get("/health", timeout=timeout)
        if response.status_code != 200:
            return response
        theirs = response.json().get("spec")
        if theirs != spec_fingerprint(self.spec):
            raise ConfigError(
                f"the reward server at {self.url} ({URL_ENV}) scores with another spec than "
                "this trainer's (fingerprints differ): start it with the same spec file"
            )
        self._checked = True
        return None

    def _unavailable(self, sample_id: str, reason: str) -> Result:
        failed = Score.failed("error", reason[:500], cause="infrastructure")
        return Result(
            id=sample_id,
            reward=self.spec.on_error,
            status="error",
            components=dict.fromkeys(self.spec.rewards, failed),
        )
