"""The reward server: the app over one engine, and `serve` to run it over HTTP (`_http`).

Routes:

- `POST /v1/score`: `{"samples": [sample, ...]}` (or the bare list) in the data contract ->
  `{"results": [result, ...]}`, in order, each result as `rewardsmith score` writes it, with
  the spec's fingerprint in `X-Rewardsmith-Spec`. With `"group_transform": false` beside
  the samples, results are finished without the spec's `group_transform:`, as the trainer
  adapters score in process (the `REWARDSMITH_URL` client asks so).
- `POST /get_reward`: OpenRLHF's remote reward contract (see `_openrlhf`).
- `GET /health`: liveness and queue depth (never needs the token).
- `GET /metrics`: Prometheus text.

Refusals, in the order they are checked: without a token, 403 (an `Origin` header: a web
page) and 421 (a `Host` other than localhost or a loopback address: DNS rebinding); 404 (no
such route), 405 (wrong method), 401
(missing or wrong bearer token), 413 (body over `max_body_bytes`, or more samples than the
queue can ever hold), 408 (body not received within `body_timeout_s`), 422 (malformed JSON
or sample, or JSON nested too deep; the message names the field), 503 (queue full, or
shutting down; with Retry-After); 499 (counted, not sent) for a client that left before its
answer. Each is `{"detail": "..."}`. Below the app, the connection (`_http`) answers 408
to slow headers, 431 to headers over 64 KiB, 400 to upgrade and malformed requests, 413 to
bodies over `max_body_bytes` and 408 to slow bodies. Every
request is parsed and validated on its own before it reaches the engine, so a bad request
is refused alone; a body larger than `_INLINE_BYTES` (`/get_reward`: `_INLINE_QUERY_BYTES`),
or holding more than `_INLINE_VALUES` values, is read and validated in a thread, and so is
a request of more than `_INLINE_SAMPLES` samples (its answer written there too), so one
large request never stalls the event loop, the other requests or `/health`.

Each request is one run of the engine's continuous front (`Engine.ascore`): its samples go to
idle workers as they arrive, alongside those of every other request, and it is answered as
soon as its own last sample is finished. The queue bound is the engine's admission limit. A
client that disconnects first has its run cancelled, so its samples leave the queue.

No web framework: four routes do not need one, and on a node where the server shares its
cores with the reward workers, every layer a request passes through is CPU the workers lose
(BENCHMARKS.md, "Reward server under load").
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hmac
import json
import logging
import os
import signal
import time
from collections.abc import Callable
from typing import Any, TypeVar

import orjson
from pydantic import TypeAdapter, ValidationError

from .._exceptions import InputError
from ..engine import Engine, QueueFull
from ..engine._engine import Backend
from ..integrations._groups import group_scoped
from ..integrations._remote import SPEC_HEADER, spec_fingerprint
from ..integrations.openrlhf import NO_GROUPS
from ..models import MAX_NESTING, Result, Sample, nested_deeper_than, result_json
from ..spec import RewardSpec, load_spec
from ._config import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_QUEUE_SAMPLES,
    TOKEN_ENV,
    check_bind,
    check_settings,
    is_loopback,
)
from ._http import Answer, Headers, Limits, Refusal, Request, Respond, new_loop, serve_http
from ._metrics import CONTENT_TYPE, Metrics
from ._openrlhf import OpenRLHFRequest, openrlhf_response

__all__ = ["RewardApp", "create_app", "serve"]

_SAMPLES = TypeAdapter(list[Sample])
_SCORE_KEYS = ("samples", "group_transform")
_MAX_ERRORS = 3
_INLINE_BYTES = 256 * 2**10
_INLINE_VALUES = 2048
"""A body of at most `_INLINE_BYTES` with at most this many commas and brackets (a bound on
the values it holds) is read on the event loop; any other in a worker thread. Reading and
validating cost by the value: 85,000 empty lists in one sample's metadata took the loop
250 ms."""
_INLINE_QUERY_BYTES = 16 * 2**10
"""`/get_reward` bodies are read on the loop up to this size only: cutting each query's
response from its prompt and special tokens costs about a microsecond per character (a
262 KB query of 87,000 `<s>` took 0.3 s)."""
_INLINE_SAMPLES = 64
"""Requests of up to this many samples, in a body read on the loop, are validated and
answered there; larger ones in a worker thread (13,796 tiny samples took it 100 ms)."""
_BODY_NESTING = MAX_NESTING + 2
"""Deepest JSON body: a sample's own limit plus the body's list and object around it."""
_YOUNG_GENERATION = 10_000
"""Allocations between two collections of the youngest generation in the server (700 by
default)."""
_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
"""The usual loopback host names, known without parsing an address."""

T = TypeVar("T")

_log = logging.getLogger("rewardsmith.server")


class RewardApp:
    """The server's app (an `_http.Handler`): the routes above over one engine, which starts
    with the server and stops with it. Made by `create_app`."""

    def __init__(
        self,
        spec: RewardSpec,
        engine: Engine,
        *,
        token: str | None,
        max_body_bytes: int,
        max_queue_samples: int,
        body_timeout_s: float,
    ) -> None:
        self.spec = spec
        self.engine = engine
        self.metrics = Metrics()
        self.metrics.add_gauge(
            "rewardsmith_queue_samples",
            "Samples accepted and not yet answered.",
            lambda: engine.admitted,
        )
        self.metrics.add_gauge(
            "rewardsmith_queue_limit_samples",
            "Most samples the queue takes.",
            lambda: max_queue_samples,
        )
        self.max_body_bytes = max_body_bytes
        """Largest body the server takes for this app (`_http.Limits`)."""
        self.body_timeout_s = body_timeout_s
        """Time the server gives a body to arrive (`_http.Limits`)."""
        self._expected = token.encode() if token else None
        self._max_queue_samples = max_queue_samples
        self._fingerprint = spec_fingerprint(spec)
        self._spec_header = ((SPEC_HEADER.encode(), self._fingerprint.encode()),)
        self._accepting = False
        self._routes: dict[str, tuple[bytes, Callable[[Request], Answer | Respond]]] = {
            "/v1/score": (b"POST", self._score),
            "/get_reward": (b"POST", self._get_reward),
            "/health": (b"GET", self._health),
            "/metrics": (b"GET", self._metrics),
        }

    # -- the server's calls ---------------------------------------------------------------

    async def start(self) -> None:
        # the loop drives the workers: a driver thread would take turns with it on the
        # interpreter lock for every request (BENCHMARKS.md, "Reward server under load")
        self.engine.host(asyncio.get_running_loop())
        await asyncio.to_thread(self.engine.start)
        self._accepting = True

    def stop_accepting(self) -> None:
        self._accepting = False

    async def close(self) -> None:
        self._accepting = False
        await asyncio.to_thread(self.engine.close)

    def open(self, request: Request) -> Answer | Respond:
        if self._expected is None:
            _check_local(request.headers)
        route = self._routes.get(request.path)
        if route is None:
            raise Refusal(404, "Not Found")
        if request.method != route[0]:
            raise Refusal(405, "Method Not Allowed", headers=((b"allow", route[0]),))
        return route[1](request)

    def answered(self, request: Request, answer: Answer | None) -> None:
        path = request.path if request.path in self._routes else "other"
        if answer is None:  # its samples left the queue unscored; nobody read an answer
            self.metrics.reject("disconnected")
            status = 499
        else:
            if answer.reject is not None:
                self.metrics.reject(answer.reject)
            status = answer.status
        self.metrics.observe_request(path, status, time.perf_counter() - request.started)

    # -- routes ---------------------------------------------------------------------------

    def _score(self, request: Request) -> Respond:
        self._authorize(request)
        return self._score_body

    async def _score_body(self, body: bytes) -> Answer:
        # no coroutine per step on the way of a small request: it is the common one
        small = _small(body)
        if small:
            raw, group_transform = _score_fields(_parse_json(body))
        else:
            raw, group_transform = await asyncio.to_thread(lambda: _score_fields(_parse_json(body)))
        inline = self._inline(small, len(raw))
        if inline:
            samples = self._validate_samples(raw)
        else:
            samples = await asyncio.to_thread(self._validate_samples, raw)
        results = await self._run(list(samples), group_transform)
        self.metrics.observe_samples("/v1/score", results)
        if inline:
            return Answer(200, _dump_results(results), headers=self._spec_header)
        dumped = await asyncio.to_thread(_dump_results, results)
        return Answer(200, dumped, headers=self._spec_header)

    def _get_reward(self, request: Request) -> Respond:
        self._authorize(request)
        if (why := group_scoped(self.spec)) is not None:
            raise Refusal(
                422,
                f"the spec needs each sample's whole group ({why}), but {NO_GROUPS}",
                reject="malformed",
            )
        return self._reward_body

    async def _reward_body(self, body: bytes) -> Answer:
        small = _small(body, _INLINE_QUERY_BYTES)
        data = await _off_loop(small, _parse_json, body)
        query = data.get("query") if isinstance(data, dict) else None
        inline = self._inline(small, len(query) if isinstance(query, list) else 0)
        samples, found = await _off_loop(inline, self._validate_openrlhf, data)
        results = await self._run(samples, group_transform=False)  # as the adapter scores
        self.metrics.observe_samples("/get_reward", results)
        answer = openrlhf_response(self.spec, results, found)
        return Answer(200, await _off_loop(inline, lambda: json.dumps(answer).encode()))

    def _health(self, request: Request) -> Answer:
        state = {
            "status": "ok" if self._accepting else "stopping",
            "queued_samples": self.engine.admitted,
            "queue_limit": self._max_queue_samples,
            "spec": self._fingerprint,
        }
        return Answer(200, json.dumps(state).encode())

    def _metrics(self, request: Request) -> Answer:
        self._authorize(request)
        return Answer(200, self.metrics.render().encode(), CONTENT_TYPE.encode())

    # -- steps ----------------------------------------------------------------------------

    def _authorize(self, request: Request) -> None:
        if self._expected is None:
            return
        # RFC 7235: the scheme is case-insensitive, one or more spaces before the credentials
        scheme, _, credentials = request.header(b"authorization").partition(" ")
        given = credentials.lstrip(" ").encode()
        if scheme.lower() != "bearer" or not hmac.compare_digest(given, self._expected):
            raise Refusal(
                401,
                "missing or wrong bearer token (header: Authorization: Bearer <token>)",
                headers=((b"www-authenticate", b"Bearer"),),
            )

    def _inline(self, small: bool, count: int) -> bool:
        """Whether a request whose body is `small` (`_small`) and holds `count` samples is
        validated and answered on the loop, once its count is known to fit the queue: a
        request the queue could never hold gets 413 before a second is spent on its
        samples."""
        if count > self._max_queue_samples:
            raise Refusal(
                413,
                f"samples: {count} in one request; this server takes at most "
                f"{self._max_queue_samples} at once",
                reject="too_large",
            )
        return small and count <= _INLINE_SAMPLES

    def _validate_samples(self, raw: list[Any]) -> list[Sample]:
        for position, item in enumerate(raw, start=1):
            if isinstance(item, dict) and "id" not in item:
                item["id"] = str(position)
        try:
            return _SAMPLES.validate_python(raw)
        except ValidationError as exc:
            raise Refusal(422, _describe(exc, "samples"), reject="malformed") from None

    def _validate_openrlhf(self, data: Any) -> tuple[list[Sample | InputError], list[bool]]:
        try:
            parsed = OpenRLHFRequest.model_validate(data)
        except ValidationError as exc:
            raise Refusal(422, _describe(exc, ""), reject="malformed") from None
        return parsed.samples()

    def _run(
        self, samples: list[Sample | InputError], group_transform: bool
    ) -> asyncio.Future[list[Result]]:
        """The samples' results, to come (`group_transform`: as `Engine.asubmit`); cancelled
        (the client left), the engine drops those not yet scored. (A future, not a
        coroutine: one less frame per request.)"""
        if not self._accepting:
            raise Refusal(
                503,
                "the server is shutting down",
                reject="shutting_down",
                headers=((b"retry-after", b"5"),),
            )
        try:
            return self.engine.asubmit(samples, group_transform=group_transform)
        except QueueFull as exc:
            raise Refusal(
                503, str(exc), reject="queue_full", headers=((b"retry-after", b"1"),)
            ) from None
        except InputError as exc:  # e.g. a group that is not contiguous
            raise Refusal(422, f"samples: {exc}", reject="malformed") from None


def create_app(
    spec: RewardSpec | dict[str, Any] | str,
    *,
    token: str | None = None,
    backend: Backend = "local",
    ray_address: str | None = None,
    workers: int | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_queue_samples: int = DEFAULT_MAX_QUEUE_SAMPLES,
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
) -> RewardApp:
    """The app (for `serve`, or `_http.serve_http`); its engine starts and stops with the
    server.

    Args:
        spec: the reward spec (object, dict, YAML string or path).
        token: bearer token required on every route but `/health` (None: no auth).
        backend, ray_address, workers: as for `Engine`.
        max_body_bytes: larger request bodies get 413.
        max_queue_samples: samples accepted and not yet answered; beyond it, 503.
        body_timeout_s: a body not received within this time of its headers gets 408.

    Raises:
        ConfigError: a timeout that is not a finite number of seconds above 0, or a limit
            below 1.
    """
    check_settings(
        max_body_bytes=max_body_bytes,
        max_queue_samples=max_queue_samples,
        body_timeout_s=body_timeout_s,
    )
    reward_spec = load_spec(spec)
    engine = Engine(
        reward_spec,
        workers=workers,
        backend=backend,
        ray_address=ray_address,
        max_queue_samples=max_queue_samples,
    )
    return RewardApp(
        reward_spec,
        engine,
        token=token,
        max_body_bytes=max_body_bytes,
        max_queue_samples=max_queue_samples,
        body_timeout_s=body_timeout_s,
    )


def _check_local(headers: Headers) -> None:
    """Without a token, answer only programs on this machine, not web pages: a page the user
    opens can post to loopback (its Origin header gives it away) or, after DNS rebinding,
    reach it under its own host name (the Host header gives it away)."""
    origin = host = b""
    for key, value in headers:  # one pass: this runs on every request
        if key == b"origin":
            origin = origin or value
        elif key == b"host":
            host = host or value
    if origin:
        raise Refusal(
            403,
            "a request from a web page (Origin header): without a token this server answers "
            "only programs on this machine",
            reject="forbidden",
        )
    text = host.decode("latin-1")
    name = text[1 : text.find("]")] if text.startswith("[") else text.rsplit(":", 1)[0]
    if text and name not in _LOOPBACK_NAMES and not is_loopback(name):
        raise Refusal(
            421,
            f"host {text!r}: without a token this server answers only requests to localhost "
            "or a loopback address",
            reject="forbidden",
        )


_DIGITS_AS_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 19
"""Nineteen digits in a row (once every digit reads 0): a number orjson might read otherwise
than `json` (an integer past 64 bits becomes a float), or text that merely holds one. A
translation and a search cost a fifth of what a regular expression does."""
_ORJSON_BRACKETS = 500
"""Most brackets in a body orjson reads. orjson 3.8 has no depth limit: about 130,000
nested brackets (a 260 KB body) overflow the C stack and kill the server. `json` refuses
at about 1,000 levels (RecursionError); a body with no more brackets than this is never
that deep, so both read it the same."""


def _loads(body: bytes, brackets: int) -> Any:
    """`json.loads(body)`, read by orjson (about 4x faster) where it reads the same: not in
    a body with more than `_ORJSON_BRACKETS` brackets (`brackets`, counted by the caller),
    not when a number could pass 64 bits, and not what orjson refuses but `json` takes (NaN,
    a lone surrogate, a byte-order mark, UTF-16): `json` then reads it, or refuses it, as
    ever."""
    if brackets <= _ORJSON_BRACKETS and _LONG_NUMBER not in body.translate(_DIGITS_AS_ZEROS):
        with contextlib.suppress(orjson.JSONDecodeError):
            return orjson.loads(body)
    return json.loads(body)


def _parse_json(body: bytes) -> Any:
    too_deep = f"body: JSON nested more than {MAX_NESTING} levels deep"
    # a value nests no deeper than its text has brackets: most bodies skip the depth walk
    brackets = body.count(b"[") + body.count(b"{")
    try:
        data = _loads(body, brackets)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Refusal(422, f"body: not valid JSON: {exc}", reject="malformed") from None
    except RecursionError:  # nested thousands of levels deep
        raise Refusal(422, too_deep, reject="malformed") from None
    if brackets > _BODY_NESTING and nested_deeper_than(data, _BODY_NESTING):
        raise Refusal(422, too_deep, reject="malformed")
    return data


def _small(body: bytes, limit: int = _INLINE_BYTES) -> bool:
    """Whether `body` is read on the event loop: at most `limit` bytes, `_INLINE_VALUES`."""
    if len(body) > limit:
        return False
    return body.count(b",") + body.count(b"[") + body.count(b"{") <= _INLINE_VALUES


async def _off_loop(inline: bool, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)`: here if `inline`, else in a thread (the request is large)."""
    if inline:
        return work(*args)
    return await asyncio.to_thread(work, *args)


def _dump_results(results: list[Result]) -> bytes:
    return f'{{"results":[{",".join(result_json(r) for r in results)}]}}'.encode()


def _score_fields(data: Any) -> tuple[list[Any], bool]:
    """A `/v1/score` body's samples, and whether the spec's `group_transform:` applies (only
    `"group_transform": false` turns it off: a body sets nothing else of the server's)."""
    if isinstance(data, list):
        return data, True
    if not isinstance(data, dict):
        raise Refusal(
            422, 'body: expected {"samples": [...]} or a list of samples', reject="malformed"
        )
    for key in data:
        if key not in _SCORE_KEYS:
            raise Refusal(
                422,
                f"{key}: unknown key. Allowed: {', '.join(_SCORE_KEYS)}",
                reject="malformed",
            )
    if "samples" not in data:
        raise Refusal(422, "samples: field required", reject="malformed")
    if not isinstance(data["samples"], list):
        raise Refusal(422, "samples: must be a list of samples", reject="malformed")
    if data.get("group_transform", False) is not False:
        raise Refusal(
            422,
            "group_transform: only false (results without the spec's group_transform) is taken",
            reject="malformed",
        )
    return data["samples"], "group_transform" not in data


def _describe(exc: ValidationError, prefix: str) -> str:
    parts = []
    for error in exc.errors()[:_MAX_ERRORS]:
        where = ".".join(str(p) for p in (prefix, *error["loc"]) if p != "")
        parts.append(f"{where or 'body'}: {error['msg']}")
    more = exc.error_count() - _MAX_ERRORS
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def serve(
    spec: RewardSpec | dict[str, Any] | str,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    backend: Backend = "local",
    ray_address: str | None = None,
    *,
    workers: int | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_queue_samples: int = DEFAULT_MAX_QUEUE_SAMPLES,
    graceful_timeout_s: float = 60,
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S,
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
    keep_alive_s: float = 5.0,
    log_level: str = "info",
    access_log: bool = False,
) -> None:
    """Run the reward server until SIGINT/SIGTERM, then finish in-flight requests and stop.

    `token` defaults to the `REWARDSMITH_TOKEN` environment variable; without one the server
    only binds a loopback address (`ConfigError` otherwise). A connection must send each
    request's headers (at most 64 KiB) within `header_timeout_s` and its body within
    `body_timeout_s`, and may stay idle between requests for `keep_alive_s`; timeouts must
    be finite and above 0, limits at least 1 (`ConfigError` otherwise).
    """
    token = token or os.environ.get(TOKEN_ENV) or None
    check_bind(host, token)
    check_settings(
        header_timeout_s=header_timeout_s,
        keep_alive_s=keep_alive_s,
        graceful_timeout_s=graceful_timeout_s,
    )
    app = create_app(
        spec,
        token=token,
        backend=backend,
        ray_address=ray_address,
        workers=workers,
        max_body_bytes=max_body_bytes,
        max_queue_samples=max_queue_samples,
        body_timeout_s=body_timeout_s,
    )
    _log_to_stderr(log_level)
    limits = Limits(header_timeout_s, app.body_timeout_s, keep_alive_s, app.max_body_bytes)
    # What is built so far (modules, the spec, the app) lives as long as the server: out of
    # the collector's way, a full collection no longer walks it while requests wait (the
    # garbage among it collected first, or it would be kept for good)
    gc.collect()
    gc.freeze()
    # A request's objects live until it is answered, so with dozens in flight the youngest
    # generation filled every few requests and survivors were walked again and again: a
    # larger one is collected less often, after most of what it holds is freed
    # (BENCHMARKS.md: about 2% of the server's CPU per 1-sample request)
    gc.set_threshold(_YOUNG_GENERATION, *gc.get_threshold()[1:])
    loop = new_loop()
    try:
        received = loop.run_until_complete(
            _until_signalled(app, host, port, limits, graceful_timeout_s, access_log)
        )
    finally:
        loop.close()
    # end by the signal, as a process it stopped would (exit status 128 + its number)
    signal.signal(received, signal.SIG_DFL)
    os.kill(os.getpid(), received)


async def _until_signalled(
    app: RewardApp,
    host: str,
    port: int,
    limits: Limits,
    graceful_timeout_s: float,
    access_log: bool,
) -> int:
    """Serve until SIGINT or SIGTERM (a second one ends the process at once); the signal."""
    loop = asyncio.get_running_loop()
    stop: asyncio.Future[int] = loop.create_future()

    def received(number: int) -> None:
        if stop.done():  # asked twice: no more waiting
            for each in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(each)
            os.kill(os.getpid(), number)
        else:
            stop.set_result(number)

    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, received, number)
    await serve_http(
        app,
        host,
        port,
        limits,
        until=stop,
        graceful_timeout_s=graceful_timeout_s,
        access_log=access_log,
    )
    return stop.result()


def _log_to_stderr(level: str) -> None:
    """The server's log (start, errors, the access log) on stderr at `level`."""
    logger = logging.getLogger("rewardsmith.server")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level.upper())
