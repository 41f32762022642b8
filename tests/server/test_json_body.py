"""The server reads request bodies with orjson where it reads them as `json.loads` does, and
with `json` everywhere else: the fast path must never change what a body means."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rewardsmith.server._app import _loads


def _loaded(body: bytes) -> object:
    """`_loads` as `_parse_json` calls it."""
    return _loads(body, body.count(b"[") + body.count(b"{"))


def _read(loads, body: bytes) -> tuple[str, ...]:
    """What a reader makes of `body`: its value (by repr: -0.0, nan and int/float kept
    apart), or that it refused it."""
    try:
        return ("value", repr(loads(body)))
    except RecursionError:
        return ("too deep",)
    except (ValueError, UnicodeDecodeError):
        return ("refused",)


@pytest.mark.parametrize(
    "body",
    [
        b'{"samples": [{"completion": "x", "reference": "4"}]}',
        b"123456789012345678901234567890",  # orjson: a float; json: the integer
        b"-9223372036854775809",
        b'{"reference": 18446744073709551616}',
        b"NaN",
        b"[Infinity, -Infinity]",
        b"1E400",
        b'"\\ud800"',  # a lone surrogate: orjson refuses it, json keeps it
        b'"\xed\xa0\x80"',  # the same surrogate as raw bytes
        b"\xef\xbb\xbf{}",  # a byte-order mark
        '{"a": 1}'.encode("utf-16"),
        b'{"a": 1, "a": 2}',
        b"[-0.0, 0.1, 1e-400, 1.7976931348623157e308]",
        b"[" * 2000 + b"]" * 2000,
        b"[" * 990 + b"]" * 990,  # json's RecursionError depends on the stack: so must ours
        b'{"a": "\\u0000\\/"}',
        b"",
        b"[1,]",
    ],
)
def test_a_body_reads_as_json_reads_it(body: bytes) -> None:
    assert _read(_loaded, body) == _read(json.loads, body)


_TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=6)
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=10,
)
_PIECES = st.sampled_from(
    [b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\u", b"d800", b"1e400", b"-", b"0", b"9",
     b".", b"e", b"NaN", b"Infinity", b"true", b" ", b"\xef\xbb\xbf", b"\xed\xa0\x80", b"\xff",
     b"\\", b"\x00", b"99999999999999999999", b"0.30000000000000004"]
)  # fmt: skip


def _encoded(value: object, ascii_only: bool) -> bytes:
    return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@settings(max_examples=3000, deadline=None)
@given(
    st.one_of(
        st.builds(_encoded, _VALUES, st.booleans()),
        st.lists(_PIECES, max_size=20).map(b"".join),
        st.tuples(st.builds(_encoded, _VALUES, st.booleans()), st.integers(0, 40), _PIECES).map(
            lambda t: t[0][: t[1]] + t[2] + t[0][t[1] :]
        ),
    )
)
def test_any_body_reads_as_json_reads_it(body: bytes) -> None:
    assert _read(_loaded, body) == _read(json.loads, body)


DEEP = """
from rewardsmith.server._app import _parse_json
from rewardsmith.server._http import Refusal
for body in (b"[" * 140000 + b"]" * 140000, b'{"a":' * 70000 + b"1" + b"}" * 70000):
    try:
        _parse_json(body)
    except Refusal as refusal:
        print(refusal.answer().status)
"""


def test_a_body_nested_past_any_parser_stack_is_refused_not_a_crash() -> None:
    """orjson 3.8 reads nesting with no limit: 140,000 brackets (280 KB) overflowed the C
    stack and killed the server (red team, helper-58). Run apart: a crash is an exit code."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    done = subprocess.run(
        [sys.executable, "-c", DEEP], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["422", "422"]
