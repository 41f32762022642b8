"""What a model reward reads: the sample as a dialogue, rendered with the reward model's own
chat template and tokenized as the model was trained, the same for every backend.

The pitfalls of feeding a reward model are handled here, once:

* **The RM's template, not the policy's.** The model sees the prompt's messages and the
  completion as the assistant's turn through *its* chat template (``template: model``), never
  a string the policy's template produced. ``template: none`` concatenates the texts as given
  (for models trained on raw text, or prompts that already carry a template).
* **The doubled BOS.** A template that writes the BOS token, tokenized again with the default
  ``add_special_tokens=True``, starts with two BOS tokens and scores differently (the pitfall
  verl and OpenRLHF users meet). Each tokenized input is checked: on a doubled BOS a warning is
  given once per process and the input is tokenized again with ``add_special_tokens=False``.
* **Special tokens written by the policy.** A completion containing the model's special-token
  strings (``<|im_end|>``, a step tag...) could close its own turn and write a fake one, or
  forge a step; those strings are removed from the completion before rendering, until none
  is left (``<|im_<|im_end|>end|>`` loses both; the count is reported), so the policy's text
  is read as text. The template's own text around the completion is not checked: with
  ``template: none``, or a template whose role headers are plain text (``User:``), a
  completion can still write a fake turn header.
* **Length.** At most `max_length` tokens, and nothing is cut: a model reads the whole
  question and the whole answer, or is not asked. A prompt that does not fit on its own (with
  the template's text) raises `PromptTooLong` (the dataset's doing); an answer that does not
  fit with the prompt raises `AnswerTooLong` (the completion's: a cut answer could hide what
  it says, so this is a length limit a long-winded policy pays for).
* **The answer part.** With `strip_think`, the model reads everything after the *first*
  ``</think>`` (what a reader sees), not after the last as the verifiers' `answer_part`, and
  the ``<think>`` and ``</think>`` left in it are removed as special tokens are: a stray
  ``</think>`` hides nothing, even from a template that splits the answer at the last one
  (Qwen3's).
* **What the template writes.** Each response text must appear in its own turn's part of the
  rendered input (after what the turns before it render to) as given, whitespace aside (a
  template may re-space around its markers); a template that rewrote it raises
  `AnswerRewritten` when a plain answer of the same shape (a think block or not) would have
  been written as given (the completion's doing), else `Unshown`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..judges._prompts import tool_calls_text
from ..models import Message, Sample, Score
from ..verifiers._completion_parts import THINK_CLOSE, THINK_OPEN
from ..verifiers._words import visible

__all__ = [
    "AnswerRewritten",
    "AnswerTooLong",
    "Dialogue",
    "Encoded",
    "PromptTooLong",
    "Template",
    "Tokenization",
    "Unshown",
    "dialogue",
    "has_text",
    "images_unread",
    "load_tokenizer",
    "prompt_text",
    "shown_answer",
    "without_think_tags",
]

Template = Literal["model", "none"]
Turns = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Dialogue:
    """A sample as a model reads it: the prompt's turns and the response's."""

    prompt: Turns
    """Trusted turns (the dataset's prompt), as given."""
    response: Turns
    """The policy's turns: special-token strings are removed before rendering."""

    @property
    def answer(self) -> str:
        """The last assistant turn's text (with its tool calls): the answer."""
        return next((text for role, text in reversed(self.response) if role == "assistant"), "")


@dataclass(frozen=True)
class Encoded:
    """One tokenized input, with what happened to it on the way."""

    ids: tuple[int, ...]
    bos_fixed: bool = False
    """The template's BOS was doubled by the tokenizer; it was tokenized again without."""
    stripped: int = 0
    """Special-token strings removed from the response."""

    def facts(self) -> dict[str, Any]:
        """What a score's `detail` reports about its input."""
        out: dict[str, Any] = {"tokens": len(self.ids)}
        if self.bos_fixed:
            out["bos_fixed"] = True
        if self.stripped:
            out["special_tokens_removed"] = self.stripped
        return out


def _turn_text(message: Message, strip_think: bool) -> str:
    """A turn as the model reads it: its text (an assistant's answer part with `strip_think`),
    then the tool calls it makes as the judges show them (a turn that only calls a tool
    commits something: it is not empty)."""
    text = message.text
    if strip_think and message.role == "assistant":
        text = shown_answer(text)
    calls = tool_calls_text(message)
    return f"{text}\n{calls}" if text and calls else text or calls


def _turns(value: str | Sequence[Message] | None, role: str, strip_think: bool = False) -> Turns:
    if value is None:
        return ()
    if isinstance(value, str):
        return ((role, value),)
    return tuple((m.role, _turn_text(m, strip_think)) for m in value)


def prompt_text(sample: Sample) -> str:
    """The prompt as plain text: its non-system turns' texts (`Message.text`), a blank line
    between them."""
    if isinstance(sample.prompt, str):
        return sample.prompt
    if isinstance(sample.prompt, list):
        return "\n\n".join(m.text for m in sample.prompt if m.role != "system" and m.text)
    return ""


def shown_answer(text: str) -> str:
    """What a reader sees as the answer: everything after the first ``</think>``; nothing when
    a ``<think>`` is never closed."""
    if THINK_CLOSE in text:
        return text.split(THINK_CLOSE, 1)[1]
    return "" if THINK_OPEN in text else text


def has_text(text: str) -> bool:
    """Whether `text` has a visible character (zero-width and other ignorable code points,
    and whitespace, are not)."""
    return bool(visible(text).strip())


Read = Literal["all", "assistant", "final"]
"""The completion's turns a reward reads: every turn, the assistant's, or the final one."""


def _read_turns(sample: Sample, completion: Read) -> list[Message]:
    """The completion's messages a reward reading `completion` sees."""
    if not isinstance(sample.completion, list):
        return []
    if completion == "final":
        return [sample.final_turn] if sample.final_turn is not None else []
    return [m for m in sample.completion if completion == "all" or m.role == "assistant"]


def images_unread(sample: Sample, *, prompt: bool = True, completion: Read = "all") -> Score | None:
    """An `error` (`infrastructure`) when a turn the model reads (the prompt's if `prompt`,
    the completion's it reads) has images: a text-only model would score the sample without
    them (as the text-only judges, it does not). An image in a turn it does not read is not
    its to refuse: a policy could call a tool that returns one to leave its group. None
    otherwise."""
    prompt_turns = sample.prompt if prompt and isinstance(sample.prompt, list) else []
    for message in (*prompt_turns, *_read_turns(sample, completion)):
        if message.images:
            return Score.failed(
                "error",
                "the model reads text only and this sample has images: it is not scored "
                "without them",
                cause="infrastructure",
            )
    return None


class Unshown(ValueError):
    """The sample cannot be shown to the model, not by the completion's doing."""

    def score(self) -> Score:
        """`invalid`: the dataset's or the spec's doing, left out of its group."""
        return Score.failed("invalid", str(self))


class PromptTooLong(Unshown):
    """The prompt alone (with the template's text around the completion) does not fit in
    `max_length` tokens: the dataset's doing."""


class AnswerRewritten(Unshown):
    """The template rewrote the answer's text, which a plain answer avoids: the completion's
    doing."""

    def score(self) -> Score:
        """An `error` charged to the completion."""
        return Score.failed("error", str(self), cause="completion")


class AnswerTooLong(ValueError):
    """The answer does not fit in `max_length` tokens (with the prompt): the completion's
    doing. It is not shown: a model reads the whole answer or none of it, since a cut answer
    could hide what it says (a length limit a long-winded policy pays for)."""

    def __init__(self, max_length: int, tokens: int) -> None:
        super().__init__(f"the answer did not fit in max_length={max_length} tokens")
        self.tokens = tokens

    def facts(self) -> dict[str, Any]:
        """What a score's `detail` reports about the input not shown."""
        return {"tokens": self.tokens, "truncated": True}


def dialogue(sample: Sample, *, strip_think: bool, system: str | None = None) -> Dialogue:
    """The sample as a dialogue: an optional system turn, the prompt, then the completion as
    the assistant's turn (its answer part only with `strip_think`: `shown_answer`)."""
    prompt = _turns(sample.prompt, "user")
    if system is not None and not any(role == "system" for role, _ in prompt):
        prompt = (("system", system), *prompt)
    if isinstance(sample.completion, str):
        text = shown_answer(sample.completion) if strip_think else sample.completion
        response: Turns = (("assistant", text),)
    else:
        response = _turns(sample.completion, "assistant", strip_think)
    return Dialogue(prompt, response)


def load_tokenizer(path: str) -> Any:
    """The tokenizer in a local model folder (nothing downloaded)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, local_files_only=True)


_WARNED: set[str] = set()


def _unspaced(text: str) -> str:
    """`text` without whitespace: what a template's re-spacing leaves unchanged."""
    return "".join(text.split())


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of `a` and `b`."""
    size = min(len(a), len(b))
    return next((i for i in range(size) if a[i] != b[i]), size)


class Remover:
    """Removes strings from a text until none is left (see `__call__`)."""

    def __init__(self, strings: Sequence[str]) -> None:
        self._ending: dict[str, list[str]] = {}
        for token in sorted({t for t in strings if t}, key=len, reverse=True):
            self._ending.setdefault(token[-1], []).append(token)

    def __call__(self, text: str) -> tuple[str, int]:
        """`text` without the strings, removed until none is left (a string rebuilt by a
        removal is removed too), and how many removals it took.

        One pass, left to right: each character is appended, and a string the
        appended text now ends with is dropped. The kept text never contains one: it is a
        prefix of text that did not."""
        kept: list[str] = []
        removed = 0
        for char in text:
            kept.append(char)
            for token in self._ending.get(char, ()):
                if len(kept) >= len(token) and "".join(kept[-len(token) :]) == token:
                    del kept[-len(token) :]
                    removed += 1
                    break
        return ("".join(kept), removed) if removed else (text, 0)


_THINK_TAGS = Remover((THINK_OPEN, THINK_CLOSE))


def without_think_tags(text: str) -> str:
    """`text` with every ``<think>`` and ``</think>`` removed, until none is left."""
    return _THINK_TAGS(text)[0]


_PLAIN = "rewardsmith plain answer"
"""An answer no template has a reason to rewrite."""


def _plain(text: str) -> str:
    """A plain answer of `text`'s shape: with a think block when `text` has one, so a
    template that drops every reasoning rewrites it too."""
    return f"{THINK_OPEN}{_PLAIN}{THINK_CLOSE}{_PLAIN}" if THINK_CLOSE in text else _PLAIN


class Tokenization:
    """Renders dialogues with a model's template and tokenizes them (see the module doc)."""

    def __init__(
        self,
        tokenizer: Any,
        *,
        template: Template,
        max_length: int,
        reserved: Sequence[str] = (),
        strip_think: bool = False,
    ) -> None:
        """`reserved`: strings the response may not contain besides the special tokens
        (e.g. a PRM's step tag). `strip_think`: the response is an answer part, so
        ``<think>`` and ``</think>`` are reserved too (a template that splits the answer at
        them would drop text)."""
        self.tokenizer = tokenizer
        self.template = template
        self.max_length = max_length
        if template == "model" and not getattr(tokenizer, "chat_template", None):
            raise ValueError(
                "the model's tokenizer has no chat template: set template: none, or use a "
                "tokenizer folder that has one"
            )
        special = {t for t in tokenizer.all_special_tokens if t}
        added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
        special |= {t.content for t in added.values() if getattr(t, "special", False)}
        reserved = (*reserved, THINK_OPEN, THINK_CLOSE) if strip_think else reserved
        self.reserved = sorted(special | {r for r in reserved if r}, key=len, reverse=True)
        self.clean = Remover(self.reserved)
        """`clean(text)`: the text without the reserved strings, and the removals' count."""
        self.bos_id = tokenizer.bos_token_id

    @property
    def pad_id(self) -> int:
        """The id to pad with when the model's config names none."""
        for candidate in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id):
            if candidate is not None:
                return int(candidate)
        return 0

    def render(self, turns: Turns) -> str:
        """The input text of these turns (clean the policy's turns first)."""
        if self.template == "none":
            return "".join(text for _, text in turns)
        messages = [{"role": role, "content": text} for role, text in turns]
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False))

    def encode_dialogues(self, dialogues: Sequence[Dialogue]) -> list[Encoded]:
        """Each dialogue's response cleaned, rendered with the prompt, tokenized."""
        out = []
        for item in dialogues:
            response = []
            count = 0
            for role, text in item.response:
                text, n = self.clean(text)
                response.append((role, text))
                count += n
            out.append(self.encode(item.prompt, tuple(response), count))
        return out

    def encode(self, prompt: Turns, response: Turns, stripped: int = 0) -> Encoded:
        """Token ids of the prompt and a response (already cleaned), BOS checked. Nothing is
        cut: a model reads the whole question and the whole answer, or is not asked (raises
        `PromptTooLong`, `AnswerTooLong`, `AnswerRewritten` or `Unshown`)."""
        text = self.render((*prompt, *response))
        self._check_shown(prompt, response, text)
        ids, fixed = self._tokenize(text)
        if len(ids) > self.max_length:
            blank = tuple((role, "") for role, _ in response)
            around = len(self._tokenize(self.render((*prompt, *blank)))[0])
            if around >= self.max_length:
                raise PromptTooLong(
                    f"the prompt and the template's text take {around} tokens: "
                    f"more than max_length={self.max_length} leaves for the completion"
                )
        self.fit(ids)
        return Encoded(tuple(ids), bos_fixed=fixed, stripped=stripped)

    def fit(self, ids: Sequence[int]) -> None:
        """Raises `AnswerTooLong` when `ids` (an input with the answer, or the answer alone)
        exceed `max_length`."""
        if len(ids) > self.max_length:
            raise AnswerTooLong(self.max_length, len(ids))

    def _tokenize(self, text: str) -> tuple[list[int], bool]:
        """The ids of a rendered `text`, and whether a doubled BOS was fixed."""
        ids = self.tokenizer(text, add_special_tokens=True)["input_ids"]
        fixed = self.bos_id is not None and len(ids) >= 2 and ids[0] == ids[1] == self.bos_id
        if fixed:
            self._warn_doubled_bos()
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return ids, fixed

    def _check_shown(self, prompt: Turns, response: Turns, text: str) -> None:
        """Raises when the template did not write each response text in its own turn's part
        of `text`, whitespace aside: a template can rewrite (Qwen3's splits an answer at
        ``</think>`` and drops part of it), and only re-spaces text around its markers.
        Another turn's part is not searched: a question or a tool result quoting the answer
        would hide a rewrite. The completion's doing (`AnswerRewritten`) when a plain answer
        of the same shape (with a think block where the text has one) after the same prompt
        is written as given; else the template's or the spec's (`Unshown`: a template that
        drops every reasoning, with ``strip_think: false``)."""
        if self._shown(prompt, response, text):
            return
        plain = tuple((role, _plain(answer)) for role, answer in response)
        if self._shown(prompt, plain, self.render((*prompt, *plain))):
            raise AnswerRewritten("the model's chat template rewrote the answer's text")
        raise Unshown("the model's chat template rewrites any answer of this shape here")

    def _shown(self, prompt: Turns, response: Turns, text: str) -> bool:
        """Whether each response text is in its turn's part of `text`, whitespace aside: from
        where the render of the turns before it stops matching `text` to where the render
        through it does."""
        starts = [
            _common_prefix(self.render((*prompt, *response[:i])), text) if prompt or i else 0
            for i in range(len(response))
        ]
        ends = [*starts[1:], len(text)]
        return all(
            _unspaced(answer) in _unspaced(text[start:end])
            for (_, answer), start, end in zip(response, starts, ends, strict=True)
        )

    def decode(self, ids: Sequence[int]) -> str:
        """The text of token ids, special tokens and spacing kept (it encodes back to them)."""
        return str(
            self.tokenizer.decode(
                list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False
            )
        )

    def _warn_doubled_bos(self) -> None:
        name = str(getattr(self.tokenizer, "name_or_path", "") or "the tokenizer")
        if name in _WARNED:
            return
        _WARNED.add(name)
        warnings.warn(
            f"{name}: the chat template already writes the BOS token and tokenizing added a "
            "second one; inputs are tokenized with add_special_tokens=False instead",
            stacklevel=3,
        )
