"""think_format and json_valid: every rule, every option, edge cases, real data."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import uri_template
from hypothesis import assume, given
from hypothesis import strategies as st

from rewardsmith._exceptions import ConfigError
from rewardsmith.models import Sample
from rewardsmith.registry import registry
from rewardsmith.verifiers._json_formats import is_iri, is_iri_reference, is_uri_template
from rewardsmith.verifiers.format import json_valid, think_format

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def sample(completion: Any) -> Sample:
    return Sample(id="x", completion=completion)


def chat(answer: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": "Question?"}, {"role": "assistant", "content": answer}]


@pytest.mark.parametrize(
    ("name", "attr"), [("think_format", "think_format"), ("json", "json_valid")]
)
def test_registered_lazily_under_their_names(name: str, attr: str) -> None:
    import rewardsmith.verifiers.format as fmt

    assert registry.get(name).factory is getattr(fmt, attr)


# -- think_format --------------------------------------------------------------------------

THINK_CASES = [
    # (options, completion, failed rule or None when it passes)
    ({}, "<think>2+2 is 4.</think>4", None),
    ({}, "\n  <think>\nreasoning\n</think>\n\nThe answer is 4.", None),
    ({}, chat("<think>r</think>a"), None),
    ({}, "<think>推理</think>答案", None),
    ({}, "", "starts_with_open_tag"),
    ({}, "4", "starts_with_open_tag"),
    ({}, "Sure! <think>r</think>a", "starts_with_open_tag"),
    ({}, "<THINK>r</THINK>a", "starts_with_open_tag"),
    ({}, "<think>r", "closed"),
    ({}, "<think>r<think>s</think>a", "single_block"),  # nested
    ({}, "<think>r</think>a<think>s</think>b", "single_block"),  # a second block
    ({}, "<think>r</think>a</think>", "single_block"),
    ({}, "<think></think>a", "reasoning"),
    ({}, "<think> \n </think>a", "reasoning"),
    ({}, "<think>r</think>", "answer"),
    ({}, "<think>r</think>  \n", "answer"),
    ({"require_answer": False}, "<think>r</think>", None),
    ({"require_answer": False}, "<think></think>", "reasoning"),
    ({"tag": "reasoning"}, "<reasoning>r</reasoning>a", None),
    ({"tag": "reasoning"}, "<think>r</think>a", "starts_with_open_tag"),
    ({"tag": "reasoning"}, "<reasoning>r</reasoning>a</reasoning>", "single_block"),
]


@pytest.mark.parametrize(
    ("options", "completion", "rule"),
    THINK_CASES,
    ids=[f"{c[0] or 'default'}-{str(c[1])[:30]!r}" for c in THINK_CASES],
)
def test_think_format(options: dict[str, Any], completion: Any, rule: str | None) -> None:
    result = think_format(**options)(sample(completion))
    assert result.status == "ok"
    assert result.score == (1.0 if rule is None else 0.0)
    assert result.detail.get("rule") == rule
    if rule is not None:
        assert result.detail["reason"]


@pytest.mark.parametrize("tag", ["", "<think>", "two words", "1x"])
def test_think_format_bad_tag_names_the_parameter(tag: str) -> None:
    with pytest.raises(ConfigError, match="tag"):
        think_format(tag=tag)


@pytest.mark.skipif(not (DATA / "math500").exists(), reason=f"no real data at {DATA}")
def test_think_format_on_math500_solutions() -> None:
    """Real reasoning wrapped in the expected structure passes; without the answer it fails."""
    rows = [
        json.loads(line)
        for line in (DATA / "math500" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    reward_fn = think_format()
    for row in rows:
        assert reward_fn(sample(f"<think>{row['solution']}</think>{row['answer']}")).score == 1.0
        assert reward_fn(sample(f"<think>{row['solution']}</think>")).detail["rule"] == "answer"


# -- json ----------------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name"],
}

JSON_CASES = [
    # (options, completion, expected score)
    ({}, '{"a": 1}', 1.0),
    ({}, "  [1, 2, 3]\n", 1.0),
    ({}, '"just a string"', 1.0),
    ({}, "null", 1.0),
    ({}, '{"ville": "Zürich", "emoji": "🙂"}', 1.0),
    ({}, '<think>{oops</think>\n{"a": 1}', 1.0),
    ({}, chat('{"a": 1}'), 1.0),
    ({}, "{'a': 1}", 0.0),
    ({}, '{"a": 1,}', 0.0),
    ({}, '{"a": NaN}', 0.0),
    ({}, "Infinity", 0.0),
    ({}, 'Here it is: {"a": 1}', 0.0),
    ({}, "", 0.0),
    ({}, '<think>{"a": 1}', 0.0),  # unclosed reasoning: no answer
    ({"extract": "fenced"}, 'Sure:\n```json\n{"a": 1}\n```\nDone.', 1.0),
    ({"extract": "fenced"}, '```JSON\n{"a": 1}\n```', 1.0),
    ({"extract": "fenced"}, '```\n{"a": 1}\n```', 1.0),
    ({"extract": "fenced"}, '```json\n{"a": 1}\n```\n```json\n{bad\n```', 1.0),  # the first
    ({"extract": "fenced"}, '```python\n{"a": 1}\n```', 0.0),
    ({"extract": "fenced"}, '{"a": 1}', 0.0),
    ({"extract": "fenced"}, "```json\n{bad}\n```", 0.0),
    ({"extract": "first_object"}, 'Result: {"a": {"b": [1]}} and {"c": 2}', 1.0),
    ({"extract": "first_object"}, 'Set {x} then {"a": 1}', 1.0),  # {x} does not parse
    ({"extract": "first_object"}, "[1, 2]", 0.0),  # an array is not an object
    ({"extract": "first_object"}, "no braces here", 0.0),
    ({"schema": SCHEMA}, '{"name": "Ada", "age": 36}', 1.0),
    ({"schema": SCHEMA}, '{"name": "Ada"}', 1.0),
    ({"schema": SCHEMA}, '{"age": 36}', 0.0),
    ({"schema": SCHEMA}, '{"name": "Ada", "age": -1}', 0.0),
    ({"schema": SCHEMA}, "[]", 0.0),
    ({"schema": SCHEMA, "extract": "fenced"}, '```json\n{"name": "Ada"}\n```', 1.0),
]


@pytest.mark.parametrize(
    ("options", "completion", "expected"),
    JSON_CASES,
    ids=[f"{sorted(c[0])}-{str(c[1])[:30]!r}" for c in JSON_CASES],
)
def test_json_valid(options: dict[str, Any], completion: Any, expected: float) -> None:
    result = json_valid(**options)(sample(completion))
    assert result.status == "ok"
    assert result.score == expected
    assert ("reason" in result.detail) == (expected == 0.0)


@pytest.mark.parametrize(
    ("completion", "error", "path"),
    [
        ('{"age": 36}', "'name' is a required property", "$"),
        ('{"name": "Ada", "age": "old"}', "'old' is not of type 'integer'", "$.age"),
    ],
)
def test_json_schema_error_is_in_detail(completion: str, error: str, path: str) -> None:
    result = json_valid(schema=SCHEMA)(sample(completion))
    assert result.detail == {"reason": "does not match the schema", "error": error, "path": path}


def test_json_parse_error_is_in_detail() -> None:
    reason = json_valid()(sample('{"a": }')).detail["reason"]
    assert reason.startswith("not valid JSON: Expecting value")


@pytest.mark.parametrize(
    "schema",
    [{"type": "no-such-type"}, {"properties": []}, {"minimum": "zero"}],
    ids=["bad-type", "properties-list", "minimum-string"],
)
def test_json_invalid_schema_names_the_parameter(schema: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="schema"):
        json_valid(schema=schema)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    )
)
def test_json_round_trip_is_valid(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False)
    assume(not any(marker in text for marker in ("<think>", "</think>", "```")))
    assert json_valid()(sample(text)).score == 1.0
    assert json_valid(extract="fenced")(sample(f"```json\n{text}\n```")).score == 1.0


@pytest.mark.parametrize("extract", ["whole", "first_object"])
def test_json_too_deep_to_parse_is_wrong_not_invalid(extract: str) -> None:
    result = json_valid(extract=extract)(sample('{"a":' * 10_000 + "1" + "}" * 10_000))
    assert (result.status, result.score) == ("ok", 0.0)  # the policy wrote it: never a null
    assert "nested too deeply" in result.detail["reason"]


def test_think_format_minimum_words_are_configurable() -> None:
    reward = think_format(min_reasoning_words=3, min_answer_words=2)
    assert reward(sample("<think>one two</think>x y")).detail["rule"] == "reasoning"
    assert reward(sample("<think>one two three</think>x")).detail["rule"] == "answer"
    assert reward(sample("<think>one two three</think>x y")).score == 1.0
    with pytest.raises(ConfigError, match="at least 1"):
        think_format(min_reasoning_words=0)


def test_json_refuses_a_schema_with_a_format_nobody_checks() -> None:
    with pytest.raises(ConfigError, match="no checker for format 'shoe-size'"):
        json_valid(schema={"type": "string", "format": "shoe-size"})
    # a property named "format" is not the format keyword
    schema = {"type": "object", "properties": {"format": {"type": "string"}}}
    assert json_valid(schema=schema)(sample('{"format": "A4"}')).score == 1.0
    dated = json_valid(schema={"type": "string", "format": "date"})
    assert [dated(sample(t)).score for t in ('"2024-02-29"', '"2024-02-30"')] == [1.0, 0.0]


EMAILS = [
    ("email", "a@b.co", 1.0),
    ("email", "john.doe+tag@mail.example.com", 1.0),
    ("email", "user@[127.0.0.1]", 1.0),
    ("email", "user@[IPv6:::1]", 1.0),
    ("email", "@", 0.0),  # jsonschema's own check is `"@" in value`
    ("email", "a@b", 0.0),  # one label
    ("email", "not an email@x.com", 0.0),
    ("email", "a..b@x.com", 0.0),
    ("email", ".a@x.com", 0.0),
    ("email", "a@-x.com", 0.0),
    ("email", "a@x.123", 0.0),
    ("email", "a@x..com", 0.0),
    ("email", "josé@example.com", 0.0),  # non-ASCII: idn-email only
    ("idn-email", "josé@example.com", 1.0),
    ("idn-email", "用户@例子.广告", 1.0),
    ("idn-email", "@例子.广告", 0.0),
    ("idn-email", "@", 0.0),
]


@pytest.mark.parametrize(("fmt", "value", "expected"), EMAILS)
def test_json_email_formats_are_real_checks(fmt: str, value: str, expected: float) -> None:
    reward = json_valid(schema={"type": "string", "format": fmt})
    assert reward(sample(json.dumps(value, ensure_ascii=False))).score == expected


@pytest.mark.parametrize(
    ("extract", "text", "key"),
    [("whole", '{"a": 1, "a": 2}', "a"), ("first_object", 'x {"a": {"b": 1, "b": 1}}', "b")],
)
def test_json_duplicate_keys_score_0_with_the_reason(extract: Any, text: str, key: str) -> None:
    result = json_valid(extract=extract)(sample(text))
    assert (result.score, result.detail["reason"]) == (
        0.0,
        f"duplicate key {key!r} in a JSON object",
    )


@pytest.mark.parametrize(
    "text", ["{" * 1_000_000, "\\frac{1}{2} " * 80_000, '{"' * 500_000, '{"a": [1' + ",1" * 400_000]
)
def test_json_first_object_is_bounded_on_brace_heavy_text(text: str) -> None:
    start = time.perf_counter()
    assert json_valid(extract="first_object")(sample(text)).score == 0.0
    assert time.perf_counter() - start < 1.0


IRI_ALPHABET = [*"a1:/?#@[].%F2v5-+ x!~", "\u00e9", "\ue000", "::", "//", "%2F", "[::1]", "1.2.3.4"]


@given(st.lists(st.sampled_from(IRI_ALPHABET), max_size=8).map("".join))
def test_iri_checks_agree_with_rfc3987_syntax(value: str) -> None:
    rfc3987_syntax = pytest.importorskip("rfc3987_syntax")
    assert is_iri(value) == rfc3987_syntax.is_valid_syntax("iri", value)
    assert is_iri_reference(value) == rfc3987_syntax.is_valid_syntax("iri_reference", value)


@given(st.lists(st.sampled_from([*"{}a,+#.:*", "{a}", "%2F", "{+a}"]), max_size=8).map("".join))
def test_uri_template_check_agrees_with_uri_template(value: str) -> None:
    assert is_uri_template(value) == uri_template.validate(value)


@pytest.mark.parametrize("fmt", ["iri", "iri-reference", "uri-template"])
@pytest.mark.parametrize("value", ["a" * 200_000, "http://x/" + "a/" * 100_000, "{" * 200_000])
def test_slow_formats_are_checked_in_linear_time(fmt: str, value: str) -> None:
    reward = json_valid(schema={"type": "string", "format": fmt})
    start = time.perf_counter()
    reward(sample(json.dumps(value)))
    assert time.perf_counter() - start < 1.0
