"""Judge modes: pointwise (G-Eval), pairwise (both orders), group (listwise, RULER-style),
reference equivalence, and principles + critique with k samples voted (DeepSeek-GRM).

Each is a reward type taking the backend options every judged reward takes (`COMMON`).
"""

from __future__ import annotations

import math
import random
import re
from typing import Any, Literal

from .._exceptions import ConfigError
from ..models import Sample, Score
from ..registry import RewardFn, bounded, reward
from ..verifiers._words import as_read
from ._backends import ContextOverflow, InputRejected, JudgeReply
from ._judge import COMMON, Judge, Unparseable, gather_bounded, judge_settings, unparsed
from ._prompts import (
    choice_schema,
    escaped,
    group_messages,
    pair_messages,
    parse_choice,
    parse_ranking,
    parse_rating,
    parse_yes_no,
    principles_messages,
    rating_messages,
    reference_messages,
    verdict_schema,
)

__all__ = [
    "judge_group",
    "judge_pairwise",
    "judge_pointwise",
    "judge_principles",
    "judge_reference",
]

Backend = Literal["local", "openai"]
Dialect = Literal["auto", "json_schema", "json_object", "none"]
Runtime = Literal["transformers", "llama_cpp"]


def _judge(options: dict[str, Any]) -> Judge:
    return judge_settings(**{k: v for k, v in options.items() if k in COMMON})


def _reference_text(reference: Any) -> str | None:
    if isinstance(reference, str | int | float) and not isinstance(reference, bool):
        return str(reference)
    if isinstance(reference, dict):
        for key in ("answer", "response", "text", "reference"):
            if isinstance(reference.get(key), str):
                return str(reference[key])
    return None


# -- pointwise ------------------------------------------------------------------------------------


@reward("judge_pointwise", preload=("httpx",))
def judge_pointwise(
    *,
    instruction: str = "Rate the overall quality of the response: correctness, helpfulness, "
    "clarity.",
    scale_min: int = 1,
    scale_max: int = 5,
    expectation: bool = True,
    backend: Backend = "local",
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    max_concurrency: int = 8,
    request_timeout_s: float = 20.0,
    max_retries: int = 3,
    structured_output: Dialect = "auto",
    cache: bool | str = True,
    parse_retries: int = 2,
    deadline_s: float = 50.0,
    temperature: float = 0.0,
    top_logprobs: int = 10,
    guard: bool = True,
    guard_openers: list[str] | None = None,
    strip_think: bool = True,
    n_ctx: int = 2048,
    n_threads: int | None = None,
    runtime: Runtime = "transformers",
) -> RewardFn:
    """A score on a scale, normalised to [0, 1]: the strictly parsed integer, or with
    `expectation` and logprobs the probability-weighted mean over the scale's ratings
    (G-Eval), ratings of several tokens included (see `Judge.rate`).
    """
    if not 0 <= scale_min < scale_max <= 100:
        raise ConfigError(f"scale: need 0 <= scale_min < scale_max <= 100, got {scale_min}..")
    judge = _judge(locals())
    span = scale_max - scale_min

    async def judged(sample: Sample, text: str) -> Score:
        messages = rating_messages(
            judge.conversation(sample), text, instruction, scale_min, scale_max
        )
        rating, expected, detail, reply = await judge.rate(messages, scale_min, scale_max, 6)
        value = expected if expectation and expected is not None else float(rating)
        return Score.ok(
            (value - scale_min) / span,
            rating=rating,
            expected_rating=expected,
            **detail,
            cached=reply.cached,
        )

    def score(sample: Sample) -> Score:
        text = judge.text_of(sample)
        return judge.guarded(text) or judge.run(judged(sample, text))

    return bounded(score, 0.0, 1.0)


# -- pairwise -------------------------------------------------------------------------------------

_NAMES_LABEL = re.compile(
    r"\b(?:response|answer|assistant|output|option|candidate|completion)[^\w\n.,;!?]{0,3}"
    r"(?:(?-i:[AB])|\((?-i:[ABab])\))(?!\w)"
    r"|\[\[\s*(?-i:[AB])\s*\]\]"
    r"|\b(?-i:[AB])\s+is\s+(?:the\s+)?(?:better|best|winner|preferred)\b"
    r"|\b(?:first|second|former|latter)\s+(?:response|answer|one|output|completion|option)\b",
    re.I,
)
"""How a response names a label or a position of the pair ("Response B", "Response: B",
"Assistant A", "[[B]]", "A is better", "the second response"): in one of the two orders the
label is its own, so a judge that follows it disagrees with itself. Up to three characters
may part the word and the letter, none ending a sentence or clause ("my answer. A new ..."
names nothing). Searched by `_names_label`."""
_EMPHASIS_AND_QUOTES = re.compile(r"[*_`\"'\u2018\u2019\u201c\u201d\u00ab\u00bb]")


def _names_label(text: str) -> bool:
    """Whether `text`, as a reader reads it (`as_read`, every look-alike letter Latin, so a
    lone Greek "Β" is B), without markdown emphasis and quotes ("Response **B**",
    "Response \"B\""), names a label or a position of the pair (`_NAMES_LABEL`)."""
    read = _EMPHASIS_AND_QUOTES.sub("", as_read(text, every_word=True))
    return _NAMES_LABEL.search(read) is not None


def _pair_value(first: str, second: str, names_label: bool) -> float:
    """1 when both orders prefer the completion (A first, B second), 0 when both prefer the
    other, else 0.5; a disagreement is lost (0) by a completion that names a label or a
    position, which is how it turns a loss into a tie under a judge that follows it."""
    if first == "A" and second == "B":
        return 1.0
    if first == "B" and second == "A":
        return 0.0
    agreed = first == second == "TIE"
    return 0.0 if names_label and not agreed else 0.5


@reward("judge_pairwise", preload=("httpx",))
def judge_pairwise(
    *,
    against: Literal["reference", "metadata"] = "reference",
    opponent_key: str = "opponent",
    instruction: str = "Judge correctness, helpfulness and clarity.",
    backend: Backend = "local",
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    max_concurrency: int = 8,
    request_timeout_s: float = 20.0,
    max_retries: int = 3,
    structured_output: Dialect = "auto",
    cache: bool | str = True,
    parse_retries: int = 2,
    deadline_s: float = 50.0,
    temperature: float = 0.0,
    top_logprobs: int = 10,
    guard: bool = True,
    guard_openers: list[str] | None = None,
    strip_think: bool = True,
    n_ctx: int = 2048,
    n_threads: int | None = None,
    runtime: Runtime = "transformers",
) -> RewardFn:
    """1 if the completion beats the other answer, 0 if it loses, 0.5 for a tie.

    The other answer is the reference (`against: reference`) or another sample's completion
    in `metadata[opponent_key]`. Judged in both orders (completion as A, then as B); a win or
    a loss counts only when both orders agree, anything else is a tie (position bias cancels),
    lost by a completion that names a label (`_pair_value`). A sibling the guard stops is
    beaten without asking the judge.
    """
    judge = _judge(locals())

    async def judged(sample: Sample, text: str, other: str) -> Score:
        conversation = judge.conversation(sample)

        def parse(reply: JudgeReply) -> str | None:
            return parse_choice(reply.text, ("A", "B", "TIE"))

        schema = choice_schema(("A", "B", "TIE"))

        (first, r1), (second, r2) = await gather_bounded(
            [
                judge.ask(
                    pair_messages(conversation, text, other, instruction),
                    parse,
                    6,
                    retry_schema=schema,
                ),
                judge.ask(
                    pair_messages(conversation, other, text, instruction),
                    parse,
                    6,
                    retry_schema=schema,
                ),
            ],
            max_concurrency,
        )
        names_label = _names_label(text)
        value = _pair_value(first, second, names_label)
        outcome = {1.0: "win", 0.0: "loss", 0.5: "tie"}[value]
        agreed = (first, second) in (("A", "B"), ("B", "A"), ("TIE", "TIE"))
        extra = {"names_label": True} if names_label else {}
        return Score.ok(
            value,
            outcome=outcome,
            completion_first=first,
            completion_second=second,
            agreed=agreed,
            cached=r1.cached and r2.cached,
            **extra,
        )

    def opponent_guarded(other: str) -> Score | None:
        """A win, without asking the judge, over a sibling that is a master key (empty once
        its reasoning is stripped, punctuation, openers): it scores 0 on its own."""
        rule = judge.sibling_guard(other)
        if rule is None:
            return None
        reason = f"the opponent is not sent to the judge: {rule}"
        return Score.ok(1.0, outcome="win", opponent_guard=rule, reason=reason)

    def score(sample: Sample) -> Score:
        if against == "metadata":
            other = sample.metadata.get(opponent_key)
            if not isinstance(other, str):
                reason = f"no answer to compare against in metadata.{opponent_key}"
                return Score.failed("not_applicable", reason)
        else:
            other = _reference_text(sample.reference)
            if other is None or not other.strip():
                return Score.failed("not_applicable", "no answer to compare against in reference")
        text = judge.text_of(sample)
        own = judge.guarded(text)
        if own is not None:
            return own
        if against == "metadata":
            won = opponent_guarded(other)
            if won is not None:
                return won
            other = judge.strip(other)  # a sibling's completion: its answer, stripped once
        return judge.run(judged(sample, text, other))

    return bounded(score, 0.0, 1.0)


# -- group ----------------------------------------------------------------------------------------


def _group_items(sample: Sample, key: str) -> tuple[list[tuple[str, str]], set[str]] | str:
    """((member id, completion) of the group, the sample itself included; the ids the data
    gave), or why not. A member without an id (a plain string) is keyed "#<index>" and never
    looked up by a sample's id: sample ids default to line numbers, which a key "1" would
    match."""
    raw = sample.metadata.get(key)
    if not isinstance(raw, list) or len(raw) < 2:
        return f"metadata.{key} must list the group's completions (at least 2)"
    items: list[tuple[str, str]] = []
    named: set[str] = set()
    for index, item in enumerate(raw):
        if isinstance(item, str):
            items.append((f"#{index}", item))
        elif isinstance(item, dict) and isinstance(item.get("completion"), str):
            member = str(item["id"]) if "id" in item else f"#{index}"
            if "id" in item:
                named.add(member)
            items.append((member, item["completion"]))
        else:
            return f"metadata.{key}[{index}]: expected a string or {{id, completion}}"
    if len({i for i, _ in items}) != len(items):
        return f"metadata.{key}: duplicate ids"
    return items, named


@reward("judge_group", preload=("httpx",))
def judge_group(
    *,
    group_key: str = "group_completions",
    instruction: str = "Rank by correctness, helpfulness and clarity.",
    seed: int = 0,
    structured: bool = False,
    backend: Backend = "local",
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    max_concurrency: int = 8,
    request_timeout_s: float = 20.0,
    max_retries: int = 3,
    structured_output: Dialect = "auto",
    cache: bool | str = True,
    parse_retries: int = 2,
    deadline_s: float = 50.0,
    temperature: float = 0.0,
    top_logprobs: int = 0,
    guard: bool = True,
    guard_openers: list[str] | None = None,
    strip_think: bool = True,
    n_ctx: int = 2048,
    n_threads: int | None = None,
    runtime: Runtime = "transformers",
) -> RewardFn:
    """The sample's place in a listwise ranking of its whole group, (n-1-rank)/(n-1).

    Every sample carries the group's completions in `metadata[group_key]` (strings, or
    ``{id, completion}`` with the sample's own `id` among them). The group is shown in an
    order shuffled with `seed` and the group's ids, under labels R1..Rn; the reply must name
    every label exactly once (a reply with a missing, extra or repeated label is retried,
    then an `error` charged to the completion). The prompt is identical for every member, so
    with the cache the group costs one judge call (members scored at the same moment in
    different workers may each make it once). `structured` asks for ``{"ranking": [...]}``
    under a JSON schema.
    """
    judge = _judge(locals())

    async def ranking(sample: Sample, items: list[tuple[str, str]]) -> tuple[list[str], bool]:
        """The judge's ranking of `items`' ids, best first, and whether it was cached."""
        order = list(items)
        random.Random(f"{seed}:{sorted(i for i, _ in items)}").shuffle(order)
        labels = {f"R{n}": member for n, (member, _) in enumerate(order, 1)}
        shown = [(f"R{n}", judge.strip(text)) for n, (_, text) in enumerate(order, 1)]
        ranking_schema = {
            "type": "object",
            "properties": {
                "ranking": {
                    "type": "array",
                    "items": {"type": "string", "enum": list(labels)},
                    "minItems": len(labels),
                    "maxItems": len(labels),
                }
            },
            "required": ["ranking"],
        }
        schema = ranking_schema if structured else None

        def parse(reply: JudgeReply) -> list[str] | None:
            return parse_ranking(reply.text, list(labels))

        messages = group_messages(judge.conversation(sample), shown, instruction)
        ranked, reply = await judge.ask(
            messages,
            parse,
            12 * len(labels) + 16,
            logprobs=False,
            schema=schema,
            retry_schema=ranking_schema,
        )
        return [labels[label] for label in ranked], reply.cached

    async def set_aside(
        sample: Sample, items: list[tuple[str, str]], refusal: InputRejected
    ) -> tuple[list[str], bool, list[str]]:
        """Rank what the judge can read of a group it refused (`refusal`: too long for its
        context, or held back by a content filter): (the judge's ranking, whether it was
        cached, the members it did not read). Each member is measured alone (concurrently),
        in tokens as the judge reads it (by the backend; its escaped UTF-8 bytes when the
        backend gives no count): members it refuses on their own are set aside first, then,
        while the rest do not fit, the largest."""
        conversation = judge.conversation(sample)
        shown = [judge.strip(text) for _, text in items]
        measured = await gather_bounded(
            [
                judge.prompt_size(group_messages(conversation, [("R1", text)], instruction))
                for text in shown
            ],
            judge.config.max_concurrency,
        )
        sizes = {
            member: math.inf if size is None else size or len(escaped(text).encode())
            for (member, _), text, size in zip(items, shown, measured, strict=True)
        }
        kept = sorted(items, key=lambda item: (sizes[item[0]], item[0]))
        unread: list[str] = []
        while kept and sizes[kept[-1][0]] == math.inf:
            unread.append(kept.pop()[0])
        if not unread:  # every member is read alone: the whole group is what was refused
            if not isinstance(refusal, ContextOverflow):
                raise refusal
            unread.append(kept.pop()[0])
        while kept:
            try:
                ranked, cached = await ranking(sample, kept)
                return ranked, cached, unread
            except ContextOverflow:
                unread.append(kept.pop()[0])
        raise ContextOverflow("no member of the group fits the judge's context on its own")

    async def judged(sample: Sample, items: list[tuple[str, str]], mine: list[str]) -> Score:
        """Members the guard stops (`Judge.sibling_guard`) are not shown and tie last, at 0,
        as they score on their own. Members the judge could not read (the group did not fit
        its context, or a content filter refused them) tie last too: making the group too
        long never takes a member out of the ranking, and the others are still ranked.
        Members the judge reads as the sample's text share their mean score."""
        stopped = {m: rule for m, t in items if (rule := judge.sibling_guard(t)) is not None}
        shown = [(m, t) for m, t in items if m not in stopped]
        unread: list[str] = []
        if len(shown) <= 1:  # one member shown ranks above every stopped one; none: all tie
            ranked, cached = [m for m, _ in shown], False
        else:
            try:
                ranked, cached = await ranking(sample, shown)
            except InputRejected as refusal:  # too long, or filtered: find what it reads
                ranked, cached, unread = await set_aside(sample, shown, refusal)
        n = len(items)
        value = {member: (n - 1 - rank) / (n - 1) for rank, member in enumerate(ranked)}
        ranks = [ranked.index(m) if m in value else n - 1 for m in mine]
        detail: dict[str, Any] = {"rank": ranks[0] if len(mine) == 1 else ranks}
        detail.update(ranking=ranked, cached=cached)
        if unread:
            detail["too_long"] = unread
        if stopped:
            detail["guarded"] = stopped
        return Score.ok(math.fsum(value.get(m, 0.0) for m in mine) / len(mine), **detail)

    def score(sample: Sample) -> Score:
        found = _group_items(sample, group_key)
        if isinstance(found, str):
            return Score.failed("not_applicable", found)
        items, named = found
        texts = dict(items)
        own = texts[sample.id] if sample.id in named else sample.text
        if sample.id not in named and own not in texts.values():
            return Score.failed(
                "invalid", f"sample {sample.id!r} not found in metadata.{group_key}"
            )
        # the judge cannot tell apart what it reads alike: those members share their mean
        mine = [i for i, t in items if judge.strip(t) == judge.strip(own)]
        text = judge.text_of(sample)
        return judge.guarded(text) or judge.run(judged(sample, items, mine))

    return bounded(score, 0.0, 1.0)


# -- reference ------------------------------------------------------------------------------------


@reward("judge_reference", preload=("httpx",))
def judge_reference(
    *,
    soft: bool = False,
    backend: Backend = "local",
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    max_concurrency: int = 8,
    request_timeout_s: float = 20.0,
    max_retries: int = 3,
    structured_output: Dialect = "auto",
    cache: bool | str = True,
    parse_retries: int = 2,
    deadline_s: float = 50.0,
    temperature: float = 0.0,
    top_logprobs: int = 10,
    guard: bool = True,
    guard_openers: list[str] | None = None,
    strip_think: bool = True,
    n_ctx: int = 2048,
    n_threads: int | None = None,
    runtime: Runtime = "transformers",
) -> RewardFn:
    """1 if the judge finds the final answer equivalent to the reference, else 0 (`soft`:
    P(equivalent) when logprobs exist). For free-form answers `math` cannot parse."""
    judge = _judge(locals())

    async def judged(sample: Sample, text: str, reference: str) -> Score:
        messages = reference_messages(judge.conversation(sample), text, reference)
        (same, probability), reply = await judge.ask(
            messages,
            lambda r: parse_yes_no(r.text, r.top_logprobs, r.tokens),
            6,
            retry_schema=verdict_schema(),
        )
        value = probability if soft and probability is not None else float(same)
        return Score.ok(value, equivalent=same, p_equivalent=probability, cached=reply.cached)

    def score(sample: Sample) -> Score:
        reference = _reference_text(sample.reference)
        if reference is None:
            return Score.failed("not_applicable", "no reference answer")
        text = judge.text_of(sample)
        return judge.guarded(text) or judge.run(judged(sample, text, reference))

    return bounded(score, 0.0, 1.0)


# -- principles -----------------------------------------------------------------------------------


@reward("judge_principles", preload=("httpx",))
def judge_principles(
    *,
    k: int = 4,
    vote: Literal["mean", "sum"] = "mean",
    scale_min: int = 1,
    scale_max: int = 10,
    max_tokens: int = 256,
    backend: Backend = "local",
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str = "OPENAI_API_KEY",
    max_concurrency: int = 8,
    request_timeout_s: float = 20.0,
    max_retries: int = 3,
    structured_output: Dialect = "auto",
    cache: bool | str = True,
    parse_retries: int = 2,
    deadline_s: float = 50.0,
    temperature: float = 0.7,
    top_logprobs: int = 0,
    guard: bool = True,
    guard_openers: list[str] | None = None,
    strip_think: bool = True,
    n_ctx: int = 2048,
    n_threads: int | None = None,
    runtime: Runtime = "transformers",
) -> RewardFn:
    """DeepSeek-GRM style: the judge writes principles, a critique, then "Score: N"; `k`
    samples (seeds 0..k-1) are voted. `mean`: mean normalised rating in [0, 1] over the
    samples that parsed (at least one); `sum`: sum of the k normalised ratings in [0, k]
    (every sample must parse). Else an `error` charged to the completion (see `unparsed`)."""
    if k < 1:
        raise ConfigError(f"k: must be >= 1, got {k}")
    if not 0 <= scale_min < scale_max:
        raise ConfigError("scale: need 0 <= scale_min < scale_max")
    judge = _judge(locals())
    span = scale_max - scale_min

    async def one(messages: Any, index: int) -> int | Unparseable:
        def parse(reply: JudgeReply) -> int | None:
            parsed = parse_rating(reply.text, scale_min, scale_max, anywhere=True)
            return parsed[0] if parsed else None

        try:
            rating, _ = await judge.ask(messages, parse, max_tokens, logprobs=False, seed=index)
        except Unparseable as exc:
            return exc
        return rating

    async def judged(sample: Sample, text: str) -> Score:
        messages = principles_messages(judge.conversation(sample), text, scale_min, scale_max)
        answers = await gather_bounded([one(messages, i) for i in range(k)], max_concurrency)
        ratings = [r if isinstance(r, int) else None for r in answers]
        valid = [(r - scale_min) / span for r in ratings if r is not None]
        detail = {"ratings": ratings, "vote": vote}
        failures = [a for a in answers if isinstance(a, Unparseable)]
        if failures and (not valid or vote == "sum"):
            reason = f"{len(failures)} of {k} samples gave no score"
            return unparsed(failures[0], reason, **detail)
        value = sum(valid) if vote == "sum" else sum(valid) / len(valid)
        return Score.ok(value, **detail)

    def score(sample: Sample) -> Score:
        text = judge.text_of(sample)
        return judge.guarded(text) or judge.run(judged(sample, text))

    return bounded(score, 0.0, float(k) if vote == "sum" else 1.0)
