"""The rewards' linear text scans give what the backtracking regexes they replaced gave.

Each oracle below is the regex the reward used before (a lazy ``open(.*?)close`` rescans to
the end of the text from every unclosed opening tag: quadratic on policy-written text). The
property tests draw texts from the tags themselves, where the two could differ; the
worst-case rows feed the inputs `benchmarks/redos_scan.py` flagged (each took 10 s or more
with the regex it replaced) and check the result, not the time.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsmith.judges._guard import _HEADING_NUMBER, _NUMBERED, normalise
from rewardsmith.judges._prompts import (
    _IMAGE_CLOSE,
    _IMAGE_OPEN,
    _image_markers,
    parse_rating,
    with_image_parts,
)
from rewardsmith.verifiers._completion_parts import answer_part, tag_blocks, tagged_answer
from rewardsmith.verifiers.agents.boxes import _explicitly_empty
from rewardsmith.verifiers.agents.gui import layout_ok
from rewardsmith.verifiers.agents.sql import (
    _HIDDEN,
    _hide,
    fenced_blocks,
    order_matters,
    sql_prediction,
)
from rewardsmith.verifiers.code import extract_code
from rewardsmith.verifiers.code._extract import _dedent, _fenced
from rewardsmith.verifiers.instructions import ifeval
from rewardsmith.verifiers.instructions._ifeval import _title
from rewardsmith.verifiers.math import _extract as math_extract

from ._instruction_helpers import score_one


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


_OLD_HIDDEN = re.compile(
    r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?(?:\*/|\Z)", re.DOTALL
)


@settings(max_examples=500, deadline=None)
@given(texts("[", "]", "'", '"', "`", "--", "/*", "*/", "''", "(", ")", size=20))
def test_sql_hidden_spans_are_the_alternation_regex(query: str) -> None:
    assert _HIDDEN.sub(_hide, query) == _OLD_HIDDEN.sub(" ", query)


_OLD_CODE_FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>(?P<c>[`~])(?P=c){2,})[ \t]*(?P<lang>[\w+#.-]*)[^\n]*\n"
    r"(?P<body>.*?)^[ \t]*(?P=fence)(?P=c)*[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
"""The backreference regex, its closing fence at least as long as the opening (CommonMark)."""


@settings(max_examples=600, deadline=None)
@given(texts("```", "````", "~~~", "~~~~", "`", "~", "py", "```py", "~~~~x", "\t", "\n", size=20))
def test_code_fences_are_the_backreference_regex(text: str) -> None:
    """The regex's blocks, each without its fence's indentation (`_dedent`)."""
    expected = [
        (m["lang"], _dedent(m["body"], m["indent"])) for m in _OLD_CODE_FENCE.finditer(text)
    ]
    assert list(_fenced(text)) == expected


@settings(max_examples=500, deadline=None)
@given(texts("<<", ">>", "<", ">", "<< >>", size=20))
def test_ifeval_title_is_the_official_regex(text: str) -> None:
    titles = re.findall(r"<<[^\n]+>>", text)
    expected = any(m.lstrip("<").rstrip(">").strip() for m in titles)
    assert any(_title(line) for line in text.split("\n")) == expected


@settings(max_examples=500, deadline=None)
@given(texts(_IMAGE_OPEN, _IMAGE_CLOSE, "<", "{}", size=20))
def test_image_markers_are_the_lazy_regex(content: str) -> None:
    old = re.compile(f"{_IMAGE_OPEN}(.*?){_IMAGE_CLOSE}")
    assert list(_image_markers(content)) == [m.span() for m in old.finditer(content)]


_OLD_HASH = re.compile(r"####[ \t]*([^\n#]*\w[^\n]*)")
_OLD_PHRASE = re.compile(
    r"(?i)\b(?:final\s+answer|answer|correct\s+(?:option|choice))\s*(?:\*\*)?\s*"
    r"(?:is|:|=|should\s+be|would\s+be|will\s+be)[ \t]*(?:\*\*)?[ \t]*:?[ \t]*([^\n]*)"
)


def _found(pattern: re.Pattern[str], text: str) -> list[tuple[tuple[int, int], str]]:
    return [(m.span(), m.group(1)) for m in pattern.finditer(text)]


@settings(max_examples=500, deadline=None)
@given(texts("####", "#", "\t", "x", "1", "\n", "**", size=20))
def test_math_hash_is_the_backtracking_regex(text: str) -> None:
    assert _found(math_extract._HASH, text) == _found(_OLD_HASH, text)


@settings(max_examples=500, deadline=None)
@given(texts("answer", "Final", "is", "**", ":", "=", "should be", "\t", "x", size=20))
def test_math_answer_phrase_is_the_backtracking_regex(text: str) -> None:
    assert _found(math_extract._PHRASE, text) == _found(_OLD_PHRASE, text)


@settings(max_examples=500, deadline=None)
@given(texts("A", ":", "\t", "x", "A:", " A :", size=12))
def test_math_answer_line_is_the_lazy_regex(text: str) -> None:
    line = math_extract._last_line(text)
    old = re.match(r"^\s*A\s*:\s*(.+?)\s*$", line)
    assert math_extract._answer_line(line) == (old.group(1) if old else None)


_OLD_HEADING_NUMBER = re.compile(  # backtracking, a number taken whole ("1.2", never "1" of it)
    rf"\b({_NUMBERED})\s*[#№(]?\s*(?:\d+(?:\.\d+)*(?!\d|\.\d)|[ivx]{{1,4}})(?=\s*[:.)\-：])"
)


@settings(max_examples=500, deadline=None)
@given(texts("step", "steps", "part", "#", "(", "1", "12", "112", "iv", ":", ".", "\t", size=16))
def test_guard_heading_numbers_are_the_backtracking_regex(text: str) -> None:
    assert _HEADING_NUMBER.sub(r"\1", text) == _OLD_HEADING_NUMBER.sub(r"\1", text)


_IMAGE_PART = {"type": "image_url", "image_url": {"url": "https://example.invalid/a.png"}}


def _title_followed(text: str) -> bool:
    result = score_one(ifeval(), "detectable_format:title", {}, text)
    return result.detail["follow_instruction_list"] == [True]


def _any_rating(text: str) -> int | None:
    rating = parse_rating(text, 1, 10, anywhere=True)
    return None if rating is None else rating[0]


def _first_line_rating(text: str) -> int | None:
    rating = parse_rating(text, 1, 10)
    return None if rating is None else rating[0]


def _image_parts(content: str) -> tuple:
    ((_, parts),) = with_image_parts((("user", content),))
    return parts


# The inputs the ReDoS scan flagged, at 100,000-200,000 characters (the math rows at the
# 20,000 the math reward reads): the regexes these scans replaced took 2-90 s on each (under
# load), the scans milliseconds.
@pytest.mark.parametrize(
    ("call", "text", "expected"),
    [
        (order_matters, "[" * 200_000, False),
        (order_matters, "SELECT a FROM t " + "[" * 200_000 + " ORDER BY a", True),
        (order_matters, "SELECT [a] FROM t -- " + "[" * 200_000, False),
        # No complete block: the whole text is the program (it then fails to compile).
        (lambda t: extract_code(t, "auto"), "~" * 200_000, "~" * 200_000),
        (lambda t: extract_code(t, "auto"), "```py\n" * 16_000, "```py\n" * 16_000),
        (lambda t: extract_code(t, "auto"), "~" * 200_000 + "\n```py\nprint(1)\n```", "print(1)\n"),
        (_title_followed, "<" * 199_000, False),
        (_title_followed, "<" * 199_000 + "\n<<A Title>>", True),
        (math_extract._PHRASE.search, "The answer" + " " * 19_000 + "x", None),
        (math_extract._HASH.search, "####" + " \t" * 9_500 + "\n", None),
        (math_extract._answer_line, "A: x" + " " * 19_000 + "y", "x" + " " * 19_000 + "y"),
        (normalise, "Step" + " " * 50_000 + "?", "step"),
        (_any_rating, "Score:" + " " * 50_000 + "x", None),
        (_first_line_rating, "5" + " " * 50_000 + "x", None),
        (_any_rating, "Score: 5" + " " * 50_000 + "x\nScore: 6", 6),
        (_image_parts, _IMAGE_OPEN * 10_000, ({"type": "text", "text": _IMAGE_OPEN * 10_000},)),
        (
            _image_parts,
            _IMAGE_OPEN * 10_000 + "\n" + _IMAGE_OPEN + json.dumps(_IMAGE_PART) + _IMAGE_CLOSE,
            ({"type": "text", "text": _IMAGE_OPEN * 10_000 + "\n"}, _IMAGE_PART),
        ),
    ],
    ids=[
        "sql unclosed brackets",
        "sql order by after unclosed brackets",
        "sql brackets in a comment",
        "code tildes",
        "code unclosed tagged fences",
        "code block after a tilde line",
        "ifeval title openers",
        "ifeval title after openers",
        "math answer phrase before spaces",
        "math #### before blanks",
        "math A: line with inner spaces",
        "judge guard heading word before spaces",
        "judge score label before spaces",
        "judge rating before spaces",
        "judge score line before spaces",
        "judge image openers",
        "judge image after openers",
    ],
)
def test_worst_cases_of_the_replaced_regexes(call, text: str, expected) -> None:
    assert call(text) == expected


# The math text clean-up (`normalize`) and the last-line fallback read blank runs once: a
# padded final line ("The answer", 9,000 ` ~` LaTeX spaces, "x") took 5-10 s in patterns that
# backtrack over a run from every blank in it, and the sample would time out.
@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("The answer" + " " * 19_000 + "x", None),
        ("The answer" + " ~" * 9_000 + "x", None),
        ("The answer" + " \u00a0" * 9_000 + "x", None),
        ("The answer" + "\u2003" * 19_000 + "x", None),
        ("The answer" + "\\ " * 9_000 + "x", None),
        ("So" + " " * 19_000 + "5", "5"),
        ("I think maybe 5 or 6" + " " * 3_000 + "7", None),
    ],
    ids=["spaces", "tildes", "nbsp", "em spaces", "backslash spaces", "number", "hedge refused"],
)
def test_padded_final_lines_read_blank_runs_once(text: str, answer: str | None) -> None:
    assert math_extract.extract_answer(text).answer == answer
