"""Trainer-facing conversions, one implementation for the adapters and the reward server.

OpenRLHF's contract (prompt + response queries in; always-a-float rewards and per-component
logs out) is served twice: by `integrations/openrlhf.py` (a `reward_func` file) and by the
server's `POST /get_reward`. Both call `openrlhf_samples` and `openrlhf_response` here, so the
same query gets the same completion, reward and logs through either; verl shares
`trainer_reward` and `component_logs`.

This module lives under `integrations/` and never imports the server: the server imports it
(server -> integrations -> engine/models/spec), never the other way round. Absolute imports
only: trainers load the adapter files by path.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from rewardsmith._exceptions import ConfigError, InputError
from rewardsmith.integrations._component_values import component_values
from rewardsmith.integrations._trainer_data import plain
from rewardsmith.models import FAILURE_STATUSES, Result, Sample
from rewardsmith.spec import RewardSpec

__all__ = [
    "DEFAULT_FAILURE_REWARD",
    "check_columns",
    "completion_from_query",
    "component_logs",
    "failure_reward",
    "openrlhf_response",
    "openrlhf_samples",
    "strip_prompt",
    "strip_special_tokens",
    "trainer_reward",
]

DEFAULT_FAILURE_REWARD = 0.0
"""Reward of a failed sample when the spec sets no `on_error`."""

_RESERVED_LOG_KEYS = frozenset({"reward", "score", "failed", "prompt_found"})
"""Log keys a component name must not take (the trainer's own keys, and our flags)."""

_TOKEN = (
    r"<\|[^|<>\s]{1,40}\|>"  # <|im_end|> <|endoftext|> <|eot_id|> <|end_of_text|> <|end|>
    r"|<｜[^｜<>]{1,40}｜>"  # DeepSeek: <｜end▁of▁sentence｜> <｜Assistant｜>
    r"|</?s>|<pad>|<unk>|<eos>|<bos>|<end_of_turn>|\[PAD\]|\[CLS\]|\[SEP\]"
)


def _header(spaces: str) -> str:
    """The headers that open an assistant turn in common chat templates; `spaces` is the
    quantifier of the whitespace Llama 3's takes after it (bounded in `_LEADING`)."""
    return (
        r"(?:<\|im_start\|>|<start_of_turn>)(?:assistant|model)\n"  # ChatML (Qwen), Gemma
        rf"|<\|start_header_id\|>assistant<\|end_header_id\|>\s{spaces}"  # Llama 3
        r"|<\|assistant\|>\n?"  # Phi-3, Zephyr
        r"|<｜Assistant｜>"  # DeepSeek
        r"|\[/INST\]"  # Llama 2, Mistral
    )


def _leading(run: int, spaces: int) -> re.Pattern[str]:
    """At most `run` tokens and headers, and `spaces` whitespace characters before, in and
    after each: one call reads at most ``run * (2 * spaces + 48) + spaces`` characters.
    `re` holds the interpreter lock for a whole call, and one call over 20 M `<s>` (or 20 M
    spaces) held it, and the server's `/health`, for seconds."""
    bound = f"{{0,{spaces}}}"
    return re.compile(rf"(?:\s{bound}(?:{_header(bound)}|{_TOKEN})){{0,{run}}}\s{bound}")


_HEADER = _header("*")
_HEADERS = re.compile(_HEADER)
_LEADING_RUN = 4096
"""Most leading tokens and headers `_LEADING` reads in one call."""
_LEADING_SPACES = 256
"""Most whitespace characters in a row `_LEADING` reads (2.3 M characters a call at most)."""
_LEADING = _leading(_LEADING_RUN, _LEADING_SPACES)
_TOKEN_AT_END = re.compile(rf"(?:{_TOKEN})\Z")
_LONGEST_TOKEN = 48
"""Characters a special token may span (`<｜` + 40 + `｜>` is 44)."""
_MAX_GARBLED = 4
"""Characters a left cut inside a multi-byte character may leave at the query's start."""
_MIN_PROMPT_END = 8
"""Shortest end of a truncated prompt trusted as the prompt/response boundary."""


def strip_special_tokens(text: str) -> str:
    """`text` without chat special tokens (and assistant turn headers) at either end.

    Leading whitespace goes too (SentencePiece decodes `[/INST] It` with the word's space;
    the response itself starts at `It`, as decoding the response alone gives it). Text
    between the first and last non-special characters is kept as it is.
    """
    text = text[_leading_tokens_end(text) :]
    return text[: _trailing_tokens_start(text)]


def _leading_tokens_end(text: str) -> int:
    """Where the special tokens, headers and whitespace that start `text` end: the match of
    ``\\A(?:\\s*(?:header|token))*\\s*``, taken `_LEADING_RUN` tokens and
    `_LEADING_SPACES` whitespace characters a run per call.

    Each call ends after whole tokens or inside whitespace, where the next token's own
    `\\s*` would go on: the calls together match what one call would.
    """
    start, end = -1, 0
    while end != start:
        start = end
        end = _LEADING.match(text, start).end()  # type: ignore[union-attr]  # may be empty
    return end


def _trailing_tokens_start(text: str) -> int:
    """Where the special tokens and whitespace that end `text` start (`len(text)` if it ends
    with no special token): ``(?:\\s*(?:token))+\\s*\\Z``'s match, peeled from the right.

    That regex searched from every position, and its `\\s*` ran to the end from each one
    (quadratic: 20,000 spaces then a letter took seconds). A token's end fixes its start (no
    token holds another's closing characters), so peeling finds the same longest suffix.
    """
    end, found = len(text), False
    while True:
        while end and text[end - 1].isspace():  # what `\\s` matches in a str pattern
            end -= 1
        token = _TOKEN_AT_END.search(text, max(0, end - _LONGEST_TOKEN), end)
        if token is None:
            break
        end, found = token.start(), True
    if not found:
        return len(text)
    while end and text[end - 1].isspace():
        end -= 1
    return end


def strip_prompt(query: str, prompt: str | None) -> tuple[str, bool]:
    """The part of `query` after its prompt, and whether the prompt was found in it.

    The prompt ends where it first occurs (padding or a BOS token may precede it); failing
    that, where it first occurs up to whitespace (decoding may change the prompt's
    whitespace). When the prompt is absent or not found, the whole query, reported as not
    found.
    """
    if not prompt:
        return query, False
    at = query.find(prompt)
    if at >= 0:
        return query[at + len(prompt) :], True
    target = "".join(prompt.split())
    if target:
        kept = [i for i, char in enumerate(query) if not char.isspace()]
        at = "".join(query[i] for i in kept).find(target)
        if at >= 0:
            return query[kept[at + len(target) - 1] + 1 :], True
    return query, False


def completion_from_query(query: str, prompt: str | None) -> tuple[str | None, bool]:
    """The response inside an OpenRLHF query, and whether the whole prompt was found in it.

    OpenRLHF decodes prompt + response with `skip_special_tokens=False`: left padding, the
    templated prompt, the response, end-of-turn and end-of-text tokens; a prompt too long
    for `max_len` is cut from the left first. The response starts after, in order:

    1. the prompt, where it occurs in the query, up to whitespace (`strip_prompt`);
    2. the end of the prompt that starts the query, when the prompt was cut from the left;
    3. the assistant turn header (`<|im_start|>assistant`, ...) the prompt ends with: the
       query's k-th header, counted from its start, for a prompt with k of them.

    Then the special tokens at the ends of the response are trimmed
    (`strip_special_tokens`). When none of these finds the boundary the response is None:
    the sample cannot be scored (`invalid`), and is never scored as if the prompt and its
    chat markup were part of the completion. Without a prompt the query is the response,
    after its assistant header if it has one; with several, None (`invalid`): nothing says
    which one the prompt ended with.

    Headers are counted from the query's start, never taken from its end: a policy can
    write a header in its response (`x...x<|im_start|>assistant\nyy`), and the last
    header would let it choose what its rewards see (`yy`, not the whole response).
    """
    response, found = strip_prompt(query, prompt)
    if not found:
        at = _prompt_end(query, prompt) if prompt else None
        if at is None:
            at = _after_header(query, len(_HEADERS.findall(prompt)) if prompt else None)
        if at is None:
            return None, False
        response = query[at:]
    return strip_special_tokens(response), found


def _prompt_end(query: str, prompt: str) -> int | None:
    """Where the response starts when the query begins with the end of the prompt.

    A left-truncated prompt leaves its last tokens at the start of the query, possibly
    behind padding and a character or two garbled by a cut inside a character. The longest
    end of the prompt that starts the query there marks the boundary; an end shorter than
    `_MIN_PROMPT_END` characters is not trusted (a prompt shorter than that: only the whole
    prompt, ending the query).

    Linear in the query's length (`_ends_of`): trying each match of a short probe cost time
    cubic in the padding's (a 6 KB request of spaces held the server 5 s).
    """
    last_start = min(len(query) - 1, _leading_tokens_end(query) + _MAX_GARBLED)
    if len(prompt) < _MIN_PROMPT_END:
        fits = len(query) - len(prompt) <= last_start and query.endswith(prompt)
        return len(query) if fits else None
    ends = _ends_of(query, prompt[-len(query) :])
    for start in range(last_start + 1):
        if ends[len(query) - start] >= _MIN_PROMPT_END:
            return start + ends[len(query) - start]
    return None


def _ends_of(query: str, prompt: str) -> list[int]:
    """At each `i` (0 to the query's length), the length of the longest end of `prompt`
    that the query has at `len(query) - i`: Knuth-Morris-Pratt over both strings reversed,
    where an end of the prompt is a start of the reversed prompt."""
    pattern, text = prompt[::-1], query[::-1]
    fallback = [0] * len(pattern)  # the longest proper border of each start of `pattern`
    k = 0
    for i in range(1, len(pattern)):
        while k and pattern[i] != pattern[k]:
            k = fallback[k - 1]
        if pattern[i] == pattern[k]:
            k += 1
        fallback[i] = k
    ends = [0] * (len(text) + 1)
    k = 0
    for i, char in enumerate(text):
        while k and (k == len(pattern) or char != pattern[k]):
            k = fallback[k - 1]
        if k < len(pattern) and char == pattern[k]:
            k += 1
        ends[i + 1] = k
    return ends


def _after_header(query: str, count: int | None) -> int | None:
    """Where the response starts: after the query's `count`-th assistant turn header (the
    prompt's last), or, with no prompt (`count` None), after its only one (0 with none).
    None when the query has fewer (the prompt's headers are not there), or, with no
    prompt, several."""
    headers = list(itertools.islice(_HEADERS.finditer(query), count or 2))
    if count is None:
        return None if len(headers) > 1 else headers[0].end() if headers else 0
    return headers[count - 1].end() if count and len(headers) == count else None


def check_columns(n: int, **columns: Sequence[Any] | None) -> None:
    """Raise ValueError when a given column does not have one item per query."""
    for name, values in columns.items():
        if values is not None and len(values) != n:
            raise ValueError(f"{name} has {len(values)} items but query has {n}")


def openrlhf_samples(
    queries: Sequence[str],
    prompts: Sequence[Any] | None,
    labels: Sequence[Any] | None,
    metas: Sequence[Mapping[str, Any] | None] | None = None,
) -> tuple[list[Sample | InputError], list[bool]]:
    """One sample per query (ids 1, 2, ...), and whether each query's prompt was found.

    The label is the sample's `reference`, a meta its `metadata`; a prompt that is not text
    is neither cut from the query nor kept. A query whose response cannot be told from its
    prompt, or whose label is not a valid reference (nested too deep), is an `InputError`
    in its place: the engine scores it `invalid`.
    """
    check_columns(len(queries), prompts=prompts, labels=labels, metas=metas)
    samples: list[Sample | InputError] = []
    found: list[bool] = []
    for i, query in enumerate(queries):
        prompt = prompts[i] if prompts is not None else None
        prompt = prompt if isinstance(prompt, str) else None
        completion, ok = completion_from_query(str(query), prompt)
        found.append(ok)
        if completion is None:
            samples.append(
                InputError(
                    f"sample {i + 1}: the response cannot be told apart from the prompt (the "
                    "prompt is not in the query, nor its end, nor its assistant turn headers; "
                    "without a prompt, the query has several assistant turn headers)"
                )
            )
            continue
        meta = metas[i] if metas is not None else None
        try:
            sample = Sample(
                id=str(i + 1),
                completion=completion,
                prompt=prompt,
                reference=plain(labels[i]) if labels is not None else None,
                metadata=dict(meta) if meta else {},
            )
        except ValidationError as exc:
            error = exc.errors()[0]
            samples.append(InputError(f"sample {i + 1}: invalid sample: {error['msg']}"))
            continue
        samples.append(sample)
    return samples, found


def failure_reward(spec: RewardSpec) -> float:
    """The float given a failed sample: the spec's `on_error`, else 0.0."""
    return DEFAULT_FAILURE_REWARD if spec.on_error is None else float(spec.on_error)


def trainer_reward(spec: RewardSpec, result: Result) -> float:
    """The reward of a result as a float, for trainers that cannot take a missing reward.

    The total when there is one; else, for a failed sample, `failure_reward` (the spec's
    `on_error`, else 0.0); else 0.0 (a sample no component applied to: not a failure, so
    not `on_error`). Callers report the failure next to the number (`component_logs`).
    """
    if result.reward is not None:
        return float(result.reward)
    if result.status in FAILURE_STATUSES:
        return failure_reward(spec)
    return 0.0


def log_keys(spec: RewardSpec) -> dict[str, tuple[str, str]]:
    """Per component, its two log keys: its value and its failure flag (`<name>_failed`).

    A component named like a reserved key (`reward`, `score`, `failed`, `prompt_found`) is
    logged as `component_<name>`.

    Raises:
        ConfigError: two components would share a log key.
    """
    keys: dict[str, tuple[str, str]] = {}
    taken = set(_RESERVED_LOG_KEYS)
    for name in spec.rewards:
        value = f"component_{name}" if name in _RESERVED_LOG_KEYS else name
        pair = (value, f"{value}_failed")
        if taken & set(pair):
            raise ConfigError(
                f"rewards.{name}: its log keys {pair} clash with another component's; "
                "rename one of them"
            )
        taken.update(pair)
        keys[name] = pair
    return keys


def component_logs(spec: RewardSpec, result: Result) -> dict[str, float]:
    """Per-sample numbers for a trainer's logs, and for verl's per-component advantages
    (GDPO reads them): always numbers, never NaN, the same keys for every sample.

    - `failed`: 1.0 when the sample failed;
    - `<component>`: the value the total used for it: its score after gates and vetoes (as
      the TRL adapter splits the total, `component_values`), 0.0 where it does not count
      (not applicable, gate closed); for a component that failed, the spec's `on_error`,
      else 0.0;
    - `<component>_failed`: 1.0 when that component failed (`timeout`, `error`, `invalid`).
    """
    failure = failure_reward(spec)
    counted = component_values(spec, result.model_copy(update={"status": "ok"}))
    logs = {"failed": 1.0 if result.status in FAILURE_STATUSES else 0.0}
    for (name, (value_key, failed_key)), value in zip(log_keys(spec).items(), counted, strict=True):
        failed = result.components[name].status in FAILURE_STATUSES
        logs[value_key] = failure if failed else float(value or 0.0)
        logs[failed_key] = 1.0 if failed else 0.0
    return logs


def openrlhf_response(
    spec: RewardSpec, results: Sequence[Result], prompt_found: Sequence[bool]
) -> dict[str, Any]:
    """`{"rewards", "scores", "extra_logs"}` as lists of floats, one per sample.

    `rewards` and `scores` are `trainer_reward`. `extra_logs` is `component_logs` per key,
    plus `prompt_found` (1.0 where the whole prompt was found in the query).
    """
    rewards = [trainer_reward(spec, r) for r in results]
    rows = [component_logs(spec, r) for r in results]
    keys = ["failed", *(k for pair in log_keys(spec).values() for k in pair)]
    logs = {key: [row[key] for row in rows] for key in keys}
    logs["prompt_found"] = [float(f) for f in prompt_found]
    return {"rewards": rewards, "scores": list(rewards), "extra_logs": logs}
