"""A canned OpenAI-compatible chat endpoint (ASGI), for measuring judge-client overhead alone.

    python -m uvicorn _judge_stub:app --app-dir benchmarks --port 8000

Every POST gets the same reply a llama.cpp server gives a criterion prompt: "The answer is
no" with top-10 logprobs at each of its 4 tokens and usage counts, at no model cost.
"""

from __future__ import annotations

import json

_TOKENS = ["The", " answer", " is", " no"]
_CANDIDATES = ["The", "No", "Yes", " yes", " no", "<", "Y", "I", "You", "This"]
_REPLY = json.dumps(
    {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "The answer is no"},
                "logprobs": {
                    "content": [
                        {
                            "token": token,
                            "logprob": -0.5,
                            "bytes": None,
                            "top_logprobs": [
                                {"token": c, "logprob": -1.0 - i / 10, "bytes": None}
                                for i, c in enumerate(_CANDIDATES)
                            ],
                        }
                        for token in _TOKENS
                    ]
                },
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 160, "completion_tokens": 4, "total_tokens": 164},
    }
).encode()


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = message.get("more_body", False)
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(_REPLY)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": _REPLY})
