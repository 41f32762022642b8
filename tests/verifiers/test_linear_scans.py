"""The agent rewards' linear text scans give what the lazy regexes they replaced gave.

Each oracle below is the regex the reward used before (a lazy ``open(.*?)close`` rescans to
the end of the text from every unclosed opening tag: quadratic on policy-written text). The
property tests draw texts from the tags themselves, where the two could differ.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsmith.verifiers._common import answer_part, tag_blocks, tagged_answer
from rewardsmith.verifiers.agents.boxes import _explicitly_empty
from rewardsmith.verifiers.agents.gui import layout_ok
from rewardsmith.verifiers.agents.sql import fenced_blocks, sql_prediction


def texts(*pieces: str, size: int = 16) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from([*pieces, "a", " ", "\n"]), max_size=size).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts("<a>", "</a>", "<", "a>", "</"))
def test_tag_blocks_are_the_lazy_regex_matches(text: str) -> None:
    expected = [m.span() for m in re.finditer(r"<a>(.*?)</a>", text, re.DOTALL)]
    assert list(tag_blocks(text, "<a>", "</a>")) == expected


@settings(max_examples=300, deadline=None)
@given(texts("<answer>", "</answer>", "<think>", "</think>"))
def test_tagged_answer_is_the_last_lazy_answer_block(text: str) -> None:
    answer = answer_part(text)
    blocks = re.findall(r"<answer>(.*?)</answer>", answer, re.DOTALL)
    assert tagged_answer(text) == (blocks[-1] if blocks else answer)


@settings(max_examples=400, deadline=None)
@given(texts("<think>", "</think>", "<answer>", "</answer>", "\t"), st.booleans())
def test_gui_layout_is_ui_r1s_fullmatch(text: str, think: bool) -> None:
    pattern = r"<think>.*?</think>\s*<answer>.*?</answer>" if think else r"<answer>.*?</answer>"
    assert layout_ok(text, think) == bool(re.fullmatch(pattern, text, re.DOTALL))


_OLD_FENCE = re.compile(
    r"^[ \t]*```[ \t]*(?P<lang>[\w+#.-]*)[^\n]*\n(?P<body>.*?)^[ \t]*```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


@settings(max_examples=400, deadline=None)
@given(texts("```", "```sql", "``` ", "sql", "\t", "x\n", size=20))
def test_fenced_blocks_are_the_multiline_fence_regex(text: str) -> None:
    expected = [(m["lang"].lower(), m["body"].strip()) for m in _OLD_FENCE.finditer(text)]
    assert [(lang, body.strip()) for lang, body in fenced_blocks(text)] == expected


def old_skyrl(text: str) -> str | None:
    """SkyRL-SQL's format check as it was, regexes and all (the oracle)."""
    if text.count("<solution>") != 1:
        return None
    before, tail = text.split("<solution>", 1)
    if tail.count("</solution>") != 1:
        return None
    solution = tail.split("</solution>", 1)[0]
    tags = re.compile(r"</?(think|sql|observation)\b", re.IGNORECASE)
    if tags.search(solution) or not re.search(r"<think>.*?</think>", text, re.DOTALL):
        return None
    for closing in re.finditer(r"</observation>", before, re.IGNORECASE):
        if not before[closing.end() :].lstrip().lower().startswith("<think>"):
            return None
    return solution.strip() or None


@settings(max_examples=400, deadline=None)
@given(
    texts(
        "<think>",
        "</think>",
        "<solution>",
        "</solution>",
        "</observation>",
        "</OBSERVATION>",
        "<THINK>",
        "SELECT 1",
    )
)
def test_skyrl_format_is_the_regex_check(text: str) -> None:
    assert sql_prediction(text, "skyrl") == old_skyrl(text)


@settings(max_examples=400, deadline=None)
@given(texts("[", "]", ".", "none", "NONE", "```json", "```", "\t", size=10))
def test_explicitly_empty_is_the_anchored_regex(text: str) -> None:
    old = r"^\s*(?:\[\s*\]|none|```json\s*\[\s*\]\s*```)\s*\.?\s*$"
    assert _explicitly_empty(text) == bool(re.match(old, text, re.IGNORECASE))
