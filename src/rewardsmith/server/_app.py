"""The reward server: a FastAPI app over one engine, and `serve` to run it with uvicorn.

Routes:

- `POST /v1/score`: `{"samples": [sample, ...]}` (or the bare list) in the data contract ->
  `{"results": [result, ...]}`, in order, each result as `rewardsmith score` writes it.
- `POST /get_reward`: OpenRLHF's remote reward contract (see `_openrlhf`).
- `GET /health`: liveness and queue depth (never needs the token).
- `GET /metrics`: Prometheus text.

Refusals, in the order they are checked: 401 (missing or wrong bearer token), 413 (body over
`max_body_bytes`, or more samples than the queue can ever hold), 408 (body not received
within `body_timeout_s`), 422 (malformed JSON or sample, or JSON nested too deep; the message
names the field), 503 (queue full, or shutting down; with Retry-After); 499 (logged only)
for a client that left before its answer. Below the app, the connection protocol
(`_timeouts`) answers 408 to slow headers and 431 to headers over 64 KiB. Every request is
parsed and validated on its own before it reaches the engine, so a bad request is refused
alone; bodies larger than `_INLINE_BYTES` are parsed (and their answers serialised) in a
thread, so one large request never stalls the event loop, the other requests or `/health`.

Each request is one run of the engine's continuous front (`Engine.ascore`): its samples go to
idle workers as they arrive, alongside those of every other request, and it is answered as
soon as its own last sample is finished. The queue bound is the engine's admission limit. A
client that disconnects first has its run cancelled, so its samples leave the queue.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from fastapi import FastAPI, HTTPException, Request, Response
from pydantic import TypeAdapter, ValidationError

from .._exceptions import InputError
from ..engine import Engine, QueueFull
from ..engine._engine import Backend
from ..integrations._common import group_scoped
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
)
from ._metrics import CONTENT_TYPE, Metrics
from ._openrlhf import OpenRLHFRequest, openrlhf_response
from ._timeouts import with_connection_limits

__all__ = ["create_app", "serve"]

_ROUTES = ("/v1/score", "/get_reward", "/health", "/metrics")
_SAMPLES = TypeAdapter(list[Sample])
_SCORE_KEYS = ("samples",)
_MAX_ERRORS = 3
_INLINE_BYTES = 256 * 2**10
"""Bodies up to this size are parsed on the event loop; larger ones in a worker thread."""
_BODY_NESTING = MAX_NESTING + 2
"""Deepest JSON body: a sample's own limit plus the body's list and object around it."""

T = TypeVar("T")

ASGIApp = Callable[..., Awaitable[None]]


class _Observe:
    """ASGI middleware: latency and status code of every HTTP request, per route."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def observed_send(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        finally:
            path = scope.get("path", "")
            route = path if path in _ROUTES else "other"
            self.metrics.observe_request(route, status, time.perf_counter() - started)


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
) -> FastAPI:
    """The app; its engine starts with the app's lifespan and stops with it.

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
    metrics = Metrics()
    engine = Engine(
        reward_spec,
        workers=workers,
        backend=backend,
        ray_address=ray_address,
        max_queue_samples=max_queue_samples,
    )
    metrics.add_gauge(
        "rewardsmith_queue_samples",
        "Samples accepted and not yet answered.",
        lambda: engine.admitted,
    )
    metrics.add_gauge(
        "rewardsmith_queue_limit_samples",
        "Most samples the queue takes.",
        lambda: max_queue_samples,
    )
    expected = token.encode() if token else None
    fingerprint = spec_fingerprint(reward_spec)
    accepting = False

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        nonlocal accepting
        await asyncio.to_thread(engine.start)
        accepting = True
        try:
            yield
        finally:  # uvicorn has finished the in-flight requests by now
            accepting = False
            await asyncio.to_thread(engine.close)

    app = FastAPI(
        title="rewardsmith",
        summary="Rewards for RL post-training, from a reward spec.",
        lifespan=lifespan,
        # The interactive docs cannot send the token: served only when there is none.
        docs_url=None if token else "/docs",
        redoc_url=None,
        openapi_url=None if token else "/openapi.json",
    )
    app.state.engine = engine
    app.state.metrics = metrics
    app.state.spec = reward_spec
    app.add_middleware(_Observe, metrics=metrics)

    def authorize(request: Request) -> None:
        if expected is None:
            return
        # RFC 7235: the scheme is case-insensitive, one or more spaces before the credentials
        scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
        given = credentials.lstrip(" ").encode()
        if scheme.lower() != "bearer" or not hmac.compare_digest(given, expected):
            raise HTTPException(
                401,
                "missing or wrong bearer token (header: Authorization: Bearer <token>)",
                headers={"WWW-Authenticate": "Bearer"},
            )

    async def read_body(request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_body_bytes:
            metrics.reject("too_large")
            raise HTTPException(413, f"body: {declared} bytes; the limit is {max_body_bytes}")
        chunks: list[bytes] = []

        async def receive() -> None:
            size = 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_body_bytes:
                    metrics.reject("too_large")
                    raise HTTPException(413, f"body: over the limit of {max_body_bytes} bytes")
                chunks.append(chunk)

        try:
            await asyncio.wait_for(receive(), body_timeout_s)
        except asyncio.TimeoutError:
            metrics.reject("too_slow")
            raise HTTPException(
                408,
                f"body: not received within {body_timeout_s:g} s",
                headers={"Connection": "close"},
            ) from None
        return b"".join(chunks)

    def parse_json(body: bytes) -> Any:
        too_deep = f"body: JSON nested more than {MAX_NESTING} levels deep"
        try:
            data = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            metrics.reject("malformed")
            raise HTTPException(422, f"body: not valid JSON: {exc}") from None
        except RecursionError:  # nested thousands of levels deep
            metrics.reject("malformed")
            raise HTTPException(422, too_deep) from None
        if nested_deeper_than(data, _BODY_NESTING):
            metrics.reject("malformed")
            raise HTTPException(422, too_deep)
        return data

    async def off_loop(size: int, work: Callable[..., T], *args: Any) -> T:
        """`work(*args)`, in a thread when the request is large."""
        if size <= _INLINE_BYTES:
            return work(*args)
        return await asyncio.to_thread(work, *args)

    def parse_samples(body: bytes) -> list[Sample]:
        data = parse_json(body)
        try:
            raw = _samples_field(data)
        except HTTPException:
            metrics.reject("malformed")
            raise
        for position, item in enumerate(raw, start=1):
            if isinstance(item, dict) and "id" not in item:
                item["id"] = str(position)
        try:
            return _SAMPLES.validate_python(raw)
        except ValidationError as exc:
            metrics.reject("malformed")
            raise HTTPException(422, _describe(exc, "samples")) from None

    def parse_openrlhf(body: bytes) -> tuple[list[Sample | InputError], list[bool]]:
        data = parse_json(body)
        try:
            parsed = OpenRLHFRequest.model_validate(data)
        except ValidationError as exc:
            metrics.reject("malformed")
            raise HTTPException(422, _describe(exc, "")) from None
        return parsed.samples()

    async def run(request: Request, samples: list[Sample | InputError], route: str) -> list[Result]:
        if len(samples) > max_queue_samples:
            metrics.reject("too_large")
            raise HTTPException(
                413,
                f"samples: {len(samples)} in one request; this server takes at most "
                f"{max_queue_samples} at once",
            )
        if not accepting:
            metrics.reject("shutting_down")
            raise HTTPException(503, "the server is shutting down", headers={"Retry-After": "5"})
        try:
            results = await _unless_disconnected(request, engine.ascore(samples))
        except _Disconnected:  # its samples left the queue unscored; nobody reads this
            metrics.reject("disconnected")
            raise HTTPException(499, "the client disconnected before its answer") from None
        except QueueFull as exc:
            metrics.reject("queue_full")
            raise HTTPException(503, str(exc), headers={"Retry-After": "1"}) from None
        except InputError as exc:  # e.g. a group that is not contiguous
            metrics.reject("malformed")
            raise HTTPException(422, f"samples: {exc}") from None
        metrics.observe_samples(route, results)
        return results

    def dump_results(results: list[Result]) -> bytes:
        return f'{{"results":[{",".join(result_json(r) for r in results)}]}}'.encode()

    @app.post("/v1/score", summary="Score samples in the data contract")
    async def score(request: Request) -> Response:
        authorize(request)
        body = await read_body(request)
        samples = await off_loop(len(body), parse_samples, body)
        results = await run(request, list(samples), "/v1/score")
        payload = await off_loop(len(body), dump_results, results)
        return Response(payload, media_type="application/json")

    @app.post("/get_reward", summary="OpenRLHF remote reward")
    async def get_reward(request: Request) -> Response:
        authorize(request)
        if (why := group_scoped(reward_spec)) is not None:
            metrics.reject("malformed")
            raise HTTPException(
                422, f"the spec needs each sample's whole group ({why}), but {NO_GROUPS}"
            )
        body = await read_body(request)
        samples, found = await off_loop(len(body), parse_openrlhf, body)
        results = await run(request, samples, "/get_reward")
        answer = openrlhf_response(reward_spec, results, found)
        payload = await off_loop(len(body), lambda: json.dumps(answer).encode())
        return Response(payload, media_type="application/json")

    @app.get("/health", summary="Liveness and queue depth")
    async def health() -> dict[str, Any]:
        return {
            "status": "ok" if accepting else "stopping",
            "queued_samples": engine.admitted,
            "queue_limit": max_queue_samples,
            "spec": fingerprint,
        }

    @app.get("/metrics", summary="Prometheus metrics")
    async def metrics_route(request: Request) -> Response:
        authorize(request)
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    return app


class _Disconnected(Exception):
    """The client went away before its answer was ready."""


async def _unless_disconnected(request: Request, scoring: Awaitable[T]) -> T:
    """`scoring`'s result; if the client disconnects first, `scoring` is cancelled (the
    engine drops the run's samples not yet scored) and `_Disconnected` raised. The whole
    body has been read, so the next ASGI message is `http.disconnect`."""

    async def disconnect() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    work = asyncio.ensure_future(scoring)
    gone = asyncio.ensure_future(disconnect())
    try:
        await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        abandoned = not work.done()
        if abandoned:
            work.cancel()
    if abandoned:
        raise _Disconnected
    return work.result()


def _samples_field(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if not isinstance(data, dict):
        raise HTTPException(422, 'body: expected {"samples": [...]} or a list of samples')
    for key in data:
        if key not in _SCORE_KEYS:
            raise HTTPException(422, f"{key}: unknown key. Allowed: {', '.join(_SCORE_KEYS)}")
    if "samples" not in data:
        raise HTTPException(422, "samples: field required")
    if not isinstance(data["samples"], list):
        raise HTTPException(422, "samples: must be a list of samples")
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
    graceful_timeout_s: int = 60,
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
    check_settings(header_timeout_s=header_timeout_s, keep_alive_s=keep_alive_s)
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
        log_level=log_level,
        access_log=access_log,
        lifespan="on",
        timeout_keep_alive=keep_alive_s,  # type: ignore[arg-type]
        timeout_graceful_shutdown=graceful_timeout_s,
    )
    uvicorn.Server(config).run()
