"""A STAND-IN reward-model server: FastAPI on loopback serving a transformers model in the
request and response formats of vLLM, SGLang and OpenRLHF. None of the three runs here (vLLM
and SGLang need their GPU builds; OpenRLHF's ``serve_rm`` needs DeepSpeed), so this process
plays each of them, speaking only what their docs and code say (quoted in test_remote.py). It
runs the model with plain transformers, independently of rewardsmith's model host.

    python -m tests.reward_models.standin_server --kind vllm --model DIR --port 8000
        [--fail-first N] [--delay S]

``--fail-first N`` answers the first N scoring requests with 503; ``--delay S`` sleeps S
seconds before each answer (to test retries and deadlines).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

import torch
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
)


def build(kind: str, folder: str, fail_first: int, delay: float) -> FastAPI:
    tokenizer = AutoTokenizer.from_pretrained(folder)
    config = AutoConfig.from_pretrained(folder)
    token_level = any(a.endswith("ForTokenClassification") for a in config.architectures or [])
    causal = any(a.endswith("ForCausalLM") for a in config.architectures or [])
    loader = AutoModelForTokenClassification if token_level else AutoModelForSequenceClassification
    loader = AutoModelForCausalLM if causal else loader
    model = loader.from_pretrained(folder).eval()
    step_id = tokenizer.convert_tokens_to_ids("<extra_0>")
    app = FastAPI()
    state = {"requests": 0}

    def forward(ids: list[int]) -> torch.Tensor:
        with torch.inference_mode():
            return model(input_ids=torch.tensor([ids])).logits[0]

    def activation(logits: torch.Tensor) -> list[float]:
        probs = logits.sigmoid() if logits.shape[-1] == 1 else logits.softmax(-1)
        return [float(x) for x in probs]

    async def gate() -> JSONResponse | None:
        state["requests"] += 1
        if delay:
            await asyncio.sleep(delay)
        if state["requests"] <= fail_first:
            return JSONResponse({"error": "overloaded"}, status_code=503)
        return None

    def token_ids(value: Any) -> list[list[int]]:
        """vLLM's ``input``: str | list[str] | list[int] | list[list[int]]."""
        if isinstance(value, str):
            value = [value]
        if value and isinstance(value[0], int):
            value = [value]
        return [
            tokenizer(v, add_special_tokens=True)["input_ids"] if isinstance(v, str) else v
            for v in value
        ]

    def usage(rows: list[list[int]]) -> dict[str, Any]:
        tokens = sum(len(r) for r in rows)
        return {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [{"id": folder, "object": "model"}]}

    if kind == "vllm" and causal:

        @app.post("/v1/completions")
        async def completions(request: Request) -> Any:
            """OpenAI's legacy completions with ``echo``: every prompt token's log-probability
            (None for the first), its text and its character offset, as vLLM returns them."""
            body = await request.json()
            text = body["prompt"]
            encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            ids, spans = encoded["input_ids"], encoded["offset_mapping"]
            asked = len(ids) + int(body.get("max_tokens") or 16)
            if asked > config.max_position_embeddings:  # vLLM's refusal, word for word
                message = (
                    f"This model's maximum context length is {config.max_position_embeddings} "
                    f"tokens. However, you requested {asked} tokens ({len(ids)} in the "
                    f"messages, {asked - len(ids)} in the completion). Please reduce the "
                    "length of the messages or completion."
                )
                error = {"type": "BadRequestError", "param": None, "code": 400}
                return JSONResponse({"object": "error", "message": message, **error}, 400)
            with torch.inference_mode():
                rows = model(input_ids=torch.tensor([ids])).logits[0].log_softmax(-1)
            logprobs = [None] + [float(rows[i - 1][t]) for i, t in enumerate(ids) if i > 0]
            tokens = [text[a:b] for a, b in spans]
            offsets = [a for a, _ in spans]
            nxt = int(rows[-1].argmax())
            tokens.append(tokenizer.decode([nxt]))
            logprobs.append(float(rows[-1][nxt]))
            offsets.append(len(text))
            return {
                "id": "cmpl-standin",
                "object": "text_completion",
                "created": int(time.time()),
                "model": body.get("model") or folder,
                "choices": [
                    {
                        "text": text + tokens[-1],
                        "index": 0,
                        "logprobs": {
                            "text_offset": offsets,
                            "token_logprobs": logprobs,
                            "tokens": tokens,
                            "top_logprobs": None,
                        },
                        "finish_reason": "length",
                    }
                ],
                "usage": usage([ids]),
            }

    elif kind == "vllm":

        @app.post("/classify")
        async def classify(request: Request) -> Any:
            if (refused := await gate()) is not None:
                return refused
            body = await request.json()
            rows = token_ids(body["input"])
            raw = body.get("use_activation") is False
            data = []
            for index, ids in enumerate(rows):
                logits = forward(ids)
                probs = [float(x) for x in logits] if raw else activation(logits)
                label = config.id2label.get(int(logits.argmax()), str(int(logits.argmax())))
                data.append(
                    {"index": index, "label": label, "probs": probs, "num_classes": len(probs)}
                )
            return {
                "id": f"classify-{state['requests']}",
                "object": "list",
                "created": int(time.time()),
                "model": body.get("model") or folder,
                "data": data,
                "usage": usage(rows),
            }

        @app.post("/pooling")
        async def pooling(request: Request) -> Any:
            if (refused := await gate()) is not None:
                return refused
            body = await request.json()
            rows = token_ids(body["input"])
            raw = body.get("use_activation") is False
            data = []
            for index, ids in enumerate(rows):
                logits = forward(ids)
                if token_level:  # STEP pooling: one row per step tag
                    tags = [i for i, t in enumerate(ids) if t == step_id]
                    rows = [logits[i] for i in tags]
                    out: Any = [[float(x) for x in r] if raw else activation(r) for r in rows]
                else:
                    out = [float(x) for x in logits] if raw else activation(logits)
                data.append({"index": index, "object": "pooling", "data": out})
            return {
                "id": f"pool-{state['requests']}",
                "object": "list",
                "created": int(time.time()),
                "model": body.get("model") or folder,
                "data": data,
                "usage": usage(rows),
            }

    elif kind == "sglang":

        @app.post("/classify")
        async def sglang_classify(request: Request) -> Any:
            if (refused := await gate()) is not None:
                return refused
            body = await request.json()
            if "input_ids" in body:
                rows = body["input_ids"]
                rows = [rows] if rows and isinstance(rows[0], int) else rows
            else:
                texts = body["text"]
                texts = [texts] if isinstance(texts, str) else texts
                rows = [tokenizer(t)["input_ids"] for t in texts]
            return [
                {
                    "embedding": [float(x) for x in forward(ids)],
                    "meta_info": {"id": f"{state['requests']}-{i}", "prompt_tokens": len(ids)},
                }
                for i, ids in enumerate(rows)
            ]

    elif kind == "openrlhf":

        @app.post("/get_reward")
        async def get_reward(request: Request) -> Any:
            if (refused := await gate()) is not None:
                return refused
            data = await request.json()
            queries = data.get("query")
            rewards = []
            for query in queries:  # serve_rm.py: add_special_tokens=False, truncation on
                ids = tokenizer(query, add_special_tokens=False, truncation=True, max_length=2048)
                rewards.append(float(forward(ids["input_ids"])[0]))
            return JSONResponse(
                {"rewards": rewards, "scores": rewards, "extra_logs": {"dummy_scores": rewards}}
            )

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kind", choices=["vllm", "sglang", "openrlhf"], required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--fail-first", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    app = build(args.kind, args.model, args.fail_first, args.delay)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
