"""Query -> completion, as OpenRLHF decodes its rollouts (`integrations._protocol`, which the
server's `/get_reward` and the `reward_func` adapter share)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsmith import RewardSpec
from rewardsmith.integrations._protocol import (
    _LEADING,
    _prompt_end,
    completion_from_query,
    failure_reward,
)

QWEN = "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"
LLAMA3 = (
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
)


@pytest.mark.parametrize(
    ("query", "prompt", "completion", "found"),
    [
        # left padding, the prompt, the response, end of turn and end of text
        ("<|endoftext|>" * 3 + QWEN + "It is 4.<|im_end|>\n<|endoftext|>", QWEN, "It is 4.", True),
        (LLAMA3 + "It is 4.<|eot_id|><|end_of_text|>", LLAMA3, "It is 4.", True),
        # the space SentencePiece decodes before the response's first word is not the response's
        ("<s> [INST] 2+2? [/INST] It is 4.</s>", "[INST] 2+2? [/INST]", "It is 4.", True),
        (
            "<｜begin▁of▁sentence｜>Q<｜Assistant｜>4<｜end▁of▁sentence｜>",
            "Q<｜Assistant｜>",
            "4",
            True,
        ),
        (
            "<bos><start_of_turn>user\nQ<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>\n<eos>",
            "<start_of_turn>user\nQ<end_of_turn>\n",
            "4",
            True,
        ),
        # the response keeps its inner text, special-looking or not
        (QWEN + "a <|im_end|> b<|im_end|>", QWEN, "a <|im_end|> b", True),
        # no prompt given (oldest OpenRLHF): only the special tokens go
        ("<|im_start|>assistant\nIt is 4.<|im_end|>", None, "It is 4.", False),
        # decoding changed the prompt's whitespace: still found
        ("<pad>Wh at is 2+2? 4</s>", "What is 2+2?", "4", True),
        # the prompt was cut from the left: the rest of it starts the query
        (QWEN[20:] + "It is 4.<|im_end|>", QWEN, "It is 4.", False),
        ("\ufffd" + QWEN[31:] + "It is 4.<|im_end|>", QWEN, "It is 4.", False),  # cut in a char
        ("<|endoftext|>" + LLAMA3[70:] + "4<|eot_id|>", LLAMA3, "4", False),
        # ... and a header the policy wrote in its response does not move the boundary
        (
            QWEN[20:] + "3 or 5<|im_end|>\n<|im_start|>assistant\n4<|im_end|>",
            QWEN,
            "3 or 5<|im_end|>\n<|im_start|>assistant\n4",
            False,
        ),
        # the prompt is not there at all, but a chat template's assistant header is
        (QWEN.replace("2+2", "3+3") + "6<|im_end|>", QWEN, "6", False),
        # ... counted from the query's start: a header the policy wrote does not move it
        (
            QWEN.replace("2+2", "3+3") + "x" * 50 + "<|im_start|>assistant\nyy<|im_end|>",
            QWEN,
            "x" * 50 + "<|im_start|>assistant\nyy",
            False,
        ),
        # nothing tells the prompt from the response: no completion (the sample is invalid)
        ("<pad>What is 3+3? 6</s>", "What is 2+2?", None, False),
        # a prompt with no header, not found: the policy's header is not taken for its end
        ("Q: 3+3? x<|im_start|>assistant\nyy", "Q: 2+2?", None, False),
        # no prompt and several headers: which one opens the response is unknown
        (
            "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nx<|im_start|>assistant\ny",
            None,
            None,
            False,
        ),
    ],
)
def test_completion_from_query(
    query: str, prompt: str | None, completion: str | None, found: bool
) -> None:
    assert completion_from_query(query, prompt) == (completion, found)


def test_failure_reward_is_on_error_else_zero() -> None:
    spec = {"rewards": {"c": {"type": "exact_match"}}}
    assert failure_reward(RewardSpec.from_dict(spec)) == 0.0
    assert failure_reward(RewardSpec.from_dict({**spec, "on_error": -1})) == -1.0


def _prompt_end_by_probes(query: str, prompt: str) -> int | None:
    """`_prompt_end` as it was until helper-63 (each match of an 8-character probe tried):
    the oracle the linear one must agree with."""
    lead = _LEADING.match(query)
    last_start = min(len(query), (lead.end() if lead else 0) + 4)
    for skip in range(last_start + 1):
        probe = query[skip : skip + 8]
        if not probe:
            break
        at = prompt.find(probe)
        while at >= 0:
            end = prompt[at:]
            if len(end) >= min(8, len(prompt)) and query.startswith(end, skip):
                return skip + len(end)
            at = prompt.find(probe, at + 1)
    return None


_PIECES = st.sampled_from([" ", "\n", "a", "b", "ab", "<|im_end|>", "<|endoftext|>", "Q: 2+2?"])


@settings(max_examples=3000, deadline=None)
@given(st.lists(_PIECES, max_size=12), st.lists(_PIECES, max_size=12), st.integers(0, 24))
def test_a_truncated_prompts_end_is_found_where_probing_found_it(
    head: list[str], tail: list[str], cut: int
) -> None:
    prompt = "".join(head)
    query = prompt[cut:] + "".join(tail)  # the prompt cut from the left, then anything
    assert _prompt_end(query, prompt) == _prompt_end_by_probes(query, prompt)
    assert _prompt_end("".join(tail), prompt) == _prompt_end_by_probes("".join(tail), prompt)


def test_padding_made_of_spaces_costs_linear_time_not_cubic() -> None:
    """helper-63: a 6 KB request (3,000 spaces in query and prompt, no match) held the
    server 5 s, and 256 KiB would have held it for hours. Nothing is found, as before."""
    assert completion_from_query(" " * 3000 + "x", " " * 3000 + "y") == (None, False)
    assert completion_from_query(" " * 100_000 + "x", " " * 100_000 + "y") == (None, False)
