"""The `transformers` runtime of the embedded judge: transformers on PyTorch (CPU).

transformers reads a GGUF file and dequantizes it to float32, which takes tens of seconds;
the first process to load a file therefore saves the result (safetensors and tokenizer)
under ``<cache folder>/models/<name>-<sha256>/`` behind a file lock, and every later load,
in any worker, reads that in about a second.

Decoding is a plain loop over the model with a KV cache that keeps the longest prefix shared
with the previous call: the judge prompts put the conversation and the response first and
the criterion last, so the criteria of one sample (and the retries) re-use the prefix.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import inspect
import io
import logging
import os
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ._backends import BackendError, ContextOverflow, JudgeReply, JudgeRequest
from ._cache import cache_root
from ._grammar import Constraint
from ._local import model_digest

__all__ = ["TransformersRuntime", "converted_model"]

_log = logging.getLogger("rewardsmith.judges")

_INSTALL = (
    "runtime transformers needs PyTorch and transformers: pip install torch==2.13.0 (the CPU "
    "build) && pip install 'rewardsmith[local]'"
)
_SCAN = 256
"""Candidates tried, most likely first, before a constrained step scans the whole vocabulary."""


@contextlib.contextmanager
def _one_parse_per_file() -> Iterator[None]:
    """transformers parses the GGUF file three times (config, tokenizer, weights), and a parse
    of SmolLM2's 49k-token vocabulary by `gguf.GGUFReader` is most of a conversion's time; it
    also builds gguf's tensor-name map once per tensor (397 times, 9 s). Both are shared
    while converting (they are only read)."""
    import gguf

    real, real_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[tuple[str, str], Any] = {}

    def shared(path: Any, mode: str = "r") -> Any:
        key = (os.fspath(path), mode)
        if key not in readers:
            readers[key] = real(path, mode)
        return readers[key]

    gguf.GGUFReader = shared
    gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(real_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = real, real_map


def converted_model(path: str) -> Path:
    """The folder holding `path` converted for transformers (made once, under a lock)."""
    try:
        import transformers  # noqa: F401
    except ImportError as exc:
        raise BackendError(_INSTALL) from exc
    name = f"{Path(path).stem}-{model_digest(path)[:16]}"
    folder = cache_root() / "models" / name
    done = folder / "converted"
    if done.exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one converter; the others wait, then read
        if done.exists():
            return folder
        _log.info("converting %s for transformers (once, into %s)", path, folder)
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tmp = folder.with_name(f"{name}.tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        source, file = str(Path(path).parent), Path(path).name
        try:  # (stderr: transformers' progress bars)
            with _one_parse_per_file(), contextlib.redirect_stderr(io.StringIO()):
                tokenizer = AutoTokenizer.from_pretrained(source, gguf_file=file)
                model = AutoModelForCausalLM.from_pretrained(source, gguf_file=file)
        except Exception as exc:  # unsupported architecture or quantization
            raise BackendError(f"transformers cannot load {path}: {exc}") from exc
        # the dequantized weights are plain float32: save them as such
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        with contextlib.redirect_stderr(io.StringIO()):
            tokenizer.save_pretrained(tmp)
            model.save_pretrained(tmp)
        (tmp / "converted").write_text(path)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    return folder


class TransformersRuntime:
    """A causal LM from transformers, greedy or seeded sampling, top-k logprobs per token."""

    name = "transformers"

    def __init__(self, path: str, n_ctx: int, n_threads: int | None) -> None:
        try:
            import torch
            import transformers
        except ImportError as exc:
            raise BackendError(_INSTALL) from exc
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if n_threads:
            torch.set_num_threads(n_threads)
        folder = converted_model(path)
        self.version = transformers.__version__
        self.n_ctx = n_ctx
        with contextlib.redirect_stderr(io.StringIO()):
            self.tokenizer = AutoTokenizer.from_pretrained(folder)
            self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        self.model.eval()
        stops = self.model.generation_config.eos_token_id
        self.stops = set(stops if isinstance(stops, list) else [stops]) - {None}
        self._ids: list[int] = []
        self._cache: Any = None
        forward = inspect.signature(self.model.forward).parameters
        self._cache_arg = "cache" if "cache" in forward else "past_key_values"
        """The KV cache's argument: `cache` from transformers 5.24, which deprecates (with a
        FutureWarning) the `past_key_values` of earlier versions."""
        self._texts: list[str] | None = None
        self._starts: Any = None
        self.texts()  # part of loading (seconds): not of the first judgement

    # -- primitives ----------------------------------------------------------------------------

    def prompt_ids(self, messages: Sequence[tuple[str, str]]) -> list[int]:
        encoded = self.tokenizer.apply_chat_template(
            [{"role": r, "content": c} for r, c in messages],
            add_generation_prompt=True,
            tokenize=True,
        )
        ids = encoded if isinstance(encoded, list) else encoded["input_ids"]
        return [int(i) for i in ids]

    def encode(self, text: str) -> list[int]:
        return [int(i) for i in self.tokenizer.encode(text, add_special_tokens=False)]

    def texts(self) -> list[str]:
        """Each token's text, as it reads inside a reply."""
        if self._texts is None:
            vocab = len(self.tokenizer)
            self._texts = self.tokenizer.batch_decode([[i] for i in range(vocab)])
        return self._texts

    def word_start(self) -> Any:
        if self._starts is None:
            import numpy as np

            self._starts = np.array([t[:1].isalnum() for t in self.texts()], dtype=bool)
        return self._starts

    def _forward(self, ids: list[int], need: int = 1) -> Any:
        """Logits for the positions of `ids` not already in the KV cache: at least the last
        `need` positions."""
        import torch
        from transformers import DynamicCache

        if len(ids) > self.n_ctx:
            raise ContextOverflow(
                f"local model: {len(ids)} tokens exceed the context ({self.n_ctx})"
            )
        shared = 0
        limit = min(len(self._ids), len(ids) - need)
        while shared < limit and self._ids[shared] == ids[shared]:
            shared += 1
        if self._cache is None or shared == 0:
            self._cache, shared = DynamicCache(), 0
        elif self._cache.get_seq_length() > shared:
            self._cache.crop(shared - self._cache.get_seq_length())  # negative: drop the tail
        try:
            with torch.inference_mode():
                out = self.model(
                    input_ids=torch.tensor([ids[shared:]]),
                    use_cache=True,
                    **{self._cache_arg: self._cache},
                )
        except BaseException:
            self._ids, self._cache = [], None  # a half-updated KV cache is never reused
            raise
        self._ids = list(ids)
        return out.logits[0].float()

    def logprob_rows(self, prompt: list[int], continuation: list[int]) -> Any:
        import torch

        need = len(continuation) + 1
        logits = self._forward(prompt + continuation, need)[-need:]
        return torch.log_softmax(logits, dim=-1).double().numpy()

    # -- generation ------------------------------------------------------------------------------

    def chat(self, request: JudgeRequest) -> JudgeReply:
        import torch

        prompt = self.prompt_ids(request.messages)
        if len(prompt) + request.max_tokens > self.n_ctx:
            raise ContextOverflow(
                f"local model: {len(prompt)} prompt tokens + {request.max_tokens} exceed the "
                f"context ({self.n_ctx})"
            )
        # held to the schema's bare form: "YES", not {"verdict": "YES"} (see _grammar)
        constraint = Constraint(request.schema, bare=True) if request.schema is not None else None
        generator = torch.Generator().manual_seed(request.seed or 0)
        texts = self.texts()
        generated: list[int] = []
        tokens: list[str] = []
        top: list[dict[str, float]] = []
        text = ""
        for _ in range(request.max_tokens):
            logits = self._forward(prompt + generated)[-1]
            logprobs = torch.log_softmax(logits, dim=-1)
            token = self._pick(logits, request.temperature, constraint, text, generator)
            if request.top_logprobs:
                top.append(self._candidates(logprobs, request.top_logprobs, token))
            if token in self.stops:
                tokens.append("")
                break
            generated.append(token)
            tokens.append(texts[token])
            text += texts[token]
        return JudgeReply(
            text=self.tokenizer.decode(generated, skip_special_tokens=True),
            top_logprobs=top,
            tokens=tokens if request.top_logprobs else [],
            prompt_tokens=len(prompt),
            completion_tokens=len(generated),
        )

    def _candidates(self, logprobs: Any, k: int, chosen: int) -> dict[str, float]:
        import torch

        texts = self.texts()
        values, indices = torch.topk(logprobs, k)
        out: dict[str, float] = {}
        for value, index in [*zip(values.tolist(), indices.tolist(), strict=True)]:
            out[texts[index]] = max(out.get(texts[index], -float("inf")), value)
        out.setdefault(texts[chosen], float(logprobs[chosen]))
        return out

    def _allowed(self, token: int, constraint: Constraint, text: str) -> bool:
        if token in self.stops:
            return constraint.complete(text)
        return constraint.viable(text + self.texts()[token])

    def _pick(
        self,
        logits: Any,
        temperature: float,
        constraint: Constraint | None,
        text: str,
        generator: Any,
    ) -> int:
        """The next token: greedy at temperature 0, else sampled with the request's seed;
        with a constraint, only tokens that keep the reply a prefix of a match."""
        import torch

        if constraint is None:
            if temperature <= 0:
                return int(torch.argmax(logits))
            probs = torch.softmax(logits / temperature, dim=-1)
            return int(torch.multinomial(probs, 1, generator=generator))
        order = torch.argsort(logits, descending=True).tolist()
        if temperature <= 0:
            for token in order:
                if self._allowed(token, constraint, text):
                    return int(token)
            raise BackendError("structured output: no token continues the reply")
        allowed = [t for t in order[:_SCAN] if self._allowed(t, constraint, text)]
        if not allowed:
            allowed = [t for t in order[_SCAN:] if self._allowed(t, constraint, text)]
        if not allowed:
            raise BackendError("structured output: no token continues the reply")
        probs = torch.softmax(logits[allowed] / temperature, dim=-1)
        return int(allowed[int(torch.multinomial(probs, 1, generator=generator))])
