"""The server runs each request's answering coroutine without an asyncio Task
(`_http._Answering`). What a Task gives it still holds: a cancelled one gets
`CancelledError` once, where it waits, and may clean up; awaiting anything but a future
fails that request alone (500). Rows from helper-59's red team."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Generator
from typing import Any

import pytest

from rewardsmith.server._http import Answer, Refusal, Request, Respond

from ._raw_http import wait_until
from .conftest import served_in_thread
from .test_pipelined_reads import _connected

httpx = pytest.importorskip("httpx")
pytest.importorskip("httptools")


class _NotAFuture:
    def __await__(self) -> Generator[Any, None, None]:
        yield 42


class _Handler:
    """Routes whose coroutines do what a coroutine in a Task may do."""

    body_timeout_s = 10.0
    max_body_bytes = 2**20

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def start(self) -> None:
        pass

    def stop_accepting(self) -> None:
        pass

    async def close(self) -> None:
        pass

    def answered(self, request: Request, answer: Answer | None) -> None:
        self.events.append((request.path, None if answer is None else answer.status))

    def open(self, request: Request) -> Respond:
        routes = {"/ok": self._ok, "/cleanup": self._cleanup, "/not-a-future": self._not_a_future}
        if request.path not in routes:
            raise Refusal(404, "Not Found")
        return routes[request.path]

    async def _ok(self, body: bytes) -> Answer:
        await asyncio.sleep(0)  # a bare yield: resumed on the loop's next pass
        return Answer(200, b"{}")

    async def _cleanup(self, body: bytes) -> Answer:
        self.events.append("waiting")
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            self.events.append("cancelled")
            await asyncio.sleep(0.01)  # a Task delivers a cancellation once
            self.events.append("cleaned up")
            raise
        return Answer(200, b"{}")

    async def _not_a_future(self, body: bytes) -> Answer:
        await _NotAFuture()
        return Answer(200, b"{}")


def test_a_cancelled_answer_may_await_its_cleanup() -> None:
    """Was (fixed): the cancel flag was never cleared, so every await of the cleanup raised
    CancelledError again."""
    handler = _Handler()
    with served_in_thread(handler) as url:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"POST /cleanup HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            assert wait_until(lambda: "waiting" in handler.events, within_s=10)
        assert wait_until(lambda: ("/cleanup", None) in handler.events, within_s=10)
    assert handler.events == ["waiting", "cancelled", "cleaned up", ("/cleanup", None)]


def test_awaiting_what_is_not_a_future_fails_that_request_alone() -> None:
    """Was (fixed): an exception in a loop callback, the request never answered, and the
    client's leaving raised in `connection_lost`. Now: 500, as a Task gives it ("bad
    yield"), and the connection serves the next request."""
    handler = _Handler()
    with served_in_thread(handler) as url, httpx.Client(base_url=url, timeout=10) as client:
        assert client.post("/not-a-future", content=b"{}").status_code == 500
        assert client.post("/ok", content=b"{}").status_code == 200
    assert handler.events == [("/not-a-future", 500), ("/ok", 200)]


def test_a_client_that_leaves_as_a_bad_await_fails_its_answer_is_counted_gone() -> None:
    """helper-83: `_Answering` hands a coroutine that awaited what is not a future its
    `RuntimeError` on the loop's next pass. A client that left in between (its close read
    first) cancelled an answer already started, so `_gone` left the telling to the
    coroutine; which then failed (500, written to nobody) and told nobody: the app never
    heard that the request ended (no `disconnected`)."""

    async def main() -> list[Any]:
        handler = _Handler()
        connection, _ = await _connected(handler)  # type: ignore[arg-type]
        connection.data_received(
            b"POST /not-a-future HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}"
        )
        asyncio.get_running_loop().call_soon(connection.eof_received)  # after its start
        for _ in range(5):
            await asyncio.sleep(0)
        return handler.events

    assert asyncio.run(main()) == [("/not-a-future", None)]  # before: []
