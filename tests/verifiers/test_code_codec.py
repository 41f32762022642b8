"""The plain-data codec: round trips, exact types, limits, and hostile bytes (property tests)."""

from __future__ import annotations

import collections
import enum
import fractions
import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rewardsmith.verifiers.code._codec import (
    MAX_DEPTH,
    NotPlain,
    TooLarge,
    decode,
    encode,
    receive,
    send,
)

_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.complex_numbers(allow_nan=False)
    | st.text()
    | st.binary()
)
_hashable = st.recursive(
    _scalars, lambda inner: st.tuples(inner, inner) | st.frozensets(inner), max_leaves=8
)
_plain = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner)
        | st.tuples(inner, inner)
        | st.dictionaries(_hashable, inner)
        | st.sets(_hashable)
        | st.frozensets(_hashable)
    ),
    max_leaves=12,
)


def _same(a, b) -> bool:
    """Equal, and of exactly the same types all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


@given(_plain)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_plain_values_round_trip_exactly(value) -> None:
    assert _same(decode(encode(value)), value)


@given(st.binary(max_size=200))
@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
def test_any_bytes_decode_to_plain_data_or_not_plain(data: bytes) -> None:
    try:
        value = decode(data)
    except NotPlain:
        return
    assert _same(decode(encode(value)), value)


@given(_plain, st.integers(min_value=0, max_value=200))
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_truncated_messages_are_refused(value, cut: int) -> None:
    data = encode(value)
    if cut < len(data):
        with pytest.raises(NotPlain):
            decode(data[:cut])


class _Int(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


@pytest.mark.parametrize(
    "value",
    [_Int(3), [1, _Int(2)], {"k": object()}, type("L", (list,), {})(), len, iter([]), math],
)
def test_anything_else_is_not_plain(value) -> None:
    with pytest.raises(NotPlain) as caught:
        encode(value)
    assert not isinstance(caught.value, TooLarge)


def test_special_floats_and_edges() -> None:
    assert math.isnan(decode(encode(float("nan"))))
    assert decode(encode([float("inf"), -0.0, 2**200, -(2**200), "\ud800", b"\0"])) == [
        float("inf"),
        -0.0,
        2**200,
        -(2**200),
        "\ud800",
        b"\0",
    ]


def test_nesting_and_cycles_are_bounded() -> None:
    deep: list = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(TooLarge, match="deeper"):  # plain, over a limit: told apart
        encode(deep)
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(NotPlain):
        encode(cycle)
    with pytest.raises(NotPlain, match="deeper"):
        decode(b"l\x01" * (MAX_DEPTH + 5) + b"N")


def test_numpy_scalars_convert_only_when_asked() -> None:
    np = pytest.importorskip("numpy")
    with pytest.raises(NotPlain):
        encode(np.int64(3))
    assert _same(decode(encode([np.int64(3), np.float64(0.5)], convert=True)), [3, 0.5])
    with pytest.raises(NotPlain):
        encode(np.array([1, 2]), convert=True)


class _Liar(int):
    """An int subclass whose own methods all lie."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__

    def __int__(self) -> int:
        return 99


class _Colour(enum.IntEnum):
    RED = 1


def test_subclasses_of_plain_types_convert_to_their_base_only_when_asked() -> None:
    point = collections.namedtuple("point", "x y")
    value = [
        collections.Counter("aab"),
        collections.OrderedDict(b=1),
        collections.defaultdict(list, {"k": [1]}),
        point(1, 2),
        _Colour.RED,
        _Liar(3),
        {_Liar(4): frozenset({_Colour.RED})},
    ]
    with pytest.raises(NotPlain, match="Counter"):
        encode(value)
    expected = [{"a": 2, "b": 1}, {"b": 1}, {"k": [1]}, (1, 2), 1, 3, {4: frozenset({1})}]
    assert _same(decode(encode(value, convert=True)), expected)  # the base's value, no lie
    with pytest.raises(NotPlain, match="Fraction"):
        encode(fractions.Fraction(1, 3), convert=True)


def test_messages_on_a_pipe() -> None:
    r, w = os.pipe()
    try:
        send(w, ("ok", [1, {"a": b"x"}]))
        assert receive(r) == ("ok", [1, {"a": b"x"}])
        os.write(w, (2**31).to_bytes(4, "little"))
        with pytest.raises(NotPlain, match="over"):
            receive(r)
    finally:
        os.close(w)
    with pytest.raises(EOFError):
        receive(r)
    os.close(r)
