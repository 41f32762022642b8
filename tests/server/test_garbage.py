"""The server and the garbage collector: a full collection pauses every request in flight,
so requests must not leave reference cycles behind, and what lives as long as the server is
kept out of the collector's walks."""

from __future__ import annotations

import gc
from pathlib import Path

import httpx
import pytest

from rewardsmith.server import _app

from .conftest import free_port, served_in_thread


def test_requests_leave_no_reference_cycles_behind(spec_path: Path) -> None:
    """Answered or refused, on a kept-alive connection. (A closed connection leaves one: its
    uvicorn protocol and its last request refer to each other.)"""
    from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

    with served_in_thread(_app.create_app(spec_path, workers=1)) as url:
        gc.collect()
        gc.disable()
        try:
            with httpx.Client(base_url=url, timeout=30) as client:
                for i in range(10):
                    scored = client.post("/v1/score", json=[{"completion": "x" * i}])
                    assert scored.status_code == 200
                    assert client.post("/v1/score", content=b"[{").status_code == 422
                    assert client.get("/nowhere").status_code == 404
                gc.set_debug(gc.DEBUG_SAVEALL)
                gc.collect()  # the connection still open: its last request is alive
                cycles = sum(isinstance(o, RequestResponseCycle) for o in gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    assert cycles == 0


def test_serve_keeps_what_it_built_before_serving_out_of_the_collector(
    spec_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import uvicorn

    frozen: list[int] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self: frozen.append(gc.get_freeze_count()))
    try:
        _app.serve(spec_path, port=free_port())
    finally:
        gc.unfreeze()
    assert frozen and frozen[0] > 0
