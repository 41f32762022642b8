"""The data contract: samples in, scores and results out. No I/O here.

Input (one JSON object per line)::

    {"id": "q1-0", "prompt": "..." | [messages], "completion": "..." | [messages],
     "reference": <anything the reward needs>, "metadata": {...}, "group": "q1"}

Output (one per input, same order)::

    {"id": "q1-0", "reward": 0.9 | null, "status": "ok" | "timeout" | ...,
     "components": {"correct": {"score": 1.0, "status": "ok", "detail": {...}}},
     "advantage": 0.7 | null,    # only with a group_transform
     "steps": [-0.2, 0.0]}       # only with combine: renorm
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Literal, TypeVar

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

__all__ = [
    "DEFAULT_CAUSES",
    "FAILURE_STATUSES",
    "MAX_DATA_URL_CHARS",
    "MAX_NESTING",
    "OMITTED_IMAGE",
    "Cause",
    "ContentPart",
    "ImageURL",
    "Message",
    "Result",
    "Sample",
    "Score",
    "Status",
    "built",
    "nested_deeper_than",
    "result_json",
]

_Model = TypeVar("_Model", bound=BaseModel)

Status = Literal["ok", "timeout", "error", "invalid", "not_applicable"]
"""How a score came about. Only `ok` carries a number that means what it says."""

FAILURE_STATUSES: tuple[Status, ...] = ("timeout", "error", "invalid")
"""Statuses that say the reward could not be computed (never to be read as a 0)."""

Cause = Literal["completion", "dataset", "infrastructure"]
"""Who made a reward fail: the policy's completion (it is charged for it), or the dataset or
the infrastructure (the sample is left out). Set by the reward that knows, as `detail.cause`."""

DEFAULT_CAUSES: dict[Status, Cause] = {
    "timeout": "completion",
    "error": "completion",
    "invalid": "dataset",
}
"""Who caused a failure whose reward did not say. A verifier that runs past its timeout or
crashes does so on what the policy wrote (leaving such a sample out of its group would turn
the failure into an escape from a low reward); `invalid` is, by definition, what the dataset
gave. Rewards whose failures come from elsewhere say so (a judge server that is down is
`infrastructure`)."""

_CAUSES = frozenset(DEFAULT_CAUSES.values()) | {"infrastructure"}

REFERENCE_ALIASES = ("reference", "ground_truth", "answer", "solution", "label")
"""Names trainers use for the gold field, in priority order; each is read as `reference`."""


_CONTRACT_KEYS = frozenset({"id", "completion", "prompt", "reference", "metadata", "group"})
_SAMPLE_KEYS = _CONTRACT_KEYS | frozenset(REFERENCE_ALIASES)

MAX_NESTING = 100
"""Deepest nesting of lists and objects in a sample. Deeper data cannot travel: pickling it to
a worker and writing it back in a result fail a few hundred levels down."""


def nested_deeper_than(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether `value` nests lists, tuples or dicts more than `limit` levels deep.

    Iterative, so any depth is measured without recursion.
    """
    containers = (dict, list, tuple)
    stack = [(value, 1)] if isinstance(value, containers) else []
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, containers))
    return False


_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
"""A UTF-16 surrogate alone in a str: valid in JSON text (``"\\ud800"``) and in a Python
str, but not encodable as UTF-8 (JavaScript tools that cut a string between the halves of an
emoji write them)."""
_IDENTIFIERS = ("id", "group")
"""Fields whose lone surrogates refuse the sample: replacing them could merge two ids."""


def _has_lone_surrogate(value: Any) -> bool:
    """Whether any str in `value` (dict keys included, any depth) holds a lone surrogate."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and _LONE_SURROGATE.search(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


def _replace_lone_surrogates(value: Any) -> Any:
    """`value` with every lone surrogate in its strings (dict keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_replace_lone_surrogates(k): _replace_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_replace_lone_surrogates(v) for v in value)
    return value


_new = object.__new__
_set = object.__setattr__
_SCORE_FIELDS = ("score", "status", "detail")


def built(model: type[_Model], values: dict[str, Any], fields_set: Iterable[str]) -> _Model:
    """`model.model_construct(fields_set, **values)`, for `values` that hold every field of
    a model with no private attributes and no extra ones (`Score`, `Result`, `Sample`), already
    validated: the same object without pydantic's lookups per field, three times faster
    (the server makes a score and a result per request). `fields_set`: the fields a dump
    with `exclude_unset` writes."""
    instance = _new(model)
    _set(instance, "__dict__", values)
    _set(instance, "__pydantic_fields_set__", set(fields_set))
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance


def result_json(result: Result) -> str:
    """One result as JSON (optional fields only when set), always encodable as UTF-8.

    A reward may copy text into `detail`; should that text hold a lone surrogate, it is
    written as its JSON escape (``\\ud800``, which `json.loads` reads back as it was)
    instead of failing the write: nothing a policy writes can stop its results from being
    written. Non-finite numbers are written as null either way.
    """
    try:
        return result.model_dump_json(exclude_unset=True)
    except pydantic_core.PydanticSerializationError:
        data = pydantic_core.to_jsonable_python(
            result.model_dump(exclude_unset=True), inf_nan_mode="null"
        )
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


MAX_DATA_URL_CHARS = 20 * 2**20
"""Longest image URL a part may carry (20 MiB of text, about 15 MB of image as a ``data:``
URL): a larger one would be copied to every worker and judge request. In the prompt it makes
the sample `invalid`; in the completion the image is replaced by an `OMITTED_IMAGE` part."""

OMITTED_IMAGE = "omitted_image"
"""The type of the part that stands in a completion for an image over `MAX_DATA_URL_CHARS`:
rewards read only text parts and judges see ``[omitted_image]``, so the policy's oversized
image is neither scored nor sent anywhere, and never makes its sample `invalid`."""


class ImageURL(BaseModel):
    """The ``image_url`` of an image part: a URL (``https:``, or ``data:`` with the image)."""

    model_config = ConfigDict(extra="allow")

    url: str
    """Where the image is, or the image itself as a ``data:`` URL."""


class ContentPart(BaseModel):
    """One part of a multimodal message, as the OpenAI chat API takes them:
    ``{"type": "text", "text": ...}`` or ``{"type": "image_url", "image_url": {"url": ...}}``.
    Other types are kept as they are; rewards read only the text parts."""

    model_config = ConfigDict(extra="allow")

    type: str
    text: str | None = None
    image_url: ImageURL | None = None

    @model_validator(mode="after")
    def _has_its_payload(self) -> ContentPart:
        if self.type == "text" and self.text is None:
            raise ValueError("a text part needs 'text'")
        if self.type == "image_url" and self.image_url is None:
            raise ValueError("an image_url part needs 'image_url': {'url': ...}")
        return self

    def as_sent(self) -> dict[str, Any]:
        """The part as it was given (what an OpenAI-compatible server receives)."""
        return self.model_dump(exclude_unset=True)

    @property
    def oversized(self) -> str | None:
        """Why the part's image is too large to carry (any scheme: ``DATA:`` is ``data:``),
        else None."""
        if self.image_url is None or len(self.image_url.url) <= MAX_DATA_URL_CHARS:
            return None
        size = len(self.image_url.url)
        return f"image URL of {size:,} characters is over the limit of {MAX_DATA_URL_CHARS:,}"


class Message(BaseModel):
    """One chat message."""

    model_config = ConfigDict(extra="allow")

    role: str
    """Speaker: `system`, `user`, `assistant`, `tool`..."""
    content: str | list[ContentPart] | None = None
    """Text of the message, or its parts (text and images); None for a message that only
    calls tools."""
    tool_calls: list[Any] | None = None
    """OpenAI-style tool calls of an assistant message, as the server returned them
    (checked by the rewards that read them, so a malformed call is the policy's error).
    Arguments nested more than `MAX_NESTING` levels deep are kept as their JSON text (a call
    deep elsewhere, as a whole), so the sample can travel to a worker and into a result."""

    @field_validator("tool_calls")
    @classmethod
    def _shallow_calls(cls, calls: list[Any] | None) -> list[Any] | None:
        if calls is None or not nested_deeper_than(calls, MAX_NESTING):
            return calls
        return [_shallow_call(call) for call in calls]

    @property
    def text(self) -> str:
        """The text of the message: its content, or its text parts joined by newlines."""
        if isinstance(self.content, list):
            return "\n".join(p.text for p in self.content if p.type == "text" and p.text)
        return self.content or ""

    @property
    def images(self) -> list[ContentPart]:
        """The message's image parts, in order."""
        if not isinstance(self.content, list):
            return []
        return [p for p in self.content if p.type == "image_url"]


def _as_text(value: Any) -> str:
    """`value` as JSON text; a placeholder when even that is too deep to write."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (RecursionError, ValueError):
        return f"<nested more than {MAX_NESTING} levels deep>"


def _shallow_call(call: Any) -> Any:
    """One tool call within `MAX_NESTING` levels (counted from the message's call list):
    too-deep arguments become JSON text; a call still too deep becomes JSON text itself."""
    if not nested_deeper_than(call, MAX_NESTING - 1):
        return call
    if isinstance(call, dict):
        call = dict(call)
        holder = call
        if isinstance(call.get("function"), dict):
            holder = call["function"] = dict(call["function"])
        for key in ("arguments", "parameters"):
            if nested_deeper_than(holder.get(key), MAX_NESTING - 3):
                holder[key] = _as_text(holder[key])
        if not nested_deeper_than(call, MAX_NESTING - 1):
            return call
    return _as_text(call)


def _columns(data: dict[str, Any]) -> dict[str, Any]:
    """A trainer's dataset row mapped onto the sample contract.

    The first gold column present, in the order of `REFERENCE_ALIASES`, becomes `reference`
    (MATH rows carry both `answer` and `solution`: the final answer wins). Other gold columns
    and unknown columns (e.g. `level`) travel in `metadata`, as dataset columns do in TRL.
    """
    if _CONTRACT_KEYS.issuperset(data.keys()):  # the common case: nothing to move
        return data
    gold = next((k for k in REFERENCE_ALIASES if k in data), None)
    extra = {
        k: v
        for k, v in data.items()
        if k not in _SAMPLE_KEYS or (k in REFERENCE_ALIASES and k != gold)
    }
    if not extra and gold in (None, "reference"):
        return data
    known = {k: v for k, v in data.items() if k in _SAMPLE_KEYS and k not in extra}
    if gold is not None:
        known["reference"] = known.pop(gold)
    metadata = known.get("metadata") or {}
    if not isinstance(metadata, dict):
        return data  # let field validation report the bad metadata
    if extra:
        known["metadata"] = {**extra, **metadata}
    return known


class Sample(BaseModel):
    """One model completion to reward, with what the reward needs to judge it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """Stable identifier; defaults to the 1-based input line number."""
    completion: str | list[Message]
    """The text to reward, or a conversation whose last assistant turn is rewarded."""
    prompt: str | list[Message] | None = None
    """The prompt that produced the completion."""
    reference: Any = None
    """Gold answer, tests, rubric: whatever the reward needs (aliases: ground_truth, answer,
    solution, label)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form extras, passed through to rewards."""
    group: str | None = None
    """Samples sharing a group answer the same prompt (for group transforms)."""

    @model_validator(mode="before")
    @classmethod
    def _arrives(cls, data: Any) -> Any:
        """Map a trainer's dataset row onto the contract (`_columns`); then refuse data too
        deep to travel, and replace lone surrogates (U+FFFD) in the text fields, which could
        not be written as UTF-8: the policy's completion is scored as what it says (never
        made `invalid` for it), and no result that echoes it fails to be written. `id` and
        `group` keep theirs, and are refused for them (`_ids_writable`). One validator, not
        one per step: each costs a call for every sample the server takes."""
        if not isinstance(data, dict):
            return data
        data = _columns(data)
        if nested_deeper_than(data):
            raise ValueError(f"nested more than {MAX_NESTING} levels deep")
        if not _has_lone_surrogate(data):
            return data
        return {k: v if k in _IDENTIFIERS else _replace_lone_surrogates(v) for k, v in data.items()}

    @field_validator("id", "group", mode="before")
    @classmethod
    def _ids_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("id", "group")
    @classmethod
    def _ids_writable(cls, value: str | None) -> str | None:
        if value is not None and _has_lone_surrogate(value):
            raise ValueError(
                "has a lone UTF-16 surrogate (half of a character): it cannot be written "
                "as UTF-8, and replacing it could make two ids one"
            )
        return value

    @field_validator("completion")
    @classmethod
    def _has_an_assistant_message(cls, value: str | list[Message]) -> str | list[Message]:
        """A chat completion holds the policy's answer as `assistant` messages: one without
        (roles spelled `model`, `gpt`, `Assistant`, or only tool results) is the pipeline's
        wrapping, not an empty answer, which would score as one (`length`'s best)."""
        if isinstance(value, list) and not any(m.role == "assistant" for m in value):
            raise ValueError("no assistant message in the completion")
        return value

    @model_validator(mode="after")
    def _images_within_the_limit(self) -> Sample:
        """An oversized image in the prompt (the dataset's) makes the sample invalid; one in
        the completion (the policy's side) is replaced by an `OMITTED_IMAGE` part, so what
        the policy produced is scored, never turned into a null."""
        if not isinstance(self.completion, list) and not isinstance(self.prompt, list):
            return self  # text only: no part to look at
        for side in ("prompt", "completion"):
            messages = getattr(self, side)
            for i, message in enumerate(messages if isinstance(messages, list) else []):
                parts = message.content if isinstance(message.content, list) else []
                for j, part in enumerate(parts):
                    problem = part.oversized
                    if problem is None:
                        continue
                    if side == "prompt":
                        raise ValueError(f"prompt[{i}].content[{j}].image_url.url: {problem}")
                    parts[j] = ContentPart(type=OMITTED_IMAGE, reason=problem)
        return self

    @property
    def text(self) -> str:
        """The completion as text: the string itself, or the last assistant message's text
        (a validated chat has one: `_has_an_assistant_message`)."""
        if isinstance(self.completion, str):
            return self.completion
        final = self.final_turn
        return final.text if final is not None else ""

    @property
    def final_turn(self) -> Message | None:
        """The message a conversation is scored on: its last assistant message; None for a
        text completion (or an unvalidated chat without one). Only the policy writes as `assistant`:
        a tool result or a user message is never read as its answer."""
        if isinstance(self.completion, str):
            return None
        for message in reversed(self.completion):
            if message.role == "assistant":
                return message
        return None


class Score(BaseModel):
    """What one reward component says about one sample."""

    score: float | None
    """The value; None unless status is `ok`."""
    status: Status = "ok"
    """`ok`, or why there is no score."""
    detail: dict[str, Any] = Field(default_factory=dict)
    """Evidence: the extracted answer, the reason, per-test outcomes..."""

    @classmethod
    def ok(cls, value: float, **detail: Any) -> Score:
        """A computed score."""
        return cls(score=float(value), status="ok", detail=detail)

    @classmethod
    def failed(
        cls, status: Status, reason: str, *, cause: Cause | None = None, **detail: Any
    ) -> Score:
        """No score, with the reason why (`timeout`, `error`, `invalid`, `not_applicable`),
        and for a failure, who caused it when the reward knows (else `DEFAULT_CAUSES`)."""
        if cause is not None:
            detail["cause"] = cause
        return cls(score=None, status=status, detail={"reason": reason, **detail})

    @classmethod
    def received(cls, value: float | None, status: Status, detail: dict[str, Any]) -> Score:
        """A score as a worker sent it: its fields, validated where it was made."""
        return built(cls, {"score": value, "status": status, "detail": detail}, _SCORE_FIELDS)

    @property
    def cause(self) -> Cause | None:
        """Who caused this failure (`detail.cause`, else the status's default); None unless
        the status is a failure."""
        if self.status not in FAILURE_STATUSES:
            return None
        given = self.detail.get("cause")
        return given if given in _CAUSES else DEFAULT_CAUSES[self.status]

    @property
    def passed(self) -> bool:
        """True when the component scored above zero (the meaning of a gate passing)."""
        return self.status == "ok" and self.score is not None and self.score > 0


class Result(BaseModel):
    """The combined reward of one sample, with every component's score."""

    id: str
    """The sample's id."""
    reward: float | None
    """Combined reward; None when a component failed and the spec gives no fallback."""
    status: Status
    """`ok`, or the status of the failure that decided the total."""
    components: dict[str, Score]
    """Every component of the spec, in spec order, for every sample."""
    advantage: float | None = None
    """The sample's advantage within its group (spec `group_transform:`); written only when
    the spec has one, and then null for a sample that did not score."""
    steps: list[float] | None = None
    """Per-step rewards of a process-supervised trajectory (`combine: renorm`), in step order,
    the answer step last; `reward` is ReNorm's scalar from them (see `combine: renorm`).
    Written only by ReNorm."""

    @property
    def cause(self) -> Cause | None:
        """Who caused this result's failure; None unless its status is a failure.

        `completion` when any failed component's failure is the completion's (a sample that
        timed out one verifier is charged even if another found its reference bad), or when
        no component failed (the combination itself failed on the scores); else the cause of
        the first failed component.
        """
        if self.status not in FAILURE_STATUSES:
            return None
        causes = [s.cause for s in self.components.values() if s.status in FAILURE_STATUSES]
        return "completion" if not causes or "completion" in causes else causes[0]
