"""Reward hacks in the text, format, length and instruction rewards, one row per attack.

Each row is what an optimizer paid per pass writes (`gaming`) beside an honest answer
(`honest`: a wrong one, or the honest version of the same degenerate output), for one reward
component. The rule every row checks: the gaming output is scored `ok` (a policy-written
output is never `invalid` or null: that would be an escape from a low reward), at most
`gaming_score` when given, and never above the honest answer. The table is data so that
`rewardsmith evaluate` can replay it as attacks against a user's own spec.

`item` names the issue and item that found the hole ("17.7": issue 17, item 7).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["REWARD_HACKS", "Hack"]


@dataclass(frozen=True)
class Hack:
    item: str
    name: str
    component: dict[str, Any]
    """The reward component under attack: `type` and its parameters."""
    gaming: Any
    honest: Any
    reference: Any = None
    prompt: Any = None
    gaming_score: float | None = None
    """The most the gaming output may score (None: only `<= honest`)."""
    metadata: dict[str, Any] = field(default_factory=dict)


def instructions(*pairs: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """An IFEval-style reference: instruction ids and their kwargs."""
    return {"instruction_id_list": [i for i, _ in pairs], "kwargs": [k for _, k in pairs]}


def chat(*turns: str) -> list[dict[str, str]]:
    """A chat completion: assistant and user turns alternating, the assistant first."""
    roles = ["assistant", "user"]
    return [{"role": roles[i % 2], "content": t} for i, t in enumerate(turns)]


IFEVAL_TRAINING = {"type": "ifeval", "training": True}
IFBENCH_TRAINING = {"type": "ifbench", "training": True}
NO_COMMA = instructions(("punctuation:no_comma", {}))
ESSAY = "Write an essay about the history of Paris. Do not use any commas in your response."
SHORT_WORDS = instructions(
    ("length_constraints:number_words", {"relation": "less than", "num_words": 200}),
    ("keywords:forbidden_words", {"forbidden_words": ["Eiffel"]}),
)
HONEST_ESSAY = "Paris grew from a small settlement on the Seine, and it became a capital."
PLAIN_ESSAY = "Paris grew from a small settlement on the Seine into a great capital city."
KEYWORDS = instructions(("keywords:existence", {"keywords": ["river", "bridge"]}))
LOWERCASE_QUESTION = "What is another word for engravings? Answer in lowercase letters only."
JAPANESE = instructions(("language:response_language", {"language": "ja"}))
AT_LEAST_50 = {"not": {"id": "length_constraints:number_words",
                       "kwargs": {"relation": "less than", "num_words": 50}}}  # fmt: skip
PYTHON_BULLETS = {
    "if": {"id": "keywords:existence", "kwargs": {"keywords": ["python"]}},
    "then": {"id": "detectable_format:number_bullet_lists", "kwargs": {"num_bullets": 3}},
}
FORTY_NINE = " ".join(["word"] * 49)
EMAIL_SCHEMA = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "format": "email"},
        "when": {"type": "string", "format": "date-time"},
        "site": {"type": "string", "format": "uri"},
    },
}
LOOP = "I will check the answer again. " * 300
OVERLONG_WORDS = {"type": "length", "max_length": 300, "cache_length": 100, "unit": "words"}
ZW = "\u200b"

REWARD_HACKS: list[Hack] = [
    # -- 17.7: IFEval / IFBench pay contentless replies (training option on) ----------------
    Hack("17.7", "ifeval OK", IFEVAL_TRAINING, "OK", HONEST_ESSAY, NO_COMMA, ESSAY, 0.0),
    Hack("17.7", "ifeval empty", IFEVAL_TRAINING, "", HONEST_ESSAY, NO_COMMA, ESSAY, 0.0),
    Hack(
        "17.7", "ifeval zero-width space", IFEVAL_TRAINING, ZW, HONEST_ESSAY, NO_COMMA, ESSAY, 0.0
    ),
    Hack(
        "17.7",
        "ifeval hangul filler",
        IFEVAL_TRAINING,
        "\u3164",
        HONEST_ESSAY,
        NO_COMMA,
        ESSAY,
        0.0,
    ),
    Hack(
        "17.7",
        "ifeval filler sentence",
        IFEVAL_TRAINING,
        "Sure, here it is!",
        HONEST_ESSAY,
        SHORT_WORDS,
        ESSAY,
        0.0,
    ),
    Hack(
        "17.7",
        "ifeval keywords only",
        IFEVAL_TRAINING,
        "river bridge",
        "The river runs under an old stone bridge.",
        KEYWORDS,
        "Describe a walk through an old town.",
        0.0,
    ),
    Hack(
        "17.7",
        "ifeval restated prompt",
        IFEVAL_TRAINING,
        "Write an essay about the history of Paris",
        HONEST_ESSAY,
        NO_COMMA,
        ESSAY,
        0.0,
    ),
    Hack(
        "17.7",
        "ifeval one word for an essay",
        IFEVAL_TRAINING,
        "Paris",
        PLAIN_ESSAY,
        NO_COMMA,
        ESSAY,
        0.0,
    ),
    Hack(
        "17.7",
        "ifeval undecidable language",
        IFEVAL_TRAINING,
        "12345",
        "The answer is in English, not in Japanese.",
        JAPANESE,
        "Answer in Japanese: what is the capital of France?",
        0.0,
    ),
    Hack(
        "17.7",
        "ifeval OK, short question",
        IFEVAL_TRAINING,
        "ok",
        "carvings",
        instructions(("change_case:english_lowercase", {})),
        LOWERCASE_QUESTION,
        0.0,
    ),
    Hack(
        "17.7",
        "ifbench OK",
        IFBENCH_TRAINING,
        "OK",
        "Lions are large cats. Are they dangerous? Yes, very!",
        instructions(("ratio:sentence_type", {})),
        "Write a short paragraph about lions.",
        0.0,
    ),
    Hack(
        "17.7",
        "ifeval placeholders flood",
        {"type": "ifeval"},
        "[" * 199_000,
        "[name] only",
        instructions(("detectable_content:number_placeholders", {"num_placeholders": 2})),
        gaming_score=0.0,
    ),
    # -- 17.8 / 11.22: constraints over blank answers and crashed checkers --------------------
    Hack(
        "17.8",
        "not fewer than 50 words, empty",
        {"type": "constraints"},
        "",
        FORTY_NINE,
        AT_LEAST_50,
        gaming_score=0.0,
    ),
    Hack(
        "17.8",
        "not no_comma, empty",
        {"type": "constraints"},
        "",
        "Plain words without any comma at all.",
        {"not": {"id": "punctuation:no_comma"}},
        gaming_score=0.0,
    ),
    Hack(
        "17.8",
        "if python then 3 bullets, empty",
        {"type": "constraints"},
        "",
        "python\n* one\n* two",
        PYTHON_BULLETS,
        gaming_score=0.0,
    ),
    Hack(
        "11.22",
        "not english_capital, empty",
        {"type": "constraints"},
        "",
        "ALL CAPS HERE",
        {"not": {"id": "change_case:english_capital"}},
        gaming_score=0.0,
    ),
    Hack(
        "11.22",
        "not emoji, a dot",
        {"type": "constraints"},
        ".",
        "No emoji here 🙂",
        {"not": {"id": "format:emoji"}},
        gaming_score=0.0,
    ),
    # -- 17.9: think_format and invisible reasoning -------------------------------------------
    *(
        Hack(
            "17.9",
            f"think {name}",
            {"type": "think_format"},
            f"<think>{c}</think>{c}",
            "<think>2 + 2 is 5</think> 5",
            gaming_score=0.0,
        )
        for name, c in [
            ("zero-width space", ZW),
            ("hangul filler", "\u3164"),
            ("grapheme joiner", "\u034f"),
            ("braille blank", "\u2800"),
            ("a dot", "."),
            ("byte order mark", "\ufeff"),
        ]
    ),
    # -- 17.10: length in words ---------------------------------------------------------------
    Hack(
        "17.10",
        "words joined by U+200B",
        OVERLONG_WORDS,
        ZW.join(["word"] * 400),
        " ".join(["word"] * 400),
        gaming_score=-1.0,
    ),
    Hack(
        "17.10",
        "words joined by _",
        OVERLONG_WORDS,
        "_".join(["word"] * 400),
        " ".join(["word"] * 400),
        gaming_score=-1.0,
    ),
    Hack(
        "17.10",
        "2,100 CJK characters",
        OVERLONG_WORDS,
        "字" * 2100,
        " ".join(["word"] * 2100),
        gaming_score=-1.0,
    ),
    # -- 17.11: repetition ---------------------------------------------------------------------
    Hack(
        "17.11",
        "loop without spaces",
        {"type": "repetition"},
        "hmm" * 2000,
        LOOP,
        gaming_score=-0.99,
    ),
    Hack(
        "17.11",
        "counter in each repeat",
        {"type": "repetition"},
        " ".join(f"the answer {i}" for i in range(700)),
        LOOP,
        gaming_score=-0.99,
    ),
    Hack(
        "17.11",
        "random token in each repeat",
        {"type": "repetition"},
        " ".join(f"the final answer is {i * 7919 % 9973:x}" for i in range(500)),
        LOOP,
        gaming_score=-0.99,
    ),
    # -- 17.12: f1 pays hedges ------------------------------------------------------------------
    Hack(
        "17.12", "f1 A or B", {"type": "f1"}, "Paris or London", "London", "Paris", gaming_score=0.0
    ),
    Hack("17.12", "f1 A/B", {"type": "f1"}, "Paris/London", "London", "Paris", gaming_score=0.0),
    Hack(
        "17.12",
        "f1 either",
        {"type": "f1"},
        "either Paris or Rome",
        "Rome",
        "Paris",
        gaming_score=0.0,
    ),
    # -- 17.13: choice hedges -------------------------------------------------------------------
    *(
        Hack(
            "17.13", f"choice {text}", {"type": "choice"}, text, "Answer: C", "B", gaming_score=0.0
        )
        for text in [
            "Answer: B, C",
            "Answer: B; A",
            "\\boxed{B, C}",
            "The answer is (B), also (C)",
            "Answer: B & D",
            "Answer: B/C",
            "The answer is B (or maybe C)",
        ]
    ),
    # -- 17.14: json formats --------------------------------------------------------------------
    Hack(
        "17.14",
        "json email",
        {"type": "json", "schema": EMAIL_SCHEMA},
        '{"email": "not an email"}',
        "not json",
        gaming_score=0.0,
    ),
    Hack(
        "17.14",
        "json date-time",
        {"type": "json", "schema": EMAIL_SCHEMA},
        '{"when": "yesterday"}',
        "not json",
        gaming_score=0.0,
    ),
    Hack(
        "17.14",
        "json uri",
        {"type": "json", "schema": EMAIL_SCHEMA},
        '{"site": "not a uri"}',
        "not json",
        gaming_score=0.0,
    ),
    # -- 17.15: earlier chat turns are not free -------------------------------------------------
    Hack(
        "17.15",
        "length: padding in an earlier turn",
        OVERLONG_WORDS,
        chat(" ".join(["pad"] * 400), "go on", "done"),
        chat(" ".join(["pad"] * 402)),
        gaming_score=-1.0,
    ),
    Hack(
        "17.15",
        "repetition: a loop in an earlier turn",
        {"type": "repetition"},
        chat(LOOP, "go on", "The answer is 42."),
        chat(LOOP + "The answer is 42."),
        gaming_score=-0.99,
    ),
    # -- 10 (audit): policy-written outputs are wrong, never invalid ----------------------------
    Hack(
        "10",
        "json nested 100k deep",
        {"type": "json"},
        "[" * 100_000 + "]" * 100_000,
        "not json",
        gaming_score=0.0,
    ),
    Hack(
        "10",
        "regex target over 100k characters",
        {"type": "regex", "pattern": "(a+)+$"},
        "a" * 100_001 + "b",
        "b",
        gaming_score=0.0,
    ),
    Hack(
        "10",
        "IFEval response of 200k characters",
        {"type": "ifeval"},
        "word " * 40_001,
        "word,",
        NO_COMMA,
        gaming_score=0.0,
    ),
    Hack(
        "10",
        "constraints response of 200k characters",
        {"type": "constraints"},
        "word " * 40_001,
        "word,",
        {"id": "punctuation:no_comma"},
        gaming_score=0.0,
    ),
]
