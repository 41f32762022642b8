"""Red team (rt22) of the reward server's scoring path and the `REWARDSMITH_URL` client.

The HTTP framing had its rounds; these rows attack what is scored and what a trainer gets
back: a hostile client or a policy whose text reaches `rewardsmith serve`, a misconfigured
trainer, and (for the client) a broken or restarted server. Real servers run on loopback
(`conftest.Server`); the client's broken servers are `test_redteam_server.FakeServer`.

Rows marked `xfail(strict=True)` assert the correct behaviour of an open hole (their reason
says what happens today): they flip loudly when fixed. The others are attacks that fail
today, kept as guards. The one timing row (the stall) asserts a bound far above an idle
server's answer time and far below what the attack achieves.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rewardsmith._exceptions import ConfigError
from rewardsmith.integrations._groups import without_group_transform
from rewardsmith.integrations._remote import RemoteEngine
from rewardsmith.spec import load_spec

from . import conftest
from .conftest import SPEC, TOKEN, Server, Servers
from .test_redteam_server import FakeServer, exchange, reply

pytest.importorskip("httptools")
httpx = pytest.importorskip("httpx")

HEADERS = {"Authorization": f"Bearer {TOKEN}"}
HANG_S = 120.0
"""A request not answered by then is hung (a bound, not a speed target)."""
GROUPED_SPEC = SPEC + "group_transform: grpo\n"
"""The tests' scripted reward (score = completion length) with advantages."""
DOUBLED_SPEC = SPEC.replace('scripted"}', 'scripted", weight: 2}')
"""The same component, weighted 2: every total doubles."""
STALL_BOUND_S = 3.0
"""Longest `/health` may wait while a large request is read (idle: about 0.1 s here; the
attack below held it 6.5 s when this file was written)."""


class World(Servers):
    """Servers started as rows need them, stopped after the module."""

    def spec(self, name: str, text: str) -> Path:
        path = self.tmp / f"{name}.yaml"
        path.write_text(text)
        return path

    def server(self, name: str = "plain") -> Server:
        """`plain`: the scripted reward, default body limit, keep-alive 1 s; `grouped`: the
        same with `group_transform: grpo`. Token auth, one worker."""
        if name not in self.started:
            text = GROUPED_SPEC if name == "grouped" else SPEC
            self.started[name] = Server(
                self.spec(name, text), "--workers", "1", "--keep-alive", "1"
            )
        return self.started[name]

    def post(self, path: str, body: Any, name: str = "plain", **headers: str) -> Any:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        sent = {**HEADERS, "Content-Type": "application/json", **headers}
        return httpx.post(
            self.server(name).url + path, content=content, headers=sent, timeout=HANG_S
        )


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    made = World(tmp_path_factory.mktemp("redteam-scoring"))
    yield made
    made.close()


def triples(results: Any) -> list[tuple[str, str, float | None]]:
    return [(r.id, r.status, r.reward) for r in results]


def fake_engine(behaviour: Any, **options: Any) -> tuple[FakeServer, RemoteEngine]:
    fake = FakeServer(behaviour)
    return fake, RemoteEngine(fake.url, load_spec(SPEC), token=TOKEN, **options)


TWO = [{"id": "a", "completion": "x"}, {"id": "b", "completion": "yy"}]


# -- holes: the client takes what a server says ---------------------------------------------


def test_hole_a_server_with_a_group_transform_scores_otherwise_than_in_process(
    world: World,
) -> None:
    """The adapter strips `group_transform:` (advantages are the trainer's job) and the
    fingerprint ignores it, so a server started with the very spec file the trainer reads
    passes the check, then scores with group work the in-process engine never does."""
    server = world.server("grouped")
    spec = without_group_transform(load_spec(str(world.spec("grouped", GROUPED_SPEC))))
    with RemoteEngine(server.url, spec, token=TOKEN, deadline_s=60) as engine:
        samples = [
            {"id": "1", "completion": "x", "group": "a"},
            {"id": "2", "completion": "yy", "group": "b"},
            {"id": "3", "completion": "zzz", "group": "a"},
        ]
        got = engine.score(samples)
        assert triples(got) == [("1", "ok", 1.0), ("2", "ok", 2.0), ("3", "ok", 3.0)]
        contiguous = engine.score([{"id": "1", "completion": "x", "group": "a"}] * 2)
        assert [r.advantage for r in contiguous] == [None, None]


def test_hole_a_server_restarted_with_another_spec_is_refused(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node's server is restarted mid-training with an edited spec file: the trainer's
    next call must not take the new spec's rewards as its own."""
    port = conftest.free_port()
    monkeypatch.setattr(conftest, "free_port", lambda: port)
    first = Server(world.spec("before", SPEC), "--workers", "1")
    engine = RemoteEngine(first.url, load_spec(SPEC), token=TOKEN, deadline_s=60)
    try:
        assert triples(engine.score(TWO)) == [("a", "ok", 1.0), ("b", "ok", 2.0)]
        first.stop()
        second = Server(world.spec("after", DOUBLED_SPEC), "--workers", "1")
        try:
            try:
                got: Any = triples(engine.score(TWO))
            except ConfigError as exc:
                got = exc
        finally:
            second.stop()
    finally:
        first.stop()
        engine.close()
    assert DOUBLED_SPEC != SPEC
    assert isinstance(got, ConfigError) or [s for _, s, _ in got] == ["error", "error"], got


def foreign_components(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
    """Results for exactly the call's ids, in order, scored by another spec (component
    `zz`, not the trainer's `s`): a server restarted with another spec, a proxy's cache."""
    answer = [
        {
            "id": s["id"],
            "reward": 9.0,
            "status": "ok",
            "components": {"zz": {"score": 9.0, "status": "ok"}},
        }
        for s in body["samples"]
    ]
    reply(conn, 200, json.dumps({"results": answer}).encode())


def test_hole_results_without_the_specs_components_are_errors_not_a_keyerror(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """README: an answer of "another shape" gives the call's samples `error` results,
    "never an exception"."""
    from rewardsmith.integrations import verl

    fake = FakeServer(foreign_components)
    monkeypatch.setenv("REWARDSMITH_URL", fake.url)
    monkeypatch.setenv("REWARDSMITH_TOKEN", TOKEN)
    try:
        out = verl.compute_score("d", "xx", None, {}, spec=SPEC)
    finally:
        fake.close()
    assert out["failed"] == 1.0, out
    assert out["score"] == 0.0, out


def nan_rewards(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
    nan = float("nan")
    answer = [
        {"id": s["id"], "reward": nan, "status": "ok", "components": {"s": {"score": nan}}}
        for s in body["samples"]
    ]
    reply(conn, 200, json.dumps({"results": answer}).encode())


def test_hole_a_nan_reward_from_the_server_is_an_error() -> None:
    fake, engine = fake_engine(nan_rewards, deadline_s=5, retries=1)
    try:
        got = engine.score(TWO)
    finally:
        fake.close()
        engine.close()
    assert [r.status for r in got] == ["error", "error"], triples(got)


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1",
        "http://127.0.0.1:80 00",
        "127.0.0.1:8000",
        "ftp://127.0.0.1:8000",
        "http://0.0.0.0:8000",
    ],
)
def test_hole_a_malformed_url_is_a_config_error(url: str) -> None:
    """A misconfigured trainer (`REWARDSMITH_URL` with a typo, no scheme, another scheme, a
    bind-all address): README says the client raises nothing but `ConfigError`, and that
    one as the engine is made (the adapter's first call)."""
    with pytest.raises(ConfigError, match="REWARDSMITH_URL"):
        RemoteEngine(url, load_spec(SPEC), token=TOKEN, deadline_s=5, retries=1)


def truncated_200(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
    """A 200 whose body is cut (the server scored, then its connection broke)."""
    fake.posts = getattr(fake, "posts", 0) + 1
    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n")
    conn.sendall(b'\r\n{"results": [')
    conn.shutdown(socket.SHUT_RDWR)
    raise OSError("cut")


def test_hole_a_request_the_server_answered_is_not_sent_again() -> None:
    fake, engine = fake_engine(truncated_200, deadline_s=10, retries=3, backoff_s=0.01)
    try:
        got = engine.score(TWO)
    finally:
        fake.close()
        engine.close()
    assert [r.status for r in got] == ["error", "error"]
    assert getattr(fake, "posts", 0) == 1


# -- holes: the server ----------------------------------------------------------------------


def longest_health_wait(url: str, during: Any) -> tuple[Any, float]:
    """`during()`'s value, and the longest `/health` took meanwhile (asked every 50 ms)."""
    waits: list[float] = []
    stop = threading.Event()

    def ask() -> None:
        while not stop.is_set():
            started = time.monotonic()
            httpx.get(url + "/health", timeout=HANG_S)
            waits.append(time.monotonic() - started)
            time.sleep(0.05)

    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    time.sleep(0.5)
    try:
        value = during()
    finally:
        stop.set()
        asker.join(HANG_S)
    return value, max(waits)


def test_hole_special_tokens_in_a_get_reward_query_do_not_stall_health(world: World) -> None:
    """README: a large request "never holds up the others or `/health`"."""
    server = world.server()
    query = "<s>" * (20 * 2**20) + "x"
    body = json.dumps({"query": [query]}).encode()
    answer, waited = longest_health_wait(server.url, lambda: world.post("/get_reward", body))
    assert answer.status_code == 200, answer.text[:200]
    assert answer.json()["rewards"] == [1.0]
    assert waited < STALL_BOUND_S, waited


# -- guards ---------------------------------------------------------------------------------


def test_guard_a_body_cannot_set_the_servers_config(world: World) -> None:
    """Spec fields beside the samples (or inside one) change nothing server-side: refused on
    `/v1/score`, ignored on `/get_reward`, kept as metadata inside a sample."""
    raised = [{"completion": "raise"}]
    for extra in ({"spec": {"rewards": {}}}, {"on_error": 5}, {"timeout_s": 1000}):
        answer = world.post("/v1/score", {"samples": raised, **extra})
        assert answer.status_code == 422, answer.text
        assert next(iter(extra)) in answer.json()["detail"]
    inside = world.post("/v1/score", {"samples": [{"completion": "raise", "on_error": 5}]})
    assert [(r["status"], r["reward"]) for r in inside.json()["results"]] == [("error", None)]
    reward = world.post("/get_reward", {"query": ["raise"], "on_error": 5, "spec": "x"}).json()
    assert reward["rewards"] == [0.0]
    assert reward["extra_logs"]["failed"] == [1.0]


def test_guard_the_token_only_in_the_authorization_header(world: World) -> None:
    """The token anywhere else (query string, another header, a folded line) is no token;
    in `Authorization` the field name and scheme are case-insensitive."""
    server = world.server()
    body = json.dumps({"samples": [{"completion": "x"}]}).encode()
    elsewhere = [
        (f"/v1/score?token={TOKEN}", {}),
        (f"/v1/score?access_token={TOKEN}", {}),
        ("/v1/score", {"Proxy-Authorization": f"Bearer {TOKEN}"}),
        ("/v1/score", {"X-Api-Key": TOKEN}),
        ("/v1/score", {"Authorization": f"Bearer {TOKEN} {TOKEN}"}),
        ("/v1/score", {"Authorization": f"Bearer {TOKEN[:4]}"}),
    ]
    for path, headers in elsewhere:
        answer = httpx.post(server.url + path, content=body, headers=headers)
        assert answer.status_code in (401, 404), (path, headers)
        assert "results" not in answer.text
    length = b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
    folded = b"POST /v1/score HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer\r\n " + TOKEN.encode()
    assert not exchange(server.port, folded + b"\r\n" + length + body).startswith(b"HTTP/1.1 200")
    shouted = b"POST /v1/score HTTP/1.1\r\nHost: x\r\nAUTHORIZATION: bEaReR   " + TOKEN.encode()
    assert exchange(server.port, shouted + b"\r\n" + length + body).startswith(b"HTTP/1.1 200")


def test_guard_ids_and_order_on_the_threaded_path(world: World) -> None:
    """70 samples (validated and answered in a thread), every other one without an id: each
    result in place, ids given kept and the others their 1-based position."""
    samples: list[dict[str, Any]] = []
    for position in range(1, 71):
        length = (position * 37) % 11 + 1
        sample: dict[str, Any] = {"completion": "x" * length}
        if position % 2:
            sample["id"] = f"given-{71 - position}"
        samples.append(sample)
    answer = world.post("/v1/score", {"samples": samples})
    assert answer.status_code == 200, answer.text[:200]
    got = [(r["id"], r["reward"]) for r in answer.json()["results"]]
    expected = [
        (s.get("id", str(p)), float(len(s["completion"]))) for p, s in enumerate(samples, 1)
    ]
    assert got == expected


def test_guard_metrics_hold_no_sample_or_path_text(world: World) -> None:
    secret = "SECRET7731"
    world.post("/v1/score", {"samples": [{"id": secret, "completion": secret}]})
    world.post("/get_reward", {"query": [secret], "labels": [secret]})
    httpx.get(world.server().url + f"/{secret}", headers=HEADERS)
    metrics = httpx.get(world.server().url + "/metrics", headers=HEADERS)
    assert metrics.status_code == 200
    assert "rewardsmith_samples_total" in metrics.text
    assert secret not in metrics.text
    assert httpx.get(world.server().url + "/metrics").status_code == 401


def test_guard_a_stale_keep_alive_connection_is_not_an_error(world: World) -> None:
    """The pooled connection is closed by the server's keep-alive (1 s) between two calls:
    the second call reconnects; its samples are scored, never `error`."""
    server = world.server()
    with RemoteEngine(server.url, load_spec(SPEC), token=TOKEN, deadline_s=60) as engine:
        assert triples(engine.score(TWO)) == [("a", "ok", 1.0), ("b", "ok", 2.0)]
        time.sleep(2.5)
        assert triples(engine.score(TWO)) == [("a", "ok", 1.0), ("b", "ok", 2.0)]


def test_guard_group_work_never_crosses_requests(world: World) -> None:
    """Two requests at once, both with group "g": each group is its own request's samples
    (advantages -1, +1 in each), never one group of four."""
    url = world.server("grouped").url + "/v1/score"

    async def both() -> list[Any]:
        async with httpx.AsyncClient(headers=HEADERS, timeout=HANG_S) as http:
            calls = [
                http.post(
                    url,
                    json={
                        "samples": [
                            {"id": "1", "completion": "x" * n, "group": "g"},
                            {"id": "2", "completion": "x" * (n + 5), "group": "g"},
                        ]
                    },
                )
                for n in (1, 100)
            ]
            return await asyncio.gather(*calls)

    for answer in asyncio.run(both()):
        assert answer.status_code == 200, answer.text
        advantages = [r["advantage"] for r in answer.json()["results"]]
        assert advantages[0] == pytest.approx(-1, abs=1e-3)
        assert advantages[1] == pytest.approx(1, abs=1e-3)


def test_guard_a_lone_surrogate_id_is_invalid_in_place_through_the_client(world: World) -> None:
    """A sample whose id the data contract refuses is `invalid` in its place, and its
    neighbours are still scored (the server would refuse the whole request: 422)."""
    with RemoteEngine(world.server().url, load_spec(SPEC), token=TOKEN, deadline_s=60) as engine:
        got = engine.score(
            [{"id": "a", "completion": "x"}, {"id": "\ud800", "completion": "yy"}, TWO[1]]
        )
    assert triples(got) == [("a", "ok", 1.0), ("\ud800", "invalid", None), ("b", "ok", 2.0)]
