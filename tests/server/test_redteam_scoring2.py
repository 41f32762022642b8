"""Red team (rt22, second round) of the fixes to the scoring path and the `REWARDSMITH_URL`
client: `"group_transform": false`, the `X-Rewardsmith-Spec` check on every answer, the
result checks, the URL refusals, no re-send once an answer's head arrived, and the bounded
strip of leading special tokens.

Rows marked `xfail(strict=True)` assert the correct behaviour of an open hole (their reason
says what happens today): they flip loudly when fixed. The others are attacks that fail
today, kept as guards. Timing bounds are liveness bounds, far above an idle answer.
"""

from __future__ import annotations

import json
import random
import re
import socket
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rewardsmith
from rewardsmith._exceptions import ConfigError
from rewardsmith.engine import Engine
from rewardsmith.integrations import _protocol
from rewardsmith.integrations._groups import without_group_transform
from rewardsmith.integrations._remote import SPEC_HEADER, RemoteEngine, spec_fingerprint
from rewardsmith.models import result_json
from rewardsmith.spec import load_spec

from .conftest import SPEC, TOKEN, Server
from .test_redteam_server import FakeServer, reply, result

pytest.importorskip("httptools")
httpx = pytest.importorskip("httpx")

HEADERS = {"Authorization": f"Bearer {TOKEN}"}
HANG_S = 120.0
"""A call not answered by then is hung (a bound, not a speed target)."""
PARITY_SPEC = """\
rewards:
  s: {type: "tests.engine.rewards_for_tests:scripted"}
  vote: {type: majority_vote, cluster: exact}
group_transform: grpo
timeout_s: 5
"""
"""A group-scoped reward beside a per-sample one, with advantages the client leaves out."""
ONE = [{"id": "a", "completion": "x"}]


@pytest.fixture(scope="module")
def parity(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    path = tmp_path_factory.mktemp("redteam-scoring2") / "parity.yaml"
    path.write_text(PARITY_SPEC)
    running = Server(path, "--workers", "1")
    yield running, path
    running.stop()


def ok_results(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
    fake.bodies = [*getattr(fake, "bodies", []), body]
    answer = [result(s["id"], 1.0) for s in body["samples"]]
    reply(conn, 200, json.dumps({"results": answer}).encode())


def fake_engine(behaviour: Any, **options: Any) -> tuple[FakeServer, RemoteEngine]:
    fake = FakeServer(behaviour)
    options = {"deadline_s": 5, "retries": 1, **options}
    return fake, RemoteEngine(fake.url, load_spec(SPEC), token=TOKEN, **options)


# -- holes: the client -----------------------------------------------------------------------


@pytest.mark.parametrize("value", [b"\x89PNG\r\n\x1a\n\xff", object()], ids=["bytes", "object"])
def test_hole_a_sample_the_client_cannot_encode_is_no_exception(value: Any) -> None:
    """README: whatever the server does, the call's samples get results, "never an
    exception"; the in-process engine scores such samples (workers pickle them)."""
    fake, engine = fake_engine(ok_results)
    try:
        got = engine.score(
            [{"id": "a", "completion": "x", "metadata": {"image": value}}, *TWO_MORE]
        )
    finally:
        fake.close()
        engine.close()
    assert [r.id for r in got] == ["a", "b", "c"]
    assert [r.status for r in got[1:]] == ["ok", "ok"]  # the others are not lost with it
    detail = got[0].components["s"].detail
    assert (got[0].status, detail["cause"]) == ("error", "infrastructure")
    assert detail["reason"].startswith("cannot be sent to the reward server: "), detail


TWO_MORE = [{"id": "b", "completion": "yy"}, {"id": "c", "completion": "zzz"}]


def test_hole_a_nan_reference_reaches_the_server_as_nan() -> None:
    fake, engine = fake_engine(ok_results)
    try:
        engine.score([{"id": "a", "completion": "x", "reference": float("nan")}])
    finally:
        fake.close()
        engine.close()
    sent = fake.bodies[0]["samples"][0]  # FakeServer reads bodies with json.loads, as the server
    assert isinstance(sent.get("reference"), float), sent


def test_guard_nan_and_infinity_are_scored_by_the_server_as_in_process(
    tmp_path: Path,
) -> None:
    """The server reads `NaN` and `Infinity` (its JSON reader takes them): exact_match
    matches them as in process, where a null reference would make it `not_applicable`."""
    path = tmp_path / "exact.yaml"
    path.write_text("rewards:\n  m: {type: exact_match}\n")
    spec = load_spec(str(path))
    samples = [
        {"id": f"{n}{ref}", "completion": text, "reference": ref, "metadata": {"x": ref}}
        for n, text in enumerate(["nan", "inf"])
        for ref in [float("nan"), float("inf"), [1.0, float("-inf")]]
    ]
    server = Server(path, "--workers", "1")
    try:
        with RemoteEngine(server.url, spec, token=TOKEN, deadline_s=HANG_S) as remote:
            got = [result_json(r) for r in remote.score(samples)]
    finally:
        server.stop()
    with Engine(spec, workers=1) as local:
        want = [result_json(r) for r in local.score(samples)]
    assert got == want
    assert [text.count('"status":"ok"') for text in got] == [2] * 6


def test_hole_an_endless_answer_body_is_cut_off() -> None:
    sent = {"bytes": 0}
    total = 400 * 2**20

    def huge(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
        head = (
            f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {total}\r\n"
            f"{SPEC_HEADER}: {fake.fingerprint}\r\n\r\n"
        )
        conn.sendall(head.encode())
        chunk = b" " * 2**20
        for _ in range(total // len(chunk)):
            conn.sendall(chunk)
            sent["bytes"] += len(chunk)

    fake, engine = fake_engine(huge, deadline_s=HANG_S)
    try:
        got = engine.score(ONE)
    finally:
        fake.close()
        engine.close()
    assert [r.status for r in got] == ["error"]
    assert sent["bytes"] < 256 * 2**20, sent  # the client stopped reading well before the end


def test_guard_a_gzip_bomb_is_cut_off_as_it_inflates() -> None:
    """The cap counts the body as decoded: 256 KB of gzip that inflate to 256 MiB."""
    bomb = zlib.compressobj(wbits=31)  # gzip
    body = b"".join(bomb.compress(b" " * 2**26) for _ in range(4)) + bomb.flush()

    def gzipped(fake: FakeServer, conn: socket.socket, _: dict[str, Any]) -> None:
        head = (
            f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\n"
            f"content-length: {len(body)}\r\n{SPEC_HEADER}: {fake.fingerprint}\r\n\r\n"
        )
        conn.sendall(head.encode() + body)

    fake, engine = fake_engine(gzipped, deadline_s=HANG_S)
    try:
        got = engine.score(ONE)
    finally:
        fake.close()
        engine.close()
    assert [r.status for r in got] == ["error"]
    assert "more than" in str(got[0].components["s"].detail["reason"]), got[0]


def test_hole_endless_100_continue_does_not_keep_the_attempt_thread() -> None:
    def continues(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
        while not fake.stopped.is_set():
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n" * 400)  # 10 KB
            time.sleep(0.01)

    fake, engine = fake_engine(continues, deadline_s=2)
    try:
        started = time.monotonic()
        got = engine.score(ONE)
        assert time.monotonic() - started < HANG_S  # liveness of the call itself: it holds
        assert [r.status for r in got] == ["error"]
        time.sleep(5)  # > 2 MB of 100 Continue by now
        attempts = [t for t in threading.enumerate() if "_run_call" in t.name]
    finally:
        fake.close()
        engine.close()
    assert attempts == [], attempts


# -- holes: the server ------------------------------------------------------------------------


def test_hole_whitespace_in_one_leading_run_is_bounded_too() -> None:
    """The bound per regular-expression call must bound the characters a call reads, not
    only the tokens: time one `_LEADING` call on what `_leading_tokens_end` hands it."""
    query = "<s>" + " " * 20_000_000 + "x"
    started = time.perf_counter()
    match = _protocol._LEADING.match(query, 0)
    one_call = time.perf_counter() - started
    assert match is not None
    assert _protocol._leading_tokens_end(query) == len(query) - 1
    assert match.end() - match.start() <= 1_000_000, (match.end(), one_call)


# -- guards: group_transform false and parity ------------------------------------------------


def test_guard_remote_results_are_the_in_process_adapters_byte_for_byte(
    parity: tuple[Server, Path],
) -> None:
    """A group-scoped reward (majority_vote) and a group_transform in the server's spec: the
    client's results (written) equal the in-process adapter engine's, groups contiguous or
    not given, with no `advantage`."""
    server, path = parity
    spec = without_group_transform(load_spec(str(path)))
    samples = [
        {"id": "1", "completion": "\\boxed{1}", "group": "a"},
        {"id": "2", "completion": "\\boxed{1}", "group": "a"},
        {"id": "3", "completion": "\\boxed{2}", "group": "a"},
        {"id": "4", "completion": "\\boxed{7}", "group": "b"},
        {"id": "5", "completion": "\\boxed{8}", "group": "b"},
        {"id": "6", "completion": "raise", "group": "c"},
        {"id": "7", "completion": "\\boxed{3}"},
        {"id": "8", "completion": "n/a"},
    ]
    with RemoteEngine(server.url, spec, token=TOKEN, deadline_s=HANG_S) as remote:
        got = [result_json(r) for r in remote.score(samples)]
    with Engine(spec, workers=1) as local:
        want = [result_json(r) for r in local.score(samples)]
    assert got == want
    assert all('"advantage"' not in text for text in got)


@pytest.mark.parametrize("value", [True, None, "false", 0, 1, [], {}])
def test_guard_group_transform_takes_only_false(parity: tuple[Server, Path], value: Any) -> None:
    server, _ = parity
    body = {"samples": [{"completion": "x", "group": "g"}], "group_transform": value}
    answer = httpx.post(server.url + "/v1/score", json=body, headers=HEADERS, timeout=HANG_S)
    assert answer.status_code == 422, answer.text
    assert "group_transform" in answer.json()["detail"]


def test_guard_false_drops_advantages_and_absent_keeps_them(parity: tuple[Server, Path]) -> None:
    server, _ = parity
    samples = [{"completion": "x", "group": "g"}, {"completion": "yy", "group": "g"}]
    url = server.url + "/v1/score"
    off = httpx.post(
        url, json={"samples": samples, "group_transform": False}, headers=HEADERS, timeout=HANG_S
    )
    on = httpx.post(url, json={"samples": samples}, headers=HEADERS, timeout=HANG_S)
    fingerprint = spec_fingerprint(load_spec(PARITY_SPEC))
    assert off.headers[SPEC_HEADER] == on.headers[SPEC_HEADER] == fingerprint
    assert [r.get("advantage") for r in off.json()["results"]] == [None, None]
    assert all("advantage" in r for r in on.json()["results"]), on.text
    # non-contiguous groups: the majority vote still needs them whole, with or without
    broken = [{"completion": "x", "group": "g"}, {"completion": "y", "group": "h"}] * 2
    again = httpx.post(
        url, json={"samples": broken, "group_transform": False}, headers=HEADERS, timeout=HANG_S
    )
    assert again.status_code == 422, again.text


# -- guards: the fingerprint ------------------------------------------------------------------

BASE = """\
rewards:
  s: {type: "tests.engine.rewards_for_tests:scripted", weight: 1}
  c:
    type: "tests.engine.rewards_for_tests:constant"
    transform: {type: clip, min: 0, max: 1}
    value: 0.5
timeout_s: 1
"""  # c is clipped: a gate needs a known range (the only_if row)
CHANGES = {
    "weight": BASE.replace("weight: 1}", "weight: 2}"),
    "reward param": BASE.replace("value: 0.5", "value: 0.25"),
    "on_error": BASE + "on_error: -1\n",
    "veto": BASE.replace("weight: 1}", "weight: 1, veto: true}") + "veto_value: -3\n",
    "veto_value": BASE.replace("weight: 1}", "weight: 1, veto: true}") + "veto_value: -4\n",
    "transform": BASE.replace("weight: 1}", "weight: 1, transform: {type: clip, max: 0.5}}"),
    "combine": BASE + "combine: min\n",
    "transform params": BASE.replace(
        "weight: 1}", "weight: 1, transform: {type: clip, max: 0.25}}"
    ),
    "timeout_s": BASE.replace("timeout_s: 1", "timeout_s: 2"),
    "only_if": BASE.replace("value: 0.5", "value: 0.5\n    only_if: s"),
    "scope": BASE.replace("weight: 1}", "weight: 1, scope: turns}"),
    "order": "rewards:\n"  # c's four lines, then s's
    + "".join(BASE.splitlines(keepends=True)[2:6] + BASE.splitlines(keepends=True)[1:2])
    + "timeout_s: 1\n",
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_guard_the_fingerprint_covers_what_changes_results(change: str) -> None:
    before = {"veto_value": CHANGES["veto"], "transform params": CHANGES["transform"]}.get(
        change, BASE
    )
    assert spec_fingerprint(load_spec(CHANGES[change])) != spec_fingerprint(load_spec(before))


def test_guard_the_fingerprint_covers_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server of another rewardsmith version is refused as one of another spec."""
    before = spec_fingerprint(load_spec(BASE))
    monkeypatch.setattr(rewardsmith, "__version__", rewardsmith.__version__ + ".post1")
    assert spec_fingerprint(load_spec(BASE)) != before


def test_guard_only_group_transform_leaves_the_fingerprint() -> None:
    base = load_spec(BASE)
    grouped = load_spec(BASE + "group_transform: {type: grpo, std: unbiased}\n")
    assert spec_fingerprint(grouped) == spec_fingerprint(base)
    assert spec_fingerprint(without_group_transform(grouped)) == spec_fingerprint(base)


# -- guards: URLs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1]:8000",
        "http://localhost:8000",
        "http://127.0.0.1:8000/api",
        "http://127.0.0.1:8000/api/",
        "https://rewards.example:8443",
        "http://127.0.0.1:8000/",
        "HTTP://127.0.0.1:8000",
        "http://reward_server:8000",
        "http://127.0.0.1",
        "http://[fe80::1%25lo]:8000",
    ],
)
def test_guard_a_valid_url_is_taken(url: str) -> None:
    RemoteEngine(url, load_spec(SPEC), token=TOKEN)


@pytest.mark.parametrize("prefix", ["/api", "/api/"])
def test_guard_a_path_prefix_and_an_upper_case_scheme_reach_the_server(prefix: str) -> None:
    paths: list[str] = []

    class Recording(FakeServer):
        def _serve(self, conn: socket.socket) -> None:
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, rest = data.split(b"\r\n\r\n", 1)
                path = head.split(b" ")[1].decode()
                paths.append(path)
                length = re.search(rb"(?i)content-length: *(\d+)", head)
                size = int(length.group(1)) if length else 0
                while len(rest) < size:
                    rest += conn.recv(65536)
                if path.endswith("/health"):
                    reply(conn, 200, self.health)
                else:
                    samples = json.loads(rest)["samples"]
                    answer = [result(s["id"], 1.0) for s in samples]
                    reply(conn, 200, json.dumps({"results": answer}).encode())

    fake = Recording(ok_results)
    url = fake.url.replace("http://", "HTTP://") + prefix
    try:
        with RemoteEngine(url, load_spec(SPEC), token=TOKEN, deadline_s=HANG_S) as engine:
            got = engine.score(ONE)
    finally:
        fake.close()
    assert [r.status for r in got] == ["ok"]
    assert paths == ["/api/health", "/api/v1/score"]


@pytest.mark.parametrize("url", ["http://[::]:8000", "http://0.0.0.0", "http://:8000"])
def test_guard_a_bind_address_or_no_host_is_refused(url: str) -> None:
    with pytest.raises(ConfigError, match="REWARDSMITH_URL"):
        RemoteEngine(url, load_spec(SPEC), token=TOKEN)


# -- guards: re-sends and deadlines -----------------------------------------------------------


def test_guard_503_is_retried_and_the_results_taken() -> None:
    def busy_once(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
        fake.posts = getattr(fake, "posts", 0) + 1
        if fake.posts == 1:
            reply(conn, 503, b'{"detail":"queue full"}')
        else:
            ok_results(fake, conn, body)

    fake, engine = fake_engine(busy_once, deadline_s=HANG_S, retries=3, backoff_s=0.01)
    try:
        got = engine.score(ONE)
    finally:
        fake.close()
        engine.close()
    assert [r.status for r in got] == ["ok"]
    assert fake.posts == 2


def test_guard_a_200_head_with_another_fingerprint_is_a_config_error() -> None:
    def other(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
        answer = json.dumps({"results": [result(s["id"], 1.0) for s in body["samples"]]})
        head = (
            f"HTTP/1.1 200 OK\r\ncontent-length: {len(answer)}\r\n"
            f"{SPEC_HEADER}: {fake.fingerprint[::-1]}\r\n\r\n"
        )
        conn.sendall(head.encode() + answer.encode())

    fake, engine = fake_engine(other)
    try:
        with pytest.raises(ConfigError, match="another spec"):
            engine.score(ONE)
    finally:
        fake.close()
        engine.close()


def test_guard_a_duplicated_fingerprint_header_is_not_taken() -> None:
    """Two headers (one right, one wrong) read as "a, b": never taken as the right one."""

    def twice(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
        answer = json.dumps({"results": [result(s["id"], 1.0) for s in body["samples"]]})
        head = (
            f"HTTP/1.1 200 OK\r\ncontent-length: {len(answer)}\r\n"
            f"{SPEC_HEADER}: {fake.fingerprint}\r\n{SPEC_HEADER}: 0000\r\n\r\n"
        )
        conn.sendall(head.encode() + answer.encode())

    fake, engine = fake_engine(twice)
    try:
        try:
            got: Any = [r.status for r in engine.score(ONE)]
        except ConfigError as exc:
            got = exc
    finally:
        fake.close()
        engine.close()
    assert isinstance(got, ConfigError) or got == ["error"], got


@pytest.mark.parametrize("head", [b"", b"HTTP/1.1 200 OK\r\n"], ids=["nothing", "status line"])
def test_guard_a_server_that_stalls_gets_error_results_by_the_deadline(head: bytes) -> None:
    def stall(fake: FakeServer, conn: socket.socket, body: dict[str, Any]) -> None:
        conn.sendall(head)
        while not fake.stopped.is_set():
            time.sleep(0.05)
            conn.sendall(b"X-A: b\r\n" if head else b"")

    fake, engine = fake_engine(stall, deadline_s=2)
    try:
        started = time.monotonic()
        got = engine.score(ONE)
        took = time.monotonic() - started
    finally:
        fake.close()
        engine.close()
    assert [r.status for r in got] == ["error"]
    assert took < HANG_S


# -- guards: the bounded strip ----------------------------------------------------------------

_REFERENCE = re.compile(rf"\A(?:\s*(?:{_protocol._HEADER}|{_protocol._TOKEN}))*\s*")
"""The one-call regex the bounded strip replaced."""
PIECES = [
    "<s>",
    "</s>",
    "<|im_end|>",
    "<|im_start|>assistant\n",
    "<|im_start|>user\n",
    "<|start_header_id|>assistant<|end_header_id|>\n\n",
    "<|assistant|>",
    "<｜begin▁of▁sentence｜>",
    "<｜Assistant｜>",
    "<｜ a b ｜>",
    "[/INST]",
    "<pad>",
    " ",
    "\n",
    "\u3000",
    "\x1c",
    "<|",
    "｜>",
    "<｜",
    "x",
    "é",
]


def _random_text(rng: random.Random, tokens: int) -> str:
    lead = [rng.choice(PIECES[:12]) for _ in range(tokens)]
    tail = [rng.choice(PIECES) for _ in range(rng.randrange(0, 6))]
    return "".join(lead + tail)


def test_guard_the_bounded_strip_ends_where_one_call_did_at_the_real_boundary() -> None:
    rng = random.Random(22)
    run = _protocol._LEADING_RUN
    for tokens in [run - 2, run - 1, run, run + 1, run + 2, 2 * run, 2 * run + 1]:
        for _ in range(6):
            text = _random_text(rng, tokens)
            want = _REFERENCE.match(text)
            assert want is not None
            assert _protocol._leading_tokens_end(text) == want.end(), (tokens, text[-80:])


def test_guard_the_bounded_strip_ends_where_one_call_did_with_a_tiny_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same algorithm with 3 tokens per call: every boundary is crossed many times."""
    tiny = re.compile(rf"(?:\s*(?:{_protocol._HEADER}|{_protocol._TOKEN})){{0,3}}\s*")
    monkeypatch.setattr(_protocol, "_LEADING", tiny)
    rng = random.Random(2222)
    for _ in range(3000):
        text = _random_text(rng, rng.randrange(0, 14))
        want = _REFERENCE.match(text)
        assert want is not None
        assert _protocol._leading_tokens_end(text) == want.end(), repr(text)


@pytest.mark.parametrize("spaces", [1, 2])
def test_guard_the_bounded_strip_ends_where_one_call_did_with_tiny_whitespace_runs(
    monkeypatch: pytest.MonkeyPatch, spaces: int
) -> None:
    """`_LEADING` as made, with 3 tokens and 1 or 2 whitespace characters in a row per
    call: calls end inside whitespace runs (Llama 3's header's too) and resume there."""
    monkeypatch.setattr(_protocol, "_LEADING", _protocol._leading(3, spaces))
    rng = random.Random(2200 + spaces)
    for _ in range(3000):
        text = _random_text(rng, rng.randrange(0, 14))
        want = _REFERENCE.match(text)
        assert want is not None
        assert _protocol._leading_tokens_end(text) == want.end(), repr(text)


def test_guard_the_bounded_strip_is_linear() -> None:
    """Ten times the tokens take about ten times as long, never a hundred."""

    def took(n: int) -> float:
        text = "<s> \n" * n + "<｜Assistant｜>" * n + "x"
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            _protocol.strip_special_tokens(text)
            best = min(best, time.perf_counter() - started)
        return best

    small, large = took(20_000), took(200_000)
    assert large < 40 * max(small, 1e-4), (small, large)
