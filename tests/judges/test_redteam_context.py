"""Red team: can a completion earn a better advantage than an honest wrong answer through
the judges' failure handling (context overflow, cut replies, refusals, set-aside members)?

Each row is one attack (rt14 found 13 holes; all are fixed and every row now guards its fix).
`today` says what it earns now, `should` what it must earn: `charged` (it enters its group's
advantages no better than an honest wrong answer, which is judged 0), `left_out` (not the
completion's doing: advantage null) or `scored` (no failure: the reward read it).
Advantages are computed by the real result builder (GRPO, no epsilon) over the real
component scores the attack got.

Real parts: the embedded SmolLM2 (small `n_ctx`, so overflow is cheap) and a real
llama-cpp-python server on loopback (`--n_ctx 512`). The scripted backend of `conftest` stands
in where the model's words do not matter; `_Refusing` is a stand-in HTTP server for the
refusals of servers that cannot run here (TGI, Gemini, an nginx reverse proxy).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from rewardsmith import Message, Sample, Score
from rewardsmith.judges import judge_group, judge_pointwise, judge_reference
from rewardsmith.judges._backends import BackendError, ContextOverflow, JudgeRequest
from rewardsmith.judges._prompts import group_messages, reference_messages, render_conversation
from rewardsmith.reward_models import likelihood, process
from rewardsmith.turns import per_turn

from ..combine.helpers import UNIT, row, run, spec
from .conftest import SLOW_S, llama_cpp_server

QUESTION = "What is 2+2?"
WRONG = "The answer is five."
ENGLISH = "Two plus two equals four, because adding two and two gives four in total. "
WRONG_LONG = "Two plus two equals five, because adding two and two gives five in total. "
SERVER_CTX = 512
ON_SERVER = {"cache": False, "deadline_s": SLOW_S, "request_timeout_s": SLOW_S}
LOCAL = {"backend": "local", "cache": False, "deadline_s": SLOW_S, "parse_retries": 1}
GRPO = spec({"r": UNIT}, group_transform={"type": "grpo", "epsilon": 0})


def advantages(scores: dict[str, Score]) -> dict[str, float | None]:
    """Each member's GRPO advantage, as the engine computes it from these component scores
    (the component declares [0, 1], as every judged reward does)."""
    results = run(GRPO, [row("g", {"r": s}, sample_id=k) for k, s in scores.items()])
    return {r.id: r.advantage for r in results}


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_server(model_path: str) -> Iterator[str]:
    """`python -m llama_cpp.server --n_ctx 512` on loopback; yields its /v1 base URL."""
    with llama_cpp_server(model_path, SERVER_CTX) as base:
        yield base


@pytest.fixture(scope="module")
def count_tokens(model_path: str) -> Iterator[Callable[[Any], int]]:
    """Prompt tokens of a request's messages as the llama.cpp server counts them (its own
    chat template and tokenizer: the vocabulary only, no weights)."""
    llama_cpp = pytest.importorskip("llama_cpp")
    from rewardsmith.judges._local import LlamaCppRuntime

    runtime = object.__new__(LlamaCppRuntime)
    runtime.model = llama_cpp.Llama(model_path=model_path, vocab_only=True, verbose=False)
    yield lambda messages: len(runtime.prompt_ids(messages))
    runtime.close()


@dataclass
class _Refusal:
    status: int = 400
    body: str = ""


class _Refusing:
    """A stand-in OpenAI-compatible server on loopback answering every request with one
    fixed refusal (the servers whose refusals these are cannot run here)."""

    def __init__(self) -> None:
        refusal = self.refusal = _Refusal()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                data = refusal.body.encode()
                self.send_response(refusal.status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture(scope="module")
def refusing() -> Iterator[_Refusing]:
    standin = _Refusing()
    yield standin
    standin.server.shutdown()
    standin.server.server_close()


# -- attacks on one sample ---------------------------------------------------------------------


def _padded(count: Callable[[Any], int], messages_for: Callable[[str], Any], room: int) -> str:
    """A wrong answer padded so that its request leaves exactly `room` tokens of the
    server's context for the judge's reply."""
    for n in range(2000):
        text = WRONG + " ok" * n
        if count(messages_for(text)) >= SERVER_CTX - room:
            return text
    raise AssertionError("no padding reaches the context")


def cut_reply_on_server(request: pytest.FixtureRequest) -> Score:
    """llama-cpp-python (and llama.cpp) clamp `max_tokens` to the room left in the context
    instead of refusing: a request 4 tokens short of the context gets a reply cut at 4 tokens
    ('The answer is', '{"verdict'), unparseable on every retry, so `invalid`, left out."""
    url, count = request.getfixturevalue("small_server"), request.getfixturevalue("count_tokens")
    conversation = render_conversation(QUESTION)
    text = _padded(count, lambda t: reference_messages(conversation, t, "4"), room=4)
    fn = judge_reference(backend="openai", base_url=url, **ON_SERVER)
    return fn(Sample(id="a", prompt=QUESTION, completion=text, reference="4"))


def past_server_context(request: pytest.FixtureRequest) -> Score:
    url = request.getfixturevalue("small_server")
    fn = judge_reference(backend="openai", base_url=url, **ON_SERVER)
    return fn(Sample(id="a", prompt=QUESTION, completion=WRONG + " ok" * 600, reference="4"))


def refused(status: int, body: str) -> Callable[[pytest.FixtureRequest], Score]:
    def attack(request: pytest.FixtureRequest) -> Score:
        standin = request.getfixturevalue("refusing")
        standin.refusal.status, standin.refusal.body = status, body
        fn = judge_reference(backend="openai", base_url=standin.url, max_retries=0, cache=False)
        return fn(Sample(id="a", prompt=QUESTION, completion=WRONG + " ok" * 3000, reference="4"))

    return attack


def _turns(script: Callable[[JudgeRequest], str]) -> Callable[[pytest.FixtureRequest], Score]:
    """A two-turn trajectory judged per turn (`scope: turns`); turn 1 is long."""

    def attack(request: pytest.FixtureRequest) -> Score:
        request.getfixturevalue("scripted")(script)
        completion = [
            Message(role="assistant", content="I add two and two first."),
            Message(role="user", content="Go on."),
            Message(role="assistant", content="LONG " * 50 + WRONG),
        ]
        fn = per_turn(judge_reference(cache=False, parse_retries=1))
        return fn(Sample(id="a", prompt=QUESTION, completion=completion, reference="4"))

    return attack


def _overflow_if_long(request: JudgeRequest, other: str) -> str:
    if "LONG" in request.messages[-1][1]:
        raise ContextOverflow("HTTP 400: This model's maximum context length is 512 tokens.")
    return other


def _down_if_long(request: JudgeRequest) -> str:
    if "LONG" in request.messages[-1][1]:
        raise BackendError("HTTP 503: the judge server is restarting (after 3 retries)")
    return "NO"


def process_step_too_long(request: pytest.FixtureRequest) -> Score:
    request.getfixturevalue("scripted")(lambda r: _overflow_if_long(r, "NO"))
    fn = process(backend="judge", judge={"cache": False})
    steps = "2 + 2 = 5.\n\n" + "LONG " * 50 + "\n\nSo the answer is five."
    return fn(Sample(id="a", prompt=QUESTION, completion=steps))


def local_overflow(request: pytest.FixtureRequest) -> Score:
    request.getfixturevalue("model_path")
    pytest.importorskip("llama_cpp")
    fn = judge_pointwise(runtime="llama_cpp", n_ctx=256, **LOCAL)
    return fn(Sample(id="a", prompt=QUESTION, completion=WRONG + " ok" * 300))


def likelihood_long_reasoning(request: pytest.FixtureRequest) -> Score:
    """The embedded model cuts the prompt on the left: long reasoning is read, not refused."""
    request.getfixturevalue("model_path")
    pytest.importorskip("llama_cpp")
    fn = likelihood(runtime="llama_cpp", n_ctx=256, marker="A:", deadline_s=SLOW_S)
    return fn(Sample(id="a", prompt=QUESTION, completion="so " * 600 + "A: 5", reference="4"))


VLLM = (
    '{"object": "error", "message": "This model\'s maximum context length is 2048 tokens. '
    'However, you requested 4235 tokens (4231 in the messages, 4 in the completion).", '
    '"type": "BadRequestError", "code": 400}'
)
TGI = (
    '{"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. '
    'Given: 4000 `inputs` tokens and 6 `max_new_tokens`", "error_type": "validation"}'
)
GEMINI = (
    '[{"error": {"code": 400, "message": "The input token count (1200293) exceeds the maximum '
    'number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}]'
)
AZURE_FILTER = (
    '{"error": {"message": "The response was filtered due to the prompt triggering Azure '
    "OpenAI's content management policy. Please modify your prompt and retry.\", "
    '"type": null, "param": "prompt", "code": "content_filter", "status": 400, '
    '"innererror": {"code": "ResponsibleAIPolicyViolation", "content_filter_result": '
    '{"jailbreak": {"filtered": true, "detected": true}}}}}'
)
FILTERED_REPLY = json.dumps(
    {
        "choices": [
            {"index": 0, "finish_reason": "content_filter", "message": {"role": "assistant"}}
        ],
        "usage": {"prompt_tokens": 900, "completion_tokens": 0},
    }
)
NGINX_413 = (
    "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center>"
    "<h1>413 Request Entity Too Large</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)

SINGLE = [
    pytest.param(
        cut_reply_on_server,
        "error (completion): charged (the cut reply)",
        "charged",
        id="server-cuts-the-reply-4-tokens-short-of-its-context",
    ),
    pytest.param(
        past_server_context,
        "error (completion): charged",
        "charged",
        id="server-400-past-its-context",
    ),
    pytest.param(
        refused(400, VLLM), "error (completion): charged", "charged", id="vllm-400-refusal"
    ),
    pytest.param(
        refused(422, TGI),
        "error (completion): charged",
        "charged",
        id="tgi-422-refusal",
    ),
    pytest.param(
        refused(400, GEMINI),
        "error (completion): charged",
        "charged",
        id="gemini-400-refusal",
    ),
    pytest.param(
        refused(400, AZURE_FILTER),
        "error (completion): charged",
        "charged",
        id="content-filter-400",
    ),
    pytest.param(
        refused(200, FILTERED_REPLY),
        "error (completion): charged",
        "charged",
        id="content-filter-empty-reply",
    ),
    pytest.param(
        refused(413, NGINX_413),
        "error (completion): charged",
        "charged",
        id="reverse-proxy-413",
    ),
    pytest.param(
        refused(400, '{"error": {"message": "model \'judge\' not found"}}'),
        "error (infrastructure): left out",
        "left_out",
        id="non-overflow-400-is-not-charged",
    ),
    pytest.param(
        _turns(lambda r: _overflow_if_long(r, "Hmm, it depends.")),
        "error (completion): charged (the overflowing turn decides)",
        "charged",
        id="turns-unparseable-turn-hides-an-overflowing-turn",
    ),
    pytest.param(
        _turns(lambda r: _overflow_if_long(r, "NO")),
        "error (completion): charged",
        "charged",
        id="turns-overflowing-turn",
    ),
    pytest.param(
        _turns(_down_if_long),
        "error (infrastructure): left out",
        "left_out",
        id="turns-keep-the-infrastructure-cause",
    ),
    pytest.param(
        process_step_too_long,
        "error (completion): charged",
        "charged",
        id="process-judge-step-past-the-context",
    ),
    pytest.param(
        local_overflow, "error (completion): charged", "charged", id="embedded-model-overflow"
    ),
    pytest.param(
        likelihood_long_reasoning,
        "ok: read with the prompt cut on the left",
        "scored",
        id="likelihood-long-reasoning-is-read",
    ),
]


@pytest.mark.parametrize(("attack", "today", "should"), SINGLE)
def test_one_sample(
    request: pytest.FixtureRequest,
    attack: Callable[[pytest.FixtureRequest], Score],
    today: str,
    should: str,
) -> None:
    """The attack's advantage in a group with an honest wrong answer (judged 0) and a right
    one (judged 1): charged, it is at most the wrong answer's; left out, it is null;
    scored, the reward read it (no failure at all)."""
    assert_earns(attack(request), should)


def assert_earns(score: Score, should: str) -> None:
    """`score`, in a group with an honest wrong answer (judged 0) and a right one (judged 1),
    earns what `should` says: `charged` (an advantage at most the wrong answer's),
    `left_out` (infrastructure, advantage null), `scored` (read, no failure) or
    `not_charged` (read, or left out)."""
    got = advantages({"attack": score, "wrong": Score.ok(0.0), "right": Score.ok(1.0)})
    where = f"{score.status} {score.cause}: {str(score.detail.get('reason'))[:200]}"
    if should == "not_charged":
        assert score.cause != "completion", where
    elif should == "left_out":
        assert score.cause == "infrastructure" and got["attack"] is None, where
    elif should == "scored":
        assert score.status == "ok" and got["attack"] is not None, where
    else:
        assert got["attack"] is not None, f"left out: {where}"
        assert got["attack"] <= got["wrong"], where


# -- attacks on judge_group --------------------------------------------------------------------


def _group(members: dict[str, str]) -> list[dict[str, str]]:
    return [{"id": k, "completion": v} for k, v in members.items()]


def _score_group(fn: Any, members: dict[str, str]) -> dict[str, Score]:
    group = _group(members)
    return {
        k: fn(Sample(id=k, prompt=QUESTION, completion=v, metadata={"group_completions": group}))
        for k, v in members.items()
    }


def _rank_by_text(order: list[str]) -> Callable[[JudgeRequest], str]:
    """A judge ranking the shown responses by their text's place in `order` (others last)."""

    def script(request: JudgeRequest) -> str:
        shown = re.findall(r"<response id=(R\d+)>\n(.*?)\n</response>", request.messages[-1][1])
        place = {t: i for i, t in enumerate(order)}
        return ", ".join(label for label, _ in sorted(shown, key=lambda s: place.get(s[1], 99)))

    return script


def dense_member_alone_too_long(request: pytest.FixtureRequest) -> dict[str, Score]:
    """`<` is shown as `&lt;` (3 tokens for 1 byte), English is ~0.22 token per byte: the
    attacker is too long on its own yet the shortest in bytes, so every sibling is set aside
    before it, then it alone overflows and the WHOLE group errors: every member charged
    alike, every advantage 0 (the attacker escapes its place at the bottom)."""
    request.getfixturevalue("model_path")
    fn = judge_group(runtime="transformers", n_ctx=SERVER_CTX, **LOCAL)
    return _score_group(
        fn,
        {
            "attack": "The answer is five, since " + "1<" * 120,  # 266 bytes, ~500 tokens
            "right": ENGLISH * 8,  # 592 bytes, ~130 tokens
            "wrong": WRONG_LONG * 8,  # 600 bytes
        },
    )


def dense_member_pushes_out_a_sibling(request: pytest.FixtureRequest) -> dict[str, Score]:
    """The attacker is what makes the group too long, but an innocent sibling with more
    bytes (fewer tokens) is set aside and ranked last; the attacker is judged."""
    request.getfixturevalue("model_path")
    fn = judge_group(runtime="transformers", n_ctx=SERVER_CTX, **LOCAL)
    return _score_group(
        fn,
        {
            "attack": "The answer is five, since " + "1<" * 40,  # 106 bytes, ~190 tokens
            "right": ENGLISH * 9,  # 666 bytes, ~150 tokens
            "wrong": "5",
        },
    )


def unread_members_ranked_by_bytes(request: pytest.FixtureRequest) -> dict[str, Score]:
    """Two members too long to read: the judge reads neither, yet the shorter garbage ranks
    above the longer right answer."""

    def script(r: JudgeRequest) -> str:
        user = r.messages[-1][1]
        if "GARBAGE" in user or "Correct" in user:
            raise ContextOverflow("HTTP 400: This model's maximum context length is 512 tokens.")
        return _rank_by_text(["4", "5"])(r)

    request.getfixturevalue("scripted")(script)
    members = {"attack": "GARBAGE " * 50, "right": "Correct: " * 60 + "4", "wrong": "5", "ok": "4"}
    return _score_group(judge_group(cache=False), members)


def long_member_set_aside(request: pytest.FixtureRequest) -> dict[str, Score]:
    def script(r: JudgeRequest) -> str:
        if "LONG" in r.messages[-1][1]:
            raise ContextOverflow("HTTP 400: This model's maximum context length is 512 tokens.")
        return _rank_by_text(["4", "5"])(r)

    request.getfixturevalue("scripted")(script)
    members = {"attack": "LONG " * 300 + "5", "right": "4", "wrong": "5"}
    return _score_group(judge_group(cache=False), members)


def group_cut_reply_on_server(request: pytest.FixtureRequest) -> dict[str, Score]:
    """The group's request leaves the llama.cpp server 4 tokens for the ranking: the reply
    is cut on every attempt, the whole group is `invalid`, every member left out."""
    url, count = request.getfixturevalue("small_server"), request.getfixturevalue("count_tokens")
    conversation = render_conversation(QUESTION)
    instruction = "Rank by correctness, helpfulness and clarity."  # judge_group's default

    def messages_for(text: str) -> Any:
        return group_messages(conversation, [("R1", text), ("R2", "4"), ("R3", "5")], instruction)

    text = _padded(count, messages_for, room=4)
    fn = judge_group(backend="openai", base_url=url, **ON_SERVER)
    return _score_group(fn, {"attack": text, "right": "4", "wrong": "5"})


def identical_wrong_answers(request: pytest.FixtureRequest) -> dict[str, Score]:
    """A group given as plain strings (ids are their indices): two members that wrote the
    same wrong answer cannot be told apart, so both are `invalid`, left out."""
    request.getfixturevalue("scripted")(_rank_by_text(["4", "5"]))
    group = ["4", "5", "5"]
    fn = judge_group(cache=False)
    metadata = {"group_completions": group}
    samples = [
        Sample(id=f"s{i}", prompt=QUESTION, completion=t, metadata=metadata)
        for i, t in enumerate(group)
    ]
    return {"right": fn(samples[0]), "attack": fn(samples[1]), "attack2": fn(samples[2])}


GROUP = [
    pytest.param(
        dense_member_alone_too_long,
        "the attack set aside (too long alone), tied last; the others ranked",
        ("wrong", "right"),
        id="group-dense-member-too-long-alone-wipes-the-group",
    ),
    pytest.param(
        dense_member_pushes_out_a_sibling,
        "the attack (more tokens) set aside, last; the right answer ranked",
        ("right",),
        id="group-dense-member-pushes-out-a-sibling",
    ),
    pytest.param(
        unread_members_ranked_by_bytes,
        "unread members tie last, at 0",
        ("right",),
        id="group-unread-members-ranked-by-bytes",
    ),
    pytest.param(
        long_member_set_aside,
        "attack set aside, last",
        ("wrong", "right"),
        id="group-longest-member-set-aside",
    ),
    pytest.param(
        group_cut_reply_on_server,
        "the members that fit ranked; the attack set aside, last",
        ("wrong", "right"),
        id="group-server-cuts-the-ranking",
    ),
    pytest.param(
        identical_wrong_answers,
        "both copies share their mean score",
        ("right",),
        id="group-identical-wrong-answers",
    ),
]


@pytest.mark.parametrize(("attack", "today", "below"), GROUP)
def test_group(
    request: pytest.FixtureRequest,
    attack: Callable[[pytest.FixtureRequest], dict[str, Score]],
    today: str,
    below: tuple[str, ...],
) -> None:
    """Every attacking member is scored (never left out), and its advantage is strictly
    below the members in `below`: it should rank last, and no lower than that can be."""
    scores = attack(request)
    got = advantages(scores)
    where = {k: (s.status, s.cause, s.score, s.detail.get("too_long")) for k, s in scores.items()}
    for member in [k for k in scores if k.startswith("attack")]:
        assert got[member] is not None, f"{member} left out: {where}"
        for other in below:
            assert got[other] is not None, where
            if attack is unread_members_ranked_by_bytes:
                assert got[member] <= got[other], where  # both unread: a tie is fair
            else:
                assert got[member] < got[other], where
