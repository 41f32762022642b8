"""A node-shared reward server for trainers: `REWARDSMITH_URL`.

With ``REWARDSMITH_URL=http://127.0.0.1:8000`` (and `REWARDSMITH_TOKEN` when the server has
one), the TRL, verl and OpenRLHF adapters send their samples to a running `rewardsmith serve`
instead of starting a worker pool, so every rank and reward actor of a node shares one pool
sized to its cores. `RemoteEngine` stands in for `Engine` (`spec`, `score`, `ascore`,
`close`), so the adapters convert results exactly as they do in-process.

- One `httpx.Client` per process and server: HTTP/1.1 keep-alive connections, pooled and
  shared by every thread, made directly (no `HTTP_PROXY`: the server is the node's own).
- The adapter's own spec must be the server's: the first call compares the spec's
  fingerprint with the one `/health` reports, and every call with the one its answer
  carries (`X-Rewardsmith-Spec`: a server restarted with another spec), and refuses
  (`ConfigError`) a server that scores with another spec. The server is asked to finish
  results without its spec's `group_transform:`, as the adapters do in process.
- A `REWARDSMITH_URL` that names no server (not an http(s) URL, a bad host or port,
  `0.0.0.0`) is a `ConfigError` at once.
- Bounded retries with backoff while no answer has arrived (connection errors, a
  keep-alive connection closed before any answer) and on 503 (queue full, restarting),
  within a deadline per call that holds however slowly an answer arrives (the attempts run
  in a thread the call stops waiting for, whose every read and write ends by then:
  `_DeadlineStream`). An answer cut after its head is never asked
  again: the server may have scored it. When the server cannot be reached, refuses the
  request, does not answer in time, sends more than `MAX_ANSWER_BYTES` (an endless body, a
  gzip bomb) or answers with anything but results for exactly the
  call's ids, in order, each with the spec's components and finite numbers, the call's
  samples get `error` results (cause `infrastructure`): the trainer's `on_error` rules
  apply, nothing is raised and nothing hangs.
- The body is ASCII JSON (`_encode`): text UTF-8 cannot encode (a lone surrogate) goes as an
  escape, NaN as `NaN`; a sample JSON cannot hold (bytes that are not UTF-8, an object of no
  JSON type) gets an `error` result (cause `infrastructure`) in its place, and the others
  are sent.
- Inputs that are not valid samples are `invalid` here, in place, as the engine makes them.

Absolute imports only: trainers load the adapter files by path.
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
import math
import os
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from pydantic_core import to_jsonable_python

import rewardsmith
from rewardsmith._exceptions import ConfigError
from rewardsmith.engine._engine import SampleLike, as_sample
from rewardsmith.models import Result, Sample, Score
from rewardsmith.spec import RewardSpec

__all__ = ["SPEC_HEADER", "TOKEN_ENV", "URL_ENV", "RemoteEngine", "spec_fingerprint"]

URL_ENV = "REWARDSMITH_URL"
"""Environment variable: the reward server the adapters send samples to."""
TOKEN_ENV = "REWARDSMITH_TOKEN"
"""Environment variable: the server's bearer token."""
SPEC_HEADER = "x-rewardsmith-spec"
"""Header of the server's `/v1/score` results: its spec's fingerprint."""

DEADLINE_S = 600.0
"""Longest a call may take, retries included."""
RETRIES = 6
"""Most attempts per call beyond the first (connection errors and 503 only)."""
BACKOFF_S = 0.1
"""Wait before the first retry; it doubles after each one, up to `_MAX_BACKOFF_S`."""
_MAX_BACKOFF_S = 5.0
_CONNECT_TIMEOUT_S = 5.0
MAX_ANSWER_BYTES = 64 * 2**20
"""Most bytes of an answer's body read (decoded), or four times the request's when more:
past it the answer is refused, never held whole in the trainer's memory."""


def spec_fingerprint(spec: RewardSpec) -> str:
    """A short hash of what a trainer's results depend on in a spec: all of it but the
    `group_transform:` (advantages are the trainer's job: the client asks the server to
    leave it out). The server reports its own on `/health` and with every answer of
    results; an adapter refuses a server whose spec is not its own. The version is in it:
    another rewardsmith may score the same spec otherwise."""
    text = rewardsmith.__version__ + spec.model_dump_json(exclude={"group_transform"})
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
            spec: the spec the adapter converts results with; the server's must be the same
                (`group_transform:` aside: results come without it).
            token: the server's bearer token (default: `REWARDSMITH_TOKEN`).
            deadline_s: longest a call may take, retries included.
            retries: most retries per call (connection errors and 503 only).
            backoff_s: wait before the first retry (then doubling).

        Raises:
            ConfigError: `url` names no server it could reach (`_server_url`).
        """
        self.url = _server_url(url)
        self.spec = spec
        self._fingerprint = spec_fingerprint(spec)
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

                headers = {"Accept-Encoding": "identity"}  # bodies are counted as they come
                if self._token:
                    headers["Authorization"] = f"Bearer {self._token}"
                limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
                transport = httpx.HTTPTransport(limits=limits)
                # httpx takes no network backend: its httpcore pool's is wrapped in place
                pool = transport._pool
                pool._network_backend = _DeadlineBackend(pool._network_backend)
                self._client = httpx.Client(base_url=self.url, headers=headers, transport=transport)
            return self._client

    def score(self, samples: Iterable[SampleLike]) -> list[Result]:
        """Score samples on the server; one result per input, in input order."""
        items = [
            self._encoded(as_sample(self.spec, item, index)) for index, item in enumerate(samples)
        ]
        sent = [item for item in items if isinstance(item, _Encoded)]
        if not sent:
            return [item for item in items if isinstance(item, Result)]
        # as the adapters score: without the spec's group_transform
        content = b'{"group_transform":false,"samples":[' + b",".join(s.json for s in sent) + b"]}"
        answered = iter(self._post(content, [s.id for s in sent]))
        return [item if isinstance(item, Result) else next(answered) for item in items]

    def _encoded(self, item: Sample | Result) -> _Encoded | Result:
        """A sample as the server will read it, or its `error` result when it cannot be
        written as JSON (bytes that are not UTF-8, an object of no JSON type): in process
        such a sample is scored, here it cannot be sent, and the call's others still are."""
        if isinstance(item, Result):
            return item
        try:
            return _Encoded(item.id, _encode(item.model_dump(mode="python", exclude_defaults=True)))
        except (ValueError, TypeError, RecursionError) as exc:  # UnicodeDecodeError included
            why = f"cannot be sent to the reward server: {type(exc).__name__}: {exc}"
            return self._error(item.id, why)

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

    def _post(self, content: bytes, ids: list[str]) -> list[Result]:
        """The server's results for `ids`, else `error` results: never an exception for what
        the server does (only `ConfigError` for a wrong token or spec), never past the
        deadline (the attempts run in a thread that the call stops waiting for)."""
        deadline = time.monotonic() + self._deadline_s
        call: Future[list[Result]] = Future()
        threading.Thread(
            target=self._run_call, args=(call, content, ids, deadline), daemon=True
        ).start()
        try:
            return call.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout:
            why = f"no answer within {self._deadline_s:g} s"
        except _Unusable as exc:
            why = str(exc)
        reason = f"reward server {self.url} unavailable: {why}"
        return [self._error(sample_id, reason) for sample_id in ids]

    def _run_call(
        self, call: Future[list[Result]], content: bytes, ids: list[str], deadline: float
    ) -> None:
        """Run by a thread: `call` gets the results, `_Unusable` or a `ConfigError`."""
        _ATTEMPT.deadline = deadline  # the thread's reads and writes end by then
        try:
            call.set_result(self._attempt_until(content, ids, deadline))
        except BaseException as exc:  # handed to the caller (if it still waits)
            call.set_exception(exc)

    def _attempt_until(self, content: bytes, ids: list[str], deadline: float) -> list[Result]:
        import httpx

        http = self._http()
        wait_s = self._backoff_s
        why = "no attempt made"
        limit = max(MAX_ANSWER_BYTES, 4 * len(content))
        for attempt in range(self._retries + 1):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            timeout = httpx.Timeout(left, connect=min(left, _CONNECT_TIMEOUT_S))
            try:
                answer = self._check_spec(http, timeout)
                if answer is None:
                    answer = _exchange(http, "POST", "/v1/score", timeout, limit, content)
            except httpx.ConnectTimeout as exc:  # no connection made: retried like a refused one
                why = f"{type(exc).__name__}: no connection within {_CONNECT_TIMEOUT_S:g} s"
            except httpx.TimeoutException:
                raise _Unusable(f"no answer within {self._deadline_s:g} s") from None
            except httpx.TransportError as exc:  # refused, reset, closed keep-alive: no answer
                why = f"{type(exc).__name__}: {exc}"
            else:
                status = answer.status
                if status == 200:
                    self._check_fingerprint(answer.spec, "/v1/score")
                    return _results(answer.body, ids, list(self.spec.rewards))
                if status in (401, 403):
                    raise ConfigError(
                        f"the reward server at {self.url} refused the token ({URL_ENV} is set): "
                        f"set {TOKEN_ENV} to the server's token"
                    )
                why = f"HTTP {status}: {answer.body[:300].decode('utf-8', 'replace')}"
                if status != 503:
                    break
            if attempt < self._retries:
                time.sleep(max(0.0, min(wait_s, deadline - time.monotonic())))
                wait_s = min(2 * wait_s, _MAX_BACKOFF_S)
        raise _Unusable(why)

    def _check_spec(self, http: Any, timeout: Any) -> _Answer | None:
        """On the first call, before any sample is scored: None once the server's spec is
        known to be ours, else the `/health` answer that did not say so."""
        if self._checked:
            return None
        answer = _exchange(http, "GET", "/health", timeout, MAX_ANSWER_BYTES)
        if answer.status != 200:
            return answer
        try:
            theirs = json.loads(answer.body)["spec"]
        except (ValueError, KeyError, TypeError, RecursionError):
            theirs = None
        self._check_fingerprint(theirs, "/health")
        self._checked = True
        return None

    def _check_fingerprint(self, theirs: object, where: str) -> None:
        """Refuse (`ConfigError`) a server whose spec is not ours; an answer without a
        fingerprint is no answer of a reward server (`_Unusable`)."""
        if not isinstance(theirs, str):
            raise _Unusable(f"{where} answered 200 with no spec fingerprint")
        if theirs != self._fingerprint:
            raise ConfigError(
                f"the reward server at {self.url} ({URL_ENV}) scores with another spec than "
                "this trainer's, or runs another rewardsmith version (fingerprints differ): "
                "start it with the same spec file and version"
            )

    def _error(self, sample_id: str, reason: str) -> Result:
        failed = Score.failed("error", reason[:500], cause="infrastructure")
        return Result(
            id=sample_id,
            reward=self.spec.on_error,
            status="error",
            components=dict.fromkeys(self.spec.rewards, failed),
        )


class _Unusable(Exception):
    """The server's answer, or its absence, that gives the call's samples `error` results."""


class _Encoded(NamedTuple):
    id: str
    json: bytes


class _Answer(NamedTuple):
    status: int
    spec: str | None
    """The `X-Rewardsmith-Spec` header."""
    body: bytes


def _encode(value: object) -> bytes:
    """`value` as ASCII JSON, as the server reads it: text UTF-8 cannot encode (a lone
    surrogate) goes as an escape, NaN and infinities as `NaN` and `Infinity` (as in process,
    not null), other types (UTF-8 bytes, a set, a date) as pydantic writes them in JSON."""
    text = json.dumps(value, ensure_ascii=True, allow_nan=True, default=to_jsonable_python)
    return text.encode("ascii")


def _server_url(url: str) -> str:
    """`url` without its trailing slash, when it names a server to connect to: an http(s)
    URL with a host and a valid port, not an address that only binds (`0.0.0.0`, `::`).
    Else a `ConfigError` naming `REWARDSMITH_URL`: a typo then stops the trainer at once,
    rather than failing every sample of the run."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise _bad_url(url, str(exc)) from None
    if parts.scheme not in ("http", "https"):
        raise _bad_url(url, "the scheme must be http or https")
    if not parts.hostname or port == 0 or not url.isprintable() or " " in url:
        raise _bad_url(url, "no host, port 0, a space or a control character")
    try:
        unspecified = ipaddress.ip_address(parts.hostname).is_unspecified
    except ValueError:  # a host name
        unspecified = False
    if unspecified:
        raise _bad_url(url, f"{parts.hostname} is where a server binds, not an address to reach")
    return url.rstrip("/")


def _bad_url(url: str, why: str) -> ConfigError:
    return ConfigError(
        f"{URL_ENV}={url!r} is not a reward server's URL ({why}); e.g. http://127.0.0.1:8000"
    )


def _exchange(
    http: Any, method: str, path: str, timeout: Any, limit: int, content: bytes = b""
) -> _Answer:
    """One request, its body read in chunks so one of more than `limit` bytes (an endless
    body, a gzip bomb) is given up as soon as it passes them (the deadline ends each read,
    `_DeadlineStream`). An error once the answer's head has come is `_Unusable`, never
    retried: the server may have scored the request."""
    import httpx

    headers = {"Content-Type": "application/json"} if content else None
    with http.stream(method, path, content=content or None, timeout=timeout, headers=headers) as r:
        body = bytearray()
        try:
            for chunk in r.iter_bytes():
                body += chunk
                if len(body) > limit:
                    raise _Unusable(f"an answer of more than {limit} bytes")
        except httpx.HTTPError as exc:  # cut, timed out, does not decode (Content-Encoding)
            raise _Unusable(f"HTTP {r.status_code}, then {type(exc).__name__}: {exc}") from None
        return _Answer(r.status_code, r.headers.get(SPEC_HEADER), bytes(body))


_ATTEMPT = threading.local()
"""`deadline`: when the call of the attempts this thread runs ends (`_run_call` sets it)."""


def _until_deadline(timeout: float | None, error: type[Exception]) -> float | None:
    """`timeout`, shortened to what is left of the thread's call, else `error`."""
    deadline: float | None = getattr(_ATTEMPT, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the call's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream:
    """An httpcore network stream whose every read and write ends by the deadline of the
    calling attempt's call. httpcore's own timeouts are per read, and it reads `1xx` heads
    in a loop with no bound: a server sending `100 Continue` forever, or a head a byte at a
    time, held the attempt's thread and connection long after the call had returned."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        import httpcore

        return self._stream.read(max_bytes, _until_deadline(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        import httpcore

        self._stream.write(buffer, _until_deadline(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, *args: Any, **kwargs: Any) -> _DeadlineStream:
        return _DeadlineStream(self._stream.start_tls(*args, **kwargs))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend:
    """httpcore's network backend, its streams `_DeadlineStream`s."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def connect_tcp(self, *args: Any, **kwargs: Any) -> _DeadlineStream:
        return _DeadlineStream(self._backend.connect_tcp(*args, **kwargs))

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> _DeadlineStream:
        return _DeadlineStream(self._backend.connect_unix_socket(*args, **kwargs))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def _results(answer: bytes, ids: list[str], names: list[str]) -> list[Result]:
    """The results of a 200, when they are results for exactly `ids`, in order, each with
    the components `names` and finite numbers only (as the engine makes them)."""
    try:
        data = json.loads(answer, parse_constant=_finite, parse_float=_finite)
        results = [Result.model_validate(r) for r in data["results"]]
    except (ValueError, KeyError, TypeError, RecursionError) as exc:  # JSON, validation
        raise _Unusable(f"200 with no results ({type(exc).__name__}): {answer[:100]!r}") from None
    got = [r.id for r in results]
    if len(got) != len(ids):
        raise _Unusable(f"{len(got)} results for {len(ids)} samples")
    if got != ids:
        raise _Unusable(f"results for other ids than the samples' ({got[:3]} for {ids[:3]})")
    for result in results:
        if list(result.components) != names:
            raise _Unusable(
                f"result {result.id!r} has components {list(result.components)[:5]}, not the "
                f"spec's {names[:5]}"
            )
    return results


def _finite(text: str) -> float:
    """A JSON number (or `NaN`, `Infinity`), refused unless finite: the engine never makes
    a non-finite reward or score, and `1e999` reads as infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:20]}: not a finite number")
    return value
