"""The reward server: a plain ASGI app over one engine, and `serve` to run it with uvicorn.

Routes:

- `POST /v1/score`: `{"samples": [sample, ...]}` (or the bare list) in the data contract ->
  `{"results": [result, ...]}`, in order, each result as `rewardsmith score` writes it.
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
answer. Each is `{"detail": "..."}`. Below the app, the connection protocol (`_timeouts`)
answers 408 to slow headers, 431 to headers over 64 KiB and 400 to upgrade requests. Every
request is parsed and validated on its own before it reaches the engine, so a bad request
is refused alone; bodies larger than `_INLINE_BYTES` are parsed (and their answers
serialised) in a thread, so one large request never stalls the event loop, the other
requests or `/health`.

Each request is one run of the engine's continuous front (`Engine.ascore`): its samples go to
idle workers as they arrive, alongside those of every other request, and it is answered as
soon as its own last sample is finished. The queue bound is the engine's admission limit. A
client that disconnects first has its run cancelled, so its samples leave the queue (noticed
once its request has waited `_WATCH_AFTER_S`).

No web framework: four routes do not need one, and on a node where the server shares its
cores with the reward workers, every layer a request passes through is CPU the workers lose
(BENCHMARKS.md, "Reward server under load").
"""

from __future__ import annotations

import asyncio
import gc
import hmac
import json
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from .._exceptions import InputError
from ..engine import Engine, QueueFull
from ..engine._engine import Backend
from ..integrations._groups import group_scoped
from ..integrations._remote import spec_fingerprint
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
from ._metrics import CONTENT_TYPE, Metrics
from ._openrlhf import OpenRLHFRequest, openrlhf_response
from ._timeouts import with_connection_limits

__all__ = ["RewardApp", "create_app", "serve"]

_SAMPLES = TypeAdapter(list[Sample])
_SCORE_KEYS = ("samples",)
_MAX_ERRORS = 3
_INLINE_BYTES = 256 * 2**10
"""Bodies up to this size are parsed on the event loop; larger ones in a worker thread."""
_WATCH_AFTER_S = 0.1
"""A request still unanswered after this long starts watching for its client's disconnect."""
_BODY_NESTING = MAX_NESTING + 2
"""Deepest JSON body: a sample's own limit plus the body's list and object around it."""
_JSON = b"application/json"
_LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})
"""The usual loopback host names, known without parsing an address."""

T = TypeVar("T")
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
Answer = tuple[int, bytes, bytes]
"""Status, body, content type."""

_log = logging.getLogger("rewardsmith.server")


class _Refusal(Exception):
    """An error answer, `{"detail": detail}`; `reject` is the reason counted in the
    metrics (None: not counted as a refusal)."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        reject: str | None = None,
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.reject = reject
        self.headers = headers


class _Gone(Exception):
    """The client went away before its answer was ready."""


class RewardApp:
    """The server's ASGI app: the routes above over one engine, which starts with the app's
    lifespan and stops with it. Made by `create_app`."""

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
        self._expected = token.encode() if token else None
        self._max_body_bytes = max_body_bytes
        self._max_queue_samples = max_queue_samples
        self._body_timeout_s = body_timeout_s
        self._fingerprint = spec_fingerprint(spec)
        self._accepting = False
        self._routes: dict[str, tuple[bytes, Callable[[Scope, Receive], Awaitable[Answer]]]] = {
            "/v1/score": (b"POST", self._score),
            "/get_reward": (b"POST", self._get_reward),
            "/health": (b"GET", self._health),
            "/metrics": (b"GET", self._metrics),
        }

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":  # no websocket routes
            await send({"type": "websocket.close", "code": 1000})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        try:
            await asyncio.to_thread(self.engine.start)
        except Exception as exc:
            await send({"type": "lifespan.startup.failed", "message": str(exc)})
            return
        self._accepting = True
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown: the server has finished the requests in flight
        self._accepting = False
        await asyncio.to_thread(self.engine.close)
        await send({"type": "lifespan.shutdown.complete"})

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        path = scope["path"]
        route = self._routes.get(path)
        headers: tuple[tuple[bytes, bytes], ...] = ()
        try:
            if self._expected is None:
                _check_local(scope)
            if route is None:
                raise _Refusal(404, "Not Found")
            if scope["method"].encode() != route[0]:
                raise _Refusal(405, "Method Not Allowed", headers=((b"allow", route[0]),))
            status, body, content_type = await route[1](scope, receive)
        except _Refusal as refusal:
            if refusal.reject is not None:
                self.metrics.reject(refusal.reject)
            status, content_type, headers = refusal.status, _JSON, refusal.headers
            body = json.dumps({"detail": refusal.detail}, separators=(",", ":")).encode()
        except _Gone:  # its samples left the queue unscored; nobody reads an answer
            self.metrics.reject("disconnected")
            self.metrics.observe_request(path, 499, time.perf_counter() - started)
            return
        except Exception:
            _log.exception("%s %s failed", scope["method"], path)
            status, body, content_type = 500, b'{"detail":"Internal Server Error"}', _JSON
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", content_type),
                        (b"content-length", b"%d" % len(body)),
                        *headers,
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
        finally:
            self.metrics.observe_request(
                path if route else "other", status, time.perf_counter() - started
            )

    # -- routes ---------------------------------------------------------------------------

    async def _score(self, scope: Scope, receive: Receive) -> Answer:
        self._authorize(scope)
        body = await self._read_body(scope, receive)
        samples = await _off_loop(len(body), self._parse_samples, body)
        results = await self._run(receive, list(samples), "/v1/score")
        payload = await _off_loop(len(body), _dump_results, results)
        return 200, payload, _JSON

    async def _get_reward(self, scope: Scope, receive: Receive) -> Answer:
        self._authorize(scope)
        if (why := group_scoped(self.spec)) is not None:
            raise _Refusal(
                422,
                f"the spec needs each sample's whole group ({why}), but {NO_GROUPS}",
                reject="malformed",
            )
        body = await self._read_body(scope, receive)
        samples, found = await _off_loop(len(body), self._parse_openrlhf, body)
        results = await self._run(receive, samples, "/get_reward")
        answer = openrlhf_response(self.spec, results, found)
        payload = await _off_loop(len(body), lambda: json.dumps(answer).encode())
        return 200, payload, _JSON

    async def _health(self, scope: Scope, receive: Receive) -> Answer:
        state = {
            "status": "ok" if self._accepting else "stopping",
            "queued_samples": self.engine.admitted,
            "queue_limit": self._max_queue_samples,
            "spec": self._fingerprint,
        }
        return 200, json.dumps(state).encode(), _JSON

    async def _metrics(self, scope: Scope, receive: Receive) -> Answer:
        self._authorize(scope)
        return 200, self.metrics.render().encode(), CONTENT_TYPE.encode()

    # -- steps ----------------------------------------------------------------------------

    def _authorize(self, scope: Scope) -> None:
        if self._expected is None:
            return
        # RFC 7235: the scheme is case-insensitive, one or more spaces before the credentials
        scheme, _, credentials = _header(scope, b"authorization").partition(" ")
        given = credentials.lstrip(" ").encode()
        if scheme.lower() != "bearer" or not hmac.compare_digest(given, self._expected):
            raise _Refusal(
                401,
                "missing or wrong bearer token (header: Authorization: Bearer <token>)",
                headers=((b"www-authenticate", b"Bearer"),),
            )

    async def _read_body(self, scope: Scope, receive: Receive) -> bytes:
        limit = self._max_body_bytes
        declared = _header(scope, b"content-length")
        if declared.isdigit() and int(declared) > limit:
            raise _Refusal(413, f"body: {declared} bytes; the limit is {limit}", reject="too_large")

        async def whole() -> bytes:
            chunks: list[bytes] = []
            size = 0
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise _Gone
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise _Refusal(
                        413, f"body: over the limit of {limit} bytes", reject="too_large"
                    )
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)

        try:
            if sys.version_info >= (3, 11):  # no task per request, as wait_for makes
                async with asyncio.timeout(self._body_timeout_s):
                    return await whole()
            return await asyncio.wait_for(whole(), self._body_timeout_s)
        except asyncio.TimeoutError:
            raise _Refusal(
                408,
                f"body: not received within {self._body_timeout_s:g} s",
                reject="too_slow",
                headers=((b"connection", b"close"),),
            ) from None

    def _parse_samples(self, body: bytes) -> list[Sample]:
        raw = _samples_field(_parse_json(body))
        for position, item in enumerate(raw, start=1):
            if isinstance(item, dict) and "id" not in item:
                item["id"] = str(position)
        try:
            return _SAMPLES.validate_python(raw)
        except ValidationError as exc:
            raise _Refusal(422, _describe(exc, "samples"), reject="malformed") from None

    def _parse_openrlhf(self, body: bytes) -> tuple[list[Sample | InputError], list[bool]]:
        data = _parse_json(body)
        try:
            parsed = OpenRLHFRequest.model_validate(data)
        except ValidationError as exc:
            raise _Refusal(422, _describe(exc, ""), reject="malformed") from None
        return parsed.samples()

    async def _run(
        self, receive: Receive, samples: list[Sample | InputError], route: str
    ) -> list[Result]:
        if len(samples) > self._max_queue_samples:
            raise _Refusal(
                413,
                f"samples: {len(samples)} in one request; this server takes at most "
                f"{self._max_queue_samples} at once",
                reject="too_large",
            )
        if not self._accepting:
            raise _Refusal(
                503,
                "the server is shutting down",
                reject="shutting_down",
                headers=((b"retry-after", b"5"),),
            )
        try:
            results = await _unless_disconnected(receive, self.engine.asubmit(samples))
        except QueueFull as exc:
            raise _Refusal(
                503, str(exc), reject="queue_full", headers=((b"retry-after", b"1"),)
            ) from None
        except InputError as exc:  # e.g. a group that is not contiguous
            raise _Refusal(422, f"samples: {exc}", reject="malformed") from None
        self.metrics.observe_samples(route, results)
        return results


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
    """The app (ASGI); its engine starts with the app's lifespan and stops with it.

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


def _header(scope: Scope, name: bytes) -> str:
    """The first value of a header (lower-case `name`), or "" when absent."""
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")  # type: ignore[no-any-return]
    return ""


def _check_local(scope: Scope) -> None:
    """Without a token, answer only programs on this machine, not web pages: a page the user
    opens can post to loopback (its Origin header gives it away) or, after DNS rebinding,
    reach it under its own host name (the Host header gives it away)."""
    origin = host = b""
    for key, value in scope["headers"]:  # one pass: this runs on every request
        if key == b"origin":
            origin = origin or value
        elif key == b"host":
            host = host or value
    if origin:
        raise _Refusal(
            403,
            "a request from a web page (Origin header): without a token this server answers "
            "only programs on this machine",
            reject="forbidden",
        )
    text = host.decode("latin-1")
    name = text[1 : text.find("]")] if text.startswith("[") else text.rsplit(":", 1)[0]
    if text and name not in _LOOPBACK_NAMES and not is_loopback(name):
        raise _Refusal(
            421,
            f"host {text!r}: without a token this server answers only requests to localhost "
            "or a loopback address",
            reject="forbidden",
        )


def _parse_json(body: bytes) -> Any:
    too_deep = f"body: JSON nested more than {MAX_NESTING} levels deep"
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _Refusal(422, f"body: not valid JSON: {exc}", reject="malformed") from None
    except RecursionError:  # nested thousands of levels deep
        raise _Refusal(422, too_deep, reject="malformed") from None
    # a value nests no deeper than its text has brackets: most bodies skip the walk
    brackets = body.count(b"[") + body.count(b"{")
    if brackets > _BODY_NESTING and nested_deeper_than(data, _BODY_NESTING):
        raise _Refusal(422, too_deep, reject="malformed")
    return data


async def _off_loop(size: int, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)`, in a thread when the request is large."""
    if size <= _INLINE_BYTES:
        return work(*args)
    return await asyncio.to_thread(work, *args)


def _dump_results(results: list[Result]) -> bytes:
    return f'{{"results":[{",".join(result_json(r) for r in results)}]}}'.encode()


async def _unless_disconnected(receive: Receive, work: asyncio.Future[T]) -> T:
    """`work`'s result; if the client disconnects first, `work` is cancelled (the engine
    drops the run's samples not yet scored) and `_Gone` raised. The whole body has been read,
    so the next ASGI message is `http.disconnect`. The watch for it starts only once `work`
    has taken `_WATCH_AFTER_S`: a quick answer never pays for a watching task."""
    loop = asyncio.get_running_loop()
    gone: asyncio.Task[None] | None = None

    async def disconnect() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    def watch() -> None:
        nonlocal gone
        gone = loop.create_task(disconnect())
        gone.add_done_callback(lambda _: work.cancel())

    timer = loop.call_later(_WATCH_AFTER_S, watch)
    try:
        return await work
    except asyncio.CancelledError:
        if gone is not None and gone.done() and not gone.cancelled():
            raise _Gone from None
        raise
    finally:
        timer.cancel()
        if gone is not None:
            gone.cancel()


def _samples_field(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if not isinstance(data, dict):
        raise _Refusal(
            422, 'body: expected {"samples": [...]} or a list of samples', reject="malformed"
        )
    for key in data:
        if key not in _SCORE_KEYS:
            raise _Refusal(
                422,
                f"{key}: unknown key. Allowed: {', '.join(_SCORE_KEYS)}",
                reject="malformed",
            )
    if "samples" not in data:
        raise _Refusal(422, "samples: field required", reject="malformed")
    if not isinstance(data["samples"], list):
        raise _Refusal(422, "samples: must be a list of samples", reject="malformed")
    return data["samples"]  # type: ignore[no-any-return]


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
    import uvicorn

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
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        http=with_connection_limits(header_timeout_s, body_timeout_s),
        ws="none",
        proxy_headers=False,  # nothing here reads the client's address: no header rewrites it
        server_header=False,
        log_level=log_level,
        access_log=access_log,
        lifespan="on",
        timeout_keep_alive=keep_alive_s,  # type: ignore[arg-type]
        timeout_graceful_shutdown=graceful_timeout_s,  # type: ignore[arg-type]
    )
    # What is built so far (modules, the spec, the app) lives as long as the server: out of
    # the collector's way, a full collection no longer walks it while requests wait (the
    # garbage among it collected first, or it would be kept for good)
    gc.collect()
    gc.freeze()
    uvicorn.Server(config).run()
