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
  forge a step; those strings are removed from the completion before rendering (the count is
  reported), so the policy's text is read as text.
* **Truncation.** At most `max_length` tokens: ``right`` keeps the start, ``left`` keeps the
  end (the answer) and the leading BOS. Truncated inputs are reported.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..models import Message, Sample
from ..verifiers._common import answer_part

__all__ = [
    "Dialogue",
    "Encoded",
    "Template",
    "Tokenization",
    "Truncation",
    "dialogue",
    "load_tokenizer",
]

Template = Literal["model", "none"]
Truncation = Literal["left", "right"]
Turns = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Dialogue:
    """A sample as a model reads it: the prompt's turns and the response's."""

    prompt: Turns
    """Trusted turns (the dataset's prompt), as given."""
    response: Turns
    """The policy's turns: special-token strings are removed before rendering."""


@dataclass(frozen=True)
class Encoded:
    """One tokenized input, with what happened to it on the way."""

    ids: tuple[int, ...]
    bos_fixed: bool = False
    """The template's BOS was doubled by the tokenizer; it was tokenized again without."""
    truncated: bool = False
    stripped: int = 0
    """Special-token strings removed from the response."""

    def facts(self) -> dict[str, Any]:
        """What a score's `detail` reports about its input."""
        out: dict[str, Any] = {"tokens": len(self.ids)}
        if self.bos_fixed:
            out["bos_fixed"] = True
        if self.truncated:
            out["truncated"] = True
        if self.stripped:
            out["special_tokens_removed"] = self.stripped
        return out


def _text(content: Any) -> str:
    """A message's text: the string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _turns(value: str | Sequence[Message] | None, role: str) -> Turns:
    if value is None:
        return ()
    if isinstance(value, str):
        return ((role, value),)
    return tuple((m.role, _text(m.content)) for m in value)


def dialogue(sample: Sample, *, strip_think: bool, system: str | None = None) -> Dialogue:
    """The sample as a dialogue: an optional system turn, the prompt, then the completion as
    the assistant's turn (its answer part only with `strip_think`, as judges see it)."""
    prompt = _turns(sample.prompt, "user")
    if system is not None and not any(role == "system" for role, _ in prompt):
        prompt = (("system", system), *prompt)
    if isinstance(sample.completion, str):
        text = answer_part(sample.completion) if strip_think else sample.completion
        response: Turns = (("assistant", text),)
    else:
        response = _turns(sample.completion, "assistant")
        if strip_think:
            response = tuple(
                (role, answer_part(text) if role == "assistant" else text)
                for role, text in response
            )
    return Dialogue(prompt, response)


def load_tokenizer(path: str) -> Any:
    """The tokenizer in a local model folder (nothing downloaded)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, local_files_only=True)


_WARNED: set[str] = set()


class Tokenization:
    """Renders dialogues with a model's template and tokenizes them (see the module doc)."""

    def __init__(
        self,
        tokenizer: Any,
        *,
        template: Template,
        max_length: int,
        truncation: Truncation,
        reserved: Sequence[str] = (),
    ) -> None:
        """`reserved`: strings the response may not contain besides the special tokens
        (e.g. a PRM's step tag)."""
        self.tokenizer = tokenizer
        self.template = template
        self.max_length = max_length
        self.truncation = truncation
        if template == "model" and not getattr(tokenizer, "chat_template", None):
            raise ValueError(
                "the model's tokenizer has no chat template: set template: none, or use a "
                "tokenizer folder that has one"
            )
        special = {t for t in tokenizer.all_special_tokens if t}
        added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
        special |= {t.content for t in added.values() if getattr(t, "special", False)}
        self.reserved = sorted(special | {r for r in reserved if r}, key=len, reverse=True)
        self.bos_id = tokenizer.bos_token_id

    @property
    def pad_id(self) -> int:
        """The id to pad with when the model's config names none."""
        for candidate in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id):
            if candidate is not None:
                return int(candidate)
        return 0

    def clean(self, text: str) -> tuple[str, int]:
        """`text` without the reserved strings, and how many were removed."""
        removed = 0
        for token in self.reserved:
            count = text.count(token)
            if count:
                removed += count
                text = text.replace(token, "")
        return text, removed

    def render(self, turns: Turns) -> str:
        """The input text of these turns (clean the policy's turns first)."""
        if self.template == "none":
            return "".join(text for _, text in turns)
        messages = [{"role": role, "content": text} for role, text in turns]
        return str(self.tokenizer.apply_chat_template(messages, tokenize=False))

    def encode_dialogues(self, dialogues: Sequence[Dialogue]) -> list[Encoded]:
        """Each dialogue's response cleaned, rendered with the prompt, tokenized."""
        texts, removed = [], []
        for item in dialogues:
            response = []
            count = 0
            for role, text in item.response:
                text, n = self.clean(text)
                response.append((role, text))
                count += n
            texts.append(self.render((*item.prompt, *response)))
            removed.append(count)
        return self.encode(texts, removed)

    def encode(self, texts: Sequence[str], stripped: Sequence[int] = ()) -> list[Encoded]:
        """Token ids of rendered texts, BOS checked and truncated."""
        if not texts:
            return []
        stripped = list(stripped) or [0] * len(texts)
        rows = self.tokenizer(list(texts), add_special_tokens=True)["input_ids"]
        out = []
        for text, ids, removed in zip(texts, rows, stripped, strict=True):
            fixed = False
            if self.bos_id is not None and len(ids) >= 2 and ids[0] == ids[1] == self.bos_id:
                self._warn_doubled_bos()
                ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
                fixed = True
            ids, truncated = self._truncate(list(ids))
            out.append(Encoded(tuple(ids), bos_fixed=fixed, truncated=truncated, stripped=removed))
        return out

    def decode(self, ids: Sequence[int]) -> str:
        """The text of token ids, special tokens and spacing kept (it encodes back to them)."""
        return str(
            self.tokenizer.decode(
                list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False
            )
        )

    def _truncate(self, ids: list[int]) -> tuple[list[int], bool]:
        if len(ids) <= self.max_length:
            return ids, False
        if self.truncation == "right":
            return ids[: self.max_length], True
        keep_bos = self.bos_id is not None and ids[0] == self.bos_id
        head = ids[:1] if keep_bos else []
        return head + ids[len(ids) - (self.max_length - len(head)) :], True

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
