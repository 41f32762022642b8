"""Which work a request's size sends off the event loop: a body over `_INLINE_BYTES` or of
more than `_INLINE_VALUES` values is read and validated in a thread, and a request of more
than `_INLINE_SAMPLES` samples is validated and answered in one (helper-61: 13,796 tiny
samples in a 256 KiB body took the loop 100 ms to validate; helper-63: one sample with
85,000 empty lists, 250 ms)."""

from __future__ import annotations

import threading
from typing import Any

import httpx

from rewardsmith.server._app import _INLINE_SAMPLES, RewardApp, create_app

from .conftest import served_in_thread

SPEC = {"rewards": {"e": {"type": "exact_match"}}}


def threads_of(app: RewardApp, method: str) -> set[int]:
    """The threads `app.<method>` runs on from now on (`open`: always the loop's)."""
    seen: set[int] = set()
    wrapped = getattr(app, method)

    def spied(*args: Any) -> Any:
        seen.add(threading.get_ident())
        return wrapped(*args)

    setattr(app, method, spied)
    return seen


def test_a_request_of_many_samples_is_validated_off_the_loop() -> None:
    app = create_app(SPEC, workers=1)
    seen = {"loop": threads_of(app, "open"), "validated": threads_of(app, "_validate_samples")}
    with served_in_thread(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        one = [{"completion": "a", "reference": "a"}]
        assert client.post("/v1/score", json=one).json()["results"][0]["reward"] == 1.0
        assert seen["validated"] == seen["loop"]  # a small request: on the loop
        seen["validated"].clear()
        many = [{"completion": "a", "reference": "b"}] * (_INLINE_SAMPLES + 1)
        answer = client.post("/v1/score", json=many).json()["results"]
        assert [r["reward"] for r in answer] == [0.0] * (_INLINE_SAMPLES + 1)
        assert seen["validated"] and not seen["validated"] & seen["loop"]
        seen["validated"].clear()
        wide = [{"completion": "a", "reference": "a", "metadata": {"x": [[]] * 3000}}]
        assert client.post("/v1/score", json=wide).json()["results"][0]["reward"] == 1.0
        assert seen["validated"] and not seen["validated"] & seen["loop"]  # one sample, but
        # 3,000 values: helper-63's body of 85,000 held the loop 250 ms


def test_a_request_the_queue_cannot_hold_is_refused_before_its_samples_are_read() -> None:
    """413, not the 422 its first invalid sample would get: no time goes into samples that
    could never be scored."""
    app = create_app(SPEC, workers=1, max_queue_samples=4)
    with served_in_thread(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        invalid = client.post("/v1/score", json=[{"prompt": "no completion"}] * 5)
        assert invalid.status_code == 413 and "samples: 5" in invalid.json()["detail"]
        queries = client.post("/get_reward", json={"query": ["a"] * 5, "labels": None})
        assert queries.status_code == 413 and "samples: 5" in queries.json()["detail"]
        fits = client.post("/v1/score", json=[{"prompt": "no completion"}] * 4)
        assert fits.status_code == 422


def test_a_large_openrlhf_body_is_cut_into_samples_off_the_loop() -> None:
    """helper-64: one 262 KB query of 87,000 `<s>` took 0.3 s to cut from its prompt."""
    app = create_app(SPEC, workers=1)
    seen = {"loop": threads_of(app, "open"), "cut": threads_of(app, "_validate_openrlhf")}
    with served_in_thread(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        small = {"query": ["Q: 2+2? 4"], "prompts": ["Q: 2+2?"], "labels": ["4"]}
        assert client.post("/get_reward", json=small).json()["rewards"] == [1.0]
        assert seen["cut"] == seen["loop"]
        seen["cut"].clear()
        large = {"query": ["ABCDEFGHIJx" + "<s>" * 87_000], "prompts": ["QQQQABCDEFGHIJ"]}
        assert client.post("/get_reward", json=large).status_code == 200
        assert seen["cut"] and not seen["cut"] & seen["loop"]
