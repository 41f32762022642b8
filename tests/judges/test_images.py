"""Images in the contract reach judges unchanged.

No vision model runs on this machine (the embedded SmolLM2 and the llama.cpp server started
by the tests read text only), so the exact request body is checked at a real HTTP server
started here on loopback: a stand-in for a vision server (vLLM, SGLang, OpenAI), answering
like one. The real llama.cpp server is then sent the same request, and its refusal of image
parts comes back as status `error`, never as a score.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rewardsmith import Engine
from rewardsmith.models import Sample

# a 1x1 PNG
PIXEL = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQ"
    "DwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
IMAGE = {"type": "image_url", "image_url": {"url": PIXEL, "detail": "low"}}
OTHER = {"type": "image_url", "image_url": {"url": "https://example.invalid/cat.png"}}


class VisionStandIn:
    """Records each chat-completion body; answers YES like an OpenAI-compatible server."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.url = ""


@pytest.fixture
def vision_server() -> Iterator[VisionStandIn]:
    state = VisionStandIn()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.bodies.append(body)
            reply = {
                "choices": [{"message": {"role": "assistant", "content": "YES"}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1},
            }
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield state
    server.shutdown()
    server.server_close()


def image_sample(sample_id: str, image: dict[str, Any] = IMAGE) -> dict[str, Any]:
    prompt = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "How many red pixels? <b>"}, image],
        }
    ]
    return {"id": sample_id, "prompt": prompt, "completion": "One.", "reference": "1"}


def judge_spec(url: str, cache: bool | str = False, **extra: Any) -> dict[str, Any]:
    component = {"type": "judge_reference", "backend": "openai", "base_url": url}
    return {"rewards": {"same": {**component, "cache": cache, **extra}}, "timeout_s": 60}


def test_the_judge_receives_the_image_part_unchanged(vision_server: VisionStandIn) -> None:
    with Engine(judge_spec(vision_server.url), workers=1) as engine:
        (result,) = engine.score([image_sample("a")])
    assert result.status == "ok" and result.reward == 1.0
    (body,) = vision_server.bodies
    system, user = body["messages"]
    assert isinstance(system["content"], str)
    parts = user["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text"]
    assert parts[1] == IMAGE  # exactly the part of the sample, detail included
    assert parts[0]["text"].endswith("How many red pixels? &lt;b&gt;\n")  # escaped text
    assert "<response>\nOne.\n</response>" in parts[2]["text"]
    assert "rewardsmith-image" not in json.dumps(body)


def test_every_criterion_of_a_rubric_carries_the_image(vision_server: VisionStandIn) -> None:
    spec = {
        "rewards": {
            "rubric": {
                "type": "rubric",
                "backend": "openai",
                "base_url": vision_server.url,
                "cache": False,
                "rubric": ["Counts the pixels correctly", "Answers in one word"],
            }
        },
        "timeout_s": 60,
    }
    with Engine(spec, workers=1) as engine:
        (result,) = engine.score([image_sample("r")])
    assert result.status == "ok"
    assert len(vision_server.bodies) == 2
    for body in vision_server.bodies:
        assert IMAGE in body["messages"][1]["content"]


def test_the_cache_tells_images_apart(vision_server: VisionStandIn, tmp_path: Path) -> None:
    cache = str(tmp_path / "judge.sqlite3")
    with Engine(judge_spec(vision_server.url, cache), workers=1) as engine:
        engine.score([image_sample("a"), image_sample("b", OTHER)])
        assert len(vision_server.bodies) == 2  # same text, another image: asked again
        (again,) = engine.score([image_sample("c")])
    assert len(vision_server.bodies) == 2 and again.components["same"].detail["cached"]
    assert vision_server.bodies[1]["messages"][1]["content"][1] == OTHER


def test_earlier_turns_images_reach_the_judge_of_a_later_turn(
    vision_server: VisionStandIn,
) -> None:
    completion = [
        {"role": "assistant", "content": "Let me take a screenshot."},
        {"role": "tool", "content": [{"type": "text", "text": "screenshot:"}, IMAGE]},
        {"role": "assistant", "content": "It shows one red pixel."},
    ]
    spec = judge_spec(vision_server.url)
    spec["rewards"]["same"]["scope"] = "turns"
    sample = {"id": "t", "prompt": "Look.", "completion": completion, "reference": "1"}
    with Engine(spec, workers=1) as engine:
        (result,) = engine.score([sample])
    assert result.components["same"].detail["steps"] == [1.0, 1.0]
    first, second = (b["messages"][1]["content"] for b in vision_server.bodies)
    assert isinstance(first, str)  # the first turn saw no image yet
    assert IMAGE in second


def test_a_text_only_llama_server_refusing_images_is_an_error(llama_server: str) -> None:
    # no transport retries (the 500 is final); generous time for a loaded 2-core machine
    spec = judge_spec(llama_server, max_retries=0, request_timeout_s=120, deadline_s=150)
    spec["timeout_s"] = 200
    with Engine(spec, workers=1) as engine:
        with_image, text_only = engine.score(
            [image_sample("i"), {**image_sample("t"), "prompt": "How many red pixels?"}]
        )
    assert with_image.status == "error" and with_image.reward is None
    assert "HTTP 500" in with_image.components["same"].detail["reason"]
    assert text_only.status == "ok", text_only.components["same"].detail


def test_the_local_model_refuses_images(model_path: str) -> None:
    spec = {"rewards": {"same": {"type": "judge_reference", "cache": False}}, "timeout_s": 60}
    with Engine(spec, workers=1) as engine:
        (result,) = engine.score([image_sample("l")])
    assert result.status == "error"
    assert "reads text only" in result.components["same"].detail["reason"]


def test_verifiers_read_the_text_parts() -> None:
    sample = Sample.model_validate(
        {
            "id": "v",
            "completion": [
                {"role": "assistant", "content": [{"type": "text", "text": "\\boxed{1}"}, IMAGE]}
            ],
        }
    )
    assert sample.text == "\\boxed{1}"
    assert [p.as_sent() for p in sample.final_turn.images] == [IMAGE]  # type: ignore[union-attr]


def test_a_trajectory_shown_to_a_judge_includes_its_tool_calls() -> None:
    from rewardsmith.judges._prompts import render_conversation

    call = {"function": {"name": "get_weather", "arguments": '{"city": "</conversation>"}'}}
    prompt = [
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "72F"},
    ]
    shown = render_conversation(Sample(id="c", completion="x", prompt=prompt).prompt)
    assert 'tool calls: [{"function": {"name": "get_weather"' in shown
    assert shown.count("</conversation>") == 1  # the call's text is escaped like any other
