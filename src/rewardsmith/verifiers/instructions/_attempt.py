"""Whether a response attempts the task at all: the training option of the instruction rewards.

The official checkers judge form, not content: "OK" follows "do not use commas", "use fewer
than 200 words", "avoid the word X"; an invisible U+200B follows them too (the official
``strip()`` does not remove it). On the real IFBench prompts "OK" earns more than the real
responses. That is right for evaluating a model that tries, and a free reward for a policy
that learns to stop trying. With `training: true`, a response that does not attempt the task
scores 0, whatever the checkers say, when:

- it has no words (empty, whitespace, invisible or punctuation-only: `_words`);
- every word is filler ("OK", "Sure", "Hello") or a function word ("here", "it", "the");
- every word of two or more characters is one of the instructions' keywords; or, with at
  least two such words, every one comes from the prompt: restating the prompt, or listing
  its words, is not an answer. Unless an instruction asks to copy or choose from the prompt,
  or the response starts with an option label ("a)"); and where the prompt's verb asks to
  rewrite its text (rewrite, paraphrase, edit this...), only a bag of the prompt's words
  without a single function word counts as restating;
- the prompt asks for prose (write an essay, a story, a letter...; explain, describe...)
  and the response has fewer than `min_words` words (fewer than a word-count ceiling the
  instructions set, if lower), unless an instruction asks for a short form (one of given
  options, a fixed phrase, no whitespace, a CSV...);
- only with `require_topic: true`: it has `min_words` or more words and none shares its
  first five characters with a topic word of the prompt (a word that is not function, filler
  or instruction vocabulary, nor one an instruction forbids): a fixed filler sent to every
  prompt ("lorem ipsum ..."). Not judged for riddles, rewrites, short forms, other languages
  and replies mostly in another script. Off by default because it is a guess that costs honest
  answers: on the real data it takes the reward of 10 of 835 real responses (a haiku about
  Ireland that never says "Ireland"), while a twelve-word lorem ipsum still earns full marks
  on 9 IFEval and 13 IFBench prompts (those exemptions, or a shared stem) and a filler made
  of the prompt's topic words passes it.

These are heuristics over the prompt and the response, not a judge: a short content word
that does not come from the prompt ("Banana") still passes on a prompt that does not ask for
prose, and a fixed filler of ten or more words passes where its form happens to follow the
instructions. Pair the reward with a correctness or judged reward for content.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..._exceptions import ConfigError
from .._words import count_words, words

__all__ = ["MIN_PROSE_WORDS", "AttemptRule", "attempt_rule", "no_attempt", "prompt_text"]

MIN_PROSE_WORDS = 10
"""Fewest words a response to a prose request must have (the `min_words` default)."""

FILLER = frozenset((
    "ok", "okay", "k", "kk", "sure", "alright", "done", "noted", "thanks", "thank", "hello",
    "hi", "hey", "yeah", "yep", "yup",
))  # fmt: skip
"""Words that acknowledge without answering."""

FUNCTION_WORDS = frozenset((
    "an", "the", "and", "or", "of", "to", "in", "on", "at", "for", "with", "it", "is", "are",
    "be", "this", "that", "these", "those", "here", "there", "i", "you", "we", "he", "she",
    "they", "me", "my", "your", "its", "will", "can", "let", "let's", "am", "so", "as",
))  # fmt: skip
"""Words that carry no content of their own ("a" is not one: it answers multiple choice)."""

COPY_OR_CHOOSE = frozenset(
    {
        "detectable_format:constrained_response",
        "format:options",
        "repeat:repeat_simple",
        "repeat:repeat_span",
        "repeat:repeat_change",
        "words:keywords_specific_position",
        "words:words_position",
    }
)
"""Instructions that make a response made of the prompt's own words legitimate."""

SHORT_FORM = COPY_OR_CHOOSE | {
    "detectable_format:json_format",
    "format:no_whitespace",
    "custom:character_reverse",
    "custom:word_reverse",
    "custom:date_format_list",
    "custom:csv_city",
    "custom:csv_quotes",
    "custom:csv_special_character",
    "custom:european_capitals_sort",
    "custom:multiples",
    "words:prime_lengths",
}
"""Instructions that ask for a short or non-prose answer: no prose minimum applies."""

_REUSE = re.compile(
    r"\b(?:re-?write|rephrase|paraphrase|reword|reformat|shorten|short it|condense|proofread)\b"
    r"|\b(?:repeat|copy|quote)\s+(?:the|this|it|that|exactly|back|verbatim)\b"
    r"|\b(?:edit|correct|fix|improve|convert|turn|split)\s+(?:the|this|it|that|these|following)\b",
    re.IGNORECASE,
)
"""Prompt verbs of tasks whose answer is made of the prompt's own words."""

_OPTION_LABEL = re.compile(r"\W*[a-eA-E](?:[).:]|\s*$)")
"""A response that starts by naming an option ("a)", "(B)", "C.")."""

_PROSE = re.compile(
    r"\b(?:write|compose|draft|create|generate|produce|prepare|give me)\b[^.?!\n]{0,80}?"
    r"\b(?:essay|story|stories|poem|letter|e-?mail|blog|article|speech|report|review|proposal"
    r"|summary|biography|dialogue|script|screenplay|cover letter|resume|description|explanation"
    r"|paragraphs?|rap|song|lyrics|post|advertisement|pitch|memo|guide|tutorial|itinerary"
    r"|plan|outline|analysis|critique|rubric|limerick|riddle)\b"
    r"|^\W*(?:please\s+)?(?:explain|describe|discuss|elaborate|summari[sz]e|analy[sz]e)\b",
    re.IGNORECASE | re.MULTILINE,
)


def prompt_text(prompt: Any) -> str:
    """The prompt as text: the string, or its user turns joined."""
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    return "\n".join(m.text for m in prompt if m.role == "user")


NOT_KEYWORDS = frozenset({"prompt_to_repeat", "reference_text", "options"})
"""Kwargs holding prompt text or the allowed answers, not keywords to use."""


def _strings(values: Iterable[Any]) -> Iterable[str]:
    for value in values:
        if isinstance(value, str):
            yield value
        elif isinstance(value, list | tuple):
            yield from _strings(value)
        elif isinstance(value, Mapping):
            yield from _strings(value.values())


def _word_ceiling(ids: Sequence[str], kwargs: Sequence[Any]) -> int | None:
    """The most words the instructions allow, when one sets a ceiling."""
    ceilings = []
    for instruction, raw in zip(ids, kwargs, strict=True):
        raw = raw if isinstance(raw, Mapping) else {}
        if instruction == "length_constraints:number_words" and raw.get("relation") == "less than":
            ceilings.append(int(raw.get("num_words") or 0) - 1)
        elif instruction == "count:word_count_range" and raw.get("max_words") is not None:
            ceilings.append(int(raw["max_words"]))
    return min(ceilings) if ceilings else None


STEM = 5
"""Words are compared by their first `STEM` characters ("Japan" and "Japanese" agree)."""

INSTRUCTION_WORDS = frozenset((
    "respo", "write", "writi", "writt", "least", "inclu", "words", "word", "shoul", "about", "use",
    "must", "sente", "not", "answe", "conta", "lette", "make", "entir", "each", "exact", "all",
    "pleas", "what", "follo", "one", "any", "than", "how", "two", "three", "four", "five", "give",
    "doubl", "start", "sure", "more", "most", "first", "secon", "third", "last", "from", "point",
    "have", "using", "new", "separ", "keywo", "markd", "comma", "times", "secti", "only", "brack",
    "squar", "capit", "other", "bulle", "but", "text", "end", "endin", "creat", "forma", "diffe",
    "such", "has", "who", "witho", "descr", "betwe", "less", "repea", "appea", "then", "expla",
    "chara", "into", "like", "title", "befor", "after", "parag", "chang", "list", "numbe", "langu",
    "where", "say", "engli", "reque", "phras", "gener", "wrap", "wrapp", "allow", "place", "angul",
    "lower", "upper", "every", "style", "which", "their", "need", "short", "long", "state",
    "would", "name", "ensur", "marks", "quota", "quote", "help", "alter", "provi", "aster", "also",
    "does", "outpu", "add", "was", "some", "above", "below", "total", "lengt", "highl", "posts",
    "symbo", "case", "thing", "time", "way", "just", "very", "your", "our", "them", "his", "her",
    "him", "can't", "don't", "do", "did", "get", "want", "know", "think", "tell", "ask", "asked",
    "exampl", "examp", "respon",
))  # fmt: skip
"""First `STEM` characters of the words IFEval's and IFBench's instructions are phrased in
(the prefixes in more than 3% of their 835 prompts that are not a topic): a reply sharing
only these with a prompt shares nothing with its task."""


def _stems(text: str) -> set[str]:
    """The prompt-comparable content words of `text` (three or more characters, not filler,
    function or instruction words, not numbers), cut to `STEM` characters."""
    found = set()
    for word in words(text):
        low = word.lower()
        if len(low) > 2 and not low.isdigit() and low not in FILLER | FUNCTION_WORDS:
            stem = low[:STEM]
            if stem not in INSTRUCTION_WORDS:
                found.add(stem)
    return found


_OBLIQUE = re.compile(r"\briddles?\b", re.IGNORECASE)
"""Prompts whose good reply hides its topic."""


def _ignores_prompt(
    response: str, prompt: str, ids: Sequence[str], kwargs: Sequence[Any], min_words: int
) -> bool:
    """A reply of `min_words` or more words, none sharing its first `STEM` characters with
    a topic word of the prompt (the words an instruction forbids are no topic): what a fixed
    filler ("lorem ipsum ...") sent to every prompt looks like. Not judged when the prompt
    has no other topic words; when an instruction asks for another language or a short or
    copied form; when the prompt asks to rewrite its text or for a riddle; or when most of
    the reply is in another script."""
    forbidden = {
        stem
        for raw in kwargs
        if isinstance(raw, Mapping)
        for stem in _stems(" ".join(_strings([raw.get("forbidden_words") or []])))
    }
    topic = _stems(prompt) - forbidden
    given = set(ids)
    if (
        not topic
        or SHORT_FORM & given
        or any(i.startswith("language:") for i in given)
        or _REUSE.search(prompt)
        or _OBLIQUE.search(prompt)
    ):
        return False
    said = words(response)
    if len(said) < min_words or sum(w.isascii() for w in said) * 2 < len(said):
        return False
    return not _stems(response) & topic


@dataclass(frozen=True)
class AttemptRule:
    """The training option of an instruction reward: what counts as no attempt at the task."""

    min_words: int = MIN_PROSE_WORDS
    require_topic: bool = False

    def __post_init__(self) -> None:
        if self.min_words < 1:
            raise ConfigError(f"min_words: must be at least 1, got {self.min_words}")

    def why_not(
        self, response: str, prompt: str, ids: Sequence[str], kwargs: Sequence[Any]
    ) -> str | None:
        """Why `response` does not attempt the task, or None."""
        return no_attempt(response, prompt, ids, kwargs, self.min_words, self.require_topic)


def attempt_rule(training: bool, min_words: int, require_topic: bool) -> AttemptRule | None:
    """The rule a reward's `training`, `min_words` and `require_topic` options set (None:
    official verdicts only)."""
    rule = AttemptRule(min_words, require_topic)
    if require_topic and not training:
        raise ConfigError("require_topic: needs training: true")
    return rule if training else None


def no_attempt(
    response: str,
    prompt: str,
    ids: Sequence[str],
    kwargs: Sequence[Any],
    min_words: int,
    require_topic: bool = False,
) -> str | None:
    """Why `response` does not attempt the task the prompt and instructions set, or None."""
    found = [w.lower() for w in words(response)]
    if not found:
        return "no words: empty, blank, invisible or punctuation-only"
    content = [w for w in found if w not in FILLER and w not in FUNCTION_WORDS]
    if not content:
        return "only filler and function words"
    given_kwargs = [
        {k: v for k, v in raw.items() if k not in NOT_KEYWORDS}
        for raw in kwargs
        if isinstance(raw, Mapping)
    ]
    keywords = {w.lower() for text in _strings(given_kwargs) for w in words(text)}
    checked = [w for w in content if len(w) > 1 and not w.isdigit()]
    if checked and all(w in keywords for w in checked):
        return "only the instructions' keywords"
    given = keywords | {w.lower() for w in words(prompt)}
    restated = len(set(checked)) >= 2 and all(w in given for w in checked)
    if restated and not (COPY_OR_CHOOSE & set(ids) or _OPTION_LABEL.match(response)):
        # a task that asks to repeat the prompt still asks for an answer after it
        rewrite = "combination:repeat_prompt" not in ids and _REUSE.search(prompt) is not None
        if not rewrite or not any(w in FUNCTION_WORDS for w in found):
            return "only words of the prompt (restated)"
    if _PROSE.search(prompt) and not SHORT_FORM & set(ids):
        ceiling = _word_ceiling(ids, kwargs)
        needed = min_words if ceiling is None else max(1, min(min_words, ceiling))
        if count_words(response) < needed:
            return f"{count_words(response)} words where the prompt asks for prose ({needed}+)"
    if require_topic and _ignores_prompt(response, prompt, ids, kwargs, min_words):
        return "no word of the prompt's topic: a reply that ignores the prompt"
    return None
