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
    """Answered or refused, on a kept-alive connection and on closed ones; nor does the
    engine's run of each request (a cycle per run cost the front 13 us a call in
    collections)."""
    from rewardsmith.engine._engine import _Awaited
    from rewardsmith.engine._front import Run
    from rewardsmith.server._http import Request, _Connection, _Exchange

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
                    closing = {"connection": "close"}
                    assert httpx.get(f"{url}/health", headers=closing).status_code == 200
                gc.set_debug(gc.DEBUG_SAVEALL)
                gc.collect()  # the connection still open: its last request is alive
                kinds = (Request, _Connection, _Exchange, Run, _Awaited)
                cycles = sum(isinstance(o, kinds) for o in gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()
    assert cycles == 0


def test_serve_keeps_what_it_built_before_serving_out_of_the_collector(
    spec_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frozen: list[int] = []

    def stop_at_once() -> None:  # the server's loop, asked for once everything is built
        frozen.append(gc.get_freeze_count())
        raise SystemExit

    monkeypatch.setattr(_app, "new_loop", stop_at_once)
    try:
        with pytest.raises(SystemExit):
            _app.serve(spec_path, port=free_port())
    finally:
        gc.unfreeze()
    assert frozen and frozen[0] > 0
