"""End to end: a real `rewardsmith serve` process and a real httpx client on loopback."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
from pathlib import Path

import pytest

from rewardsmith import Engine
from rewardsmith.cli import main

from .conftest import TOKEN, Server, served_in_thread

pytest.importorskip("httptools")
httpx = pytest.importorskip("httpx")


def test_health_is_open_and_everything_else_needs_the_token(server: Server) -> None:
    assert httpx.get(f"{server.url}/health").json()["status"] == "ok"
    body = {"samples": [{"completion": "abc"}]}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        refused = httpx.post(f"{server.url}/v1/score", json=body, headers=headers)
        assert refused.status_code == 401, headers
        assert refused.headers["www-authenticate"] == "Bearer"
        assert "bearer token" in refused.json()["detail"]
    assert httpx.post(f"{server.url}/get_reward", json={"query": ["x"]}).status_code == 401
    assert httpx.get(f"{server.url}/metrics").status_code == 401
    # no other routes (no API docs)
    assert httpx.get(f"{server.url}/openapi.json").status_code == 404
    accepted = httpx.post(
        f"{server.url}/v1/score", json=body, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert accepted.status_code == 200
    assert accepted.json()["results"][0]["reward"] == 3.0


def test_results_are_the_engines_results_in_order(client: httpx.Client, spec_path: Path) -> None:
    samples = [
        {"id": "a", "completion": "abcd"},
        {"completion": "raise"},  # id defaults to the position: "2"
        {"id": "c", "completion": "hang"},
        {"id": "d", "completion": [{"role": "assistant", "content": "xy"}], "answer": "z"},
        {"id": "e", "completion": "n/a"},
    ]
    response = client.post("/v1/score", json={"samples": samples})
    assert response.status_code == 200
    got = response.json()["results"]
    with Engine(spec_path, workers=1) as engine:
        local = [
            json.loads(r.model_dump_json(exclude_unset=True))
            for r in engine.score([{**s, "id": s.get("id", "2")} for s in samples])
        ]
    for mine in (got, local):  # the traceback differs only in process-specific paths
        mine[1]["components"]["s"]["detail"].pop("traceback")
    assert got == local
    assert [r["id"] for r in got] == ["a", "2", "c", "d", "e"]
    assert [r["status"] for r in got] == ["ok", "error", "timeout", "ok", "not_applicable"]
    # A bare list is accepted too.
    bare = client.post("/v1/score", json=[{"completion": "xyz"}]).json()["results"]
    assert bare[0]["id"] == "1" and bare[0]["reward"] == 3.0


def test_oversized_body_gets_413(client: httpx.Client) -> None:
    big = {"samples": [{"completion": "x" * 150_000}]}
    response = client.post("/v1/score", json=big)
    assert response.status_code == 413
    assert "100000" in response.json()["detail"]

    def chunks():  # no Content-Length: the limit is enforced while reading
        for _ in range(20):
            yield b" " * 10_000
        yield b"[]"

    streamed = client.post(
        "/v1/score", content=chunks(), headers={"Content-Type": "application/json"}
    )
    assert streamed.status_code == 413
    too_many = client.post("/v1/score", json=[{"completion": "x"}] * 9)  # queue holds 8
    assert too_many.status_code == 413
    assert "samples: 9" in too_many.json()["detail"]


@pytest.mark.parametrize(
    ("body", "route", "named"),
    [
        (
            {"samples": [{"completion": "ok"}, {"prompt": "no completion"}]},
            "/v1/score",
            "samples.1.completion: Field required",
        ),
        ({"samples": [{"completion": 5}]}, "/v1/score", "samples.0.completion"),
        ({"samples": [{"completion": "x", "metadata": 3}]}, "/v1/score", "samples.0.metadata"),
        ({"sample": []}, "/v1/score", "sample: unknown key"),
        ({"samples": "x"}, "/v1/score", "samples: must be a list"),
        ("not json", "/v1/score", "body: not valid JSON"),
        ({"queries": ["x"]}, "/get_reward", "query: Field required"),
        ({"query": ["a", "b"], "prompts": ["a"]}, "/get_reward", "prompts has 1 items"),
        ({"query": [1]}, "/get_reward", "query.0"),
    ],
)
def test_malformed_requests_get_422_naming_the_field(
    client: httpx.Client, body: object, route: str, named: str
) -> None:
    if isinstance(body, str):
        response = client.post(route, content=body, headers={"Content-Type": "application/json"})
    else:
        response = client.post(route, json=body)
    assert response.status_code == 422
    assert named in response.json()["detail"]


def test_a_full_queue_gets_503_then_recovers(server: Server) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}

    async def scenario() -> tuple[httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=30) as http:
            slow = asyncio.create_task(
                http.post("/v1/score", json=[{"completion": "sleep 0.3"}] * 8)
            )
            await asyncio.sleep(0.3)  # the 8 slow samples fill the queue (2 workers: ~1.2 s)
            refused = await http.post("/v1/score", json=[{"completion": "x"}])
            return await slow, refused

    slow, refused = asyncio.run(scenario())
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert "Retry later" in refused.json()["detail"]
    assert slow.status_code == 200
    assert [r["reward"] for r in slow.json()["results"]] == [9.0] * 8
    again = httpx.post(f"{server.url}/v1/score", json=[{"completion": "x"}], headers=headers)
    assert again.status_code == 200


def test_openrlhf_request_is_answered_with_a_float_per_sample(client: httpx.Client) -> None:
    prompt = "<|im_start|>user\nSay hi<|im_end|>\n<|im_start|>assistant\n"
    queries = [
        "<|endoftext|><|endoftext|>" + prompt + "hello<|im_end|>\n<|endoftext|>",  # 5 chars
        prompt + "raise<|im_end|>",  # the reward raises: the failure value, 0.0
        prompt + "n/a<|im_end|>",  # nothing applicable: also 0.0
        "<s>a different prompt</s>abc</s>",  # no prompt/response boundary: invalid, 0.0
    ]
    body = {"query": queries, "prompts": [prompt] * 4, "labels": ["x", "y", None, "z"]}
    response = client.post("/get_reward", json=body)
    assert response.status_code == 200
    answer = response.json()
    assert answer["rewards"] == [5.0, 0.0, 0.0, 0.0]
    assert answer["scores"] == answer["rewards"]
    assert answer["extra_logs"]["s"] == [5.0, 0.0, 0.0, 0.0]
    assert answer["extra_logs"]["s_failed"] == [0.0, 1.0, 0.0, 1.0]
    assert answer["extra_logs"]["failed"] == [0.0, 1.0, 0.0, 1.0]
    assert answer["extra_logs"]["prompt_found"] == [1.0, 1.0, 1.0, 0.0]
    # The oldest OpenRLHF sends only the queries.
    legacy = client.post("/get_reward", json={"query": ["abc<|im_end|>"]})
    assert legacy.json()["rewards"] == [3.0]


def test_metrics_are_exposed(client: httpx.Client) -> None:
    client.post("/v1/score", json=[{"completion": "raise"}, {"completion": "ok"}])
    response = client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    assert 'rewardsmith_requests_total{route="/v1/score",code="200"}' in text
    assert 'rewardsmith_requests_total{route="/v1/score",code="401"}' in text
    assert "# TYPE rewardsmith_request_duration_seconds histogram" in text
    assert 'rewardsmith_request_duration_seconds_bucket{route="/v1/score",le="+Inf"}' in text
    assert 'rewardsmith_component_status_total{component="s",status="error"}' in text
    assert 'rewardsmith_component_status_total{component="s",status="ok"}' in text
    assert "rewardsmith_queue_samples 0" in text
    assert "# TYPE rewardsmith_rejected_total counter" in text


def test_graceful_shutdown_finishes_in_flight_requests(spec_path: Path) -> None:
    server = Server(spec_path, "--workers", "1", "--log-level", "info", token=None)
    answers: list[httpx.Response] = []
    request = threading.Thread(
        target=lambda: answers.append(
            httpx.post(f"{server.url}/v1/score", json=[{"completion": "sleep 0.8"}], timeout=30)
        )
    )
    try:
        request.start()
        time.sleep(0.3)  # the request is being scored
        server.terminate()
        request.join(timeout=30)
        # the server ends by the SIGTERM it caught once shutdown is complete.
        assert server.process.wait(timeout=30) in (0, -signal.SIGTERM)
        log = server.output()
        assert log.rstrip().endswith("INFO: stopped")  # the engine was closed after the request
        (answer,) = answers
        assert answer.status_code == 200
        assert answer.json()["results"][0]["reward"] == len("sleep 0.8")
        with pytest.raises(httpx.TransportError):  # and it no longer listens
            httpx.get(f"{server.url}/health", timeout=2)
    finally:
        server.stop()


def test_refuses_a_public_address_without_a_token(
    spec_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REWARDSMITH_TOKEN", raising=False)
    assert main(["serve", "--spec", str(spec_path), "--host", "0.0.0.0"]) == 2


def test_a_pool_that_breaks_answers_500_and_the_next_request_gets_a_new_one(
    spec_path: Path,
) -> None:
    """The README's promise: should the worker pool fail, the requests in flight get 500 and
    the pool restarts on the next request."""
    from rewardsmith.server import create_app

    app = create_app(spec_path, workers=1)
    with served_in_thread(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        broken = app.engine.front.pool

        def poll(*args: object, **kwargs: object) -> object:
            raise RuntimeError("the pool broke")

        broken.poll = poll  # type: ignore[method-assign]
        answer = client.post("/v1/score", json=[{"completion": "abc"}])
        assert answer.status_code == 500
        assert answer.json() == {"detail": "Internal Server Error"}
        answer = client.post("/v1/score", json=[{"completion": "abcd"}])
        assert answer.status_code == 200, answer.text
        assert [r["reward"] for r in answer.json()["results"]] == [4.0]
        assert app.engine.front.pool is not broken
