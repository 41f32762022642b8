"""Plain data across the trust boundary: the only values the candidate and the tests exchange.

A value is *plain* when its type is exactly one of ``None``, ``bool``, ``int``, ``float``,
``complex``, ``str``, ``bytes``, or a ``list``, ``tuple``, ``dict``, ``set`` or ``frozenset``
of plain values (exact types: an ``int`` subclass is not an ``int``), nested at most
`MAX_DEPTH` deep, at most `MAX_ITEMS` values and `MAX_BYTES` encoded. `decode` builds
nothing else, whatever the bytes say: it runs in the trusted test process on bytes the
candidate wrote, so a malformed, truncated, oversized or hostile message is a `NotPlain`
error, never an object with behaviour of its own (no ``__eq__`` that always says yes).

The candidate side asks `encode` to convert (``convert=True``) what solutions commonly return
and the official harnesses accept by ``==``: NumPy scalars become the Python value they hold
(``np.int64(3)`` -> ``3``), and values of subclasses of plain types the value of the plain type
(``Counter``, ``OrderedDict``, ``defaultdict`` -> ``dict``; a namedtuple -> ``tuple``; an
``IntEnum`` -> ``int``), read with the plain type's own methods. That conversion runs in the
candidate's own process, on its own values: it can only ever yield a plain value the
candidate could have returned itself. Other types (``Fraction``, ``Decimal``, arrays) are not
converted: their comparisons are not those of any plain value.

This module is shipped into the sandbox as source (see `_runtime`): standard library only.
"""

from __future__ import annotations

import os
import struct
from typing import Any

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_ITEMS",
    "NotPlain",
    "TooLarge",
    "decode",
    "encode",
    "encode_counted",
    "receive",
    "send",
    "send_encoded",
]

MAX_DEPTH = 100
"""Deepest nesting of containers."""
MAX_ITEMS = 2_000_000
"""Most values (containers and scalars) in one message."""
MAX_BYTES = 32 * 1024 * 1024
"""Largest encoded message."""

_DOUBLE = struct.Struct("<d")
_COMPLEX = struct.Struct("<dd")
_CONTAINERS = {list: b"l", tuple: b"t", set: b"S", frozenset: b"z"}
_BUILD = {ord("l"): list, ord("t"): tuple, ord("S"): set, ord("z"): frozenset}


class NotPlain(ValueError):
    """A value (or message) that is not plain data; the message says what was found."""


class TooLarge(NotPlain):
    """Plain data, but over the limits (`MAX_DEPTH`, `MAX_ITEMS`, `MAX_BYTES`) to `encode`."""


def encode(value: Any, *, convert: bool = False) -> bytes:
    """`value` as bytes; raises `NotPlain` for anything but plain data, `TooLarge` (a
    `NotPlain`) for plain data over the limits."""
    return encode_counted(value, convert=convert)[0]


def encode_counted(value: Any, *, convert: bool = False) -> tuple[bytes, int]:
    """`encode`, and how many values the message holds (for budgets across messages)."""
    out, count = bytearray(), [0]
    _encode(value, out, 0, convert, count)
    if len(out) > MAX_BYTES:
        raise TooLarge(f"value over {MAX_BYTES} bytes encoded")
    return bytes(out), count[0]


def _encode(value: Any, out: bytearray, depth: int, convert: bool, count: list[int]) -> None:
    count[0] += 1
    if count[0] > MAX_ITEMS:
        raise TooLarge(f"more than {MAX_ITEMS} values")
    if len(out) > MAX_BYTES:
        raise TooLarge(f"value over {MAX_BYTES} bytes encoded")
    kind = type(value)
    if value is None:
        out += b"N"
    elif kind is bool:
        out += b"T" if value else b"F"
    elif kind is int:
        size = (value.bit_length() + 8) // 8
        out += b"i"
        _size(size, out)
        out += value.to_bytes(size, "little", signed=True)
    elif kind is float:
        out += b"f" + _DOUBLE.pack(value)
    elif kind is complex:
        out += b"c" + _COMPLEX.pack(value.real, value.imag)
    elif kind is str:
        data = value.encode("utf-8", "surrogatepass")
        out += b"s"
        _size(len(data), out)
        out += data
    elif kind is bytes:
        out += b"b"
        _size(len(value), out)
        out += value
    elif kind in _CONTAINERS or kind is dict:
        if depth >= MAX_DEPTH:
            raise TooLarge(f"nested deeper than {MAX_DEPTH}")
        if kind is dict:
            out += b"d"
            _size(len(value), out)
            for key, item in list(value.items()):
                _encode(key, out, depth + 1, convert, count)
                _encode(item, out, depth + 1, convert, count)
        else:
            out += _CONTAINERS[kind]
            items = list(value)
            _size(len(items), out)
            for item in items:
                _encode(item, out, depth + 1, convert, count)
    elif convert and (base := _plain_base(kind)) is not None:
        count[0] -= 1  # the same value, as its plain base
        _encode(_AS_BASE[base](value), out, depth, convert, count)
    elif convert and _numpy_scalar(value):
        plain = value.item()
        if type(plain) not in (bool, int, float, complex, str, bytes):
            raise NotPlain(f"a NumPy {_type_name(kind)} holding a {_type_name(type(plain))}")
        _encode(plain, out, depth, False, count)
    else:
        raise NotPlain(f"a value of type {_type_name(kind)}, not plain data")


_AS_BASE: dict[type, Any] = {
    int: int.__int__,
    float: float.__float__,
    complex: complex.__pos__,
    str: str.__str__,
    bytes: lambda value: bytes.__getitem__(value, slice(None)),
    list: lambda value: list(list.__iter__(value)),
    tuple: lambda value: tuple(tuple.__iter__(value)),
    dict: lambda value: dict(dict.items(value)),
    set: lambda value: set(set.__iter__(value)),
    frozenset: lambda value: frozenset(frozenset.__iter__(value)),
}
"""A value of a subclass of a plain type as a value of the type itself, read with the base
type's own methods (never the subclass's: an ``__eq__``, ``__iter__`` or ``__int__`` of its
own is never called). Each gives an object of exactly the base type."""


def _plain_base(kind: type) -> type | None:
    """The plain type `kind` subclasses (``Counter`` -> ``dict``, a namedtuple -> ``tuple``,
    an ``IntEnum`` -> ``int``), if any."""
    for base in _AS_BASE:
        if issubclass(kind, base):
            return base
    return None


def _numpy_scalar(value: Any) -> bool:
    """A NumPy scalar (what NumPy reductions return), not an array."""
    try:
        return type(value).__module__ == "numpy" and value.ndim == 0 and value.size == 1
    except Exception:
        return False


def _type_name(kind: type) -> str:
    try:
        return str(kind.__qualname__)[:100]
    except Exception:  # a hostile metaclass: name nothing
        return "value of an unnamed type"


def _size(n: int, out: bytearray) -> None:
    """A non-negative size as a little-endian base-128 varint."""
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def decode(data: bytes) -> Any:
    """The plain value `data` encodes; raises `NotPlain` for anything else."""
    if len(data) > MAX_BYTES:
        raise NotPlain(f"message over {MAX_BYTES} bytes")
    reader = _Reader(data)
    try:
        value = reader.value()
    except (IndexError, struct.error, UnicodeDecodeError, OverflowError, MemoryError) as exc:
        raise NotPlain(f"malformed message ({type(exc).__name__})") from None
    except TypeError as exc:  # an unhashable key or set member
        raise NotPlain(f"malformed message ({exc})") from None
    if reader.pos != len(data):
        raise NotPlain("trailing bytes after the value")
    return value


class _Reader:
    """An iterative decoder: nesting costs no Python stack."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.count = 0

    def size(self) -> int:
        data, pos, shift, n = self.data, self.pos, 0, 0
        while True:
            byte = data[pos]
            pos += 1
            n |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
            if shift > 35:
                raise NotPlain("a size over 2**35")
        self.pos = pos
        if n > len(data) - pos and n > 0:
            # Every item takes at least one byte: a count beyond the bytes left is a lie.
            raise NotPlain("a size beyond the end of the message")
        return n

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise NotPlain("truncated message")
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def value(self) -> Any:
        # Each frame: [builder tag, items collected, items expected, is_dict]
        stack: list[list[Any]] = []
        while True:
            self.count += 1
            if self.count > MAX_ITEMS:
                raise NotPlain(f"more than {MAX_ITEMS} values")
            tag = self.data[self.pos]
            self.pos += 1
            if tag == 0x4E:  # N
                value: Any = None
            elif tag == 0x54:  # T
                value = True
            elif tag == 0x46:  # F
                value = False
            elif tag == 0x69:  # i
                value = int.from_bytes(self.take(self.size()), "little", signed=True)
            elif tag == 0x66:  # f
                value = _DOUBLE.unpack(self.take(8))[0]
            elif tag == 0x63:  # c
                real, imag = _COMPLEX.unpack(self.take(16))
                value = complex(real, imag)
            elif tag == 0x73:  # s
                value = self.take(self.size()).decode("utf-8", "surrogatepass")
            elif tag == 0x62:  # b
                value = self.take(self.size())
            elif tag in _BUILD or tag == 0x64:  # l t S z d
                if len(stack) >= MAX_DEPTH:
                    raise NotPlain(f"nested deeper than {MAX_DEPTH}")
                n = self.size() * (2 if tag == 0x64 else 1)
                if n:
                    stack.append([tag, [], n])
                    continue
                value = {} if tag == 0x64 else _BUILD[tag]()
            else:
                raise NotPlain(f"unknown tag {tag:#x}")
            while True:
                if not stack:
                    return value
                frame = stack[-1]
                frame[1].append(value)
                if len(frame[1]) < frame[2]:
                    break
                stack.pop()
                items = frame[1]
                if frame[0] == 0x64:
                    value = dict(zip(items[::2], items[1::2], strict=True))
                else:
                    value = _BUILD[frame[0]](items)


# -- messages on a pipe ------------------------------------------------------------------------

_LENGTH = struct.Struct("<I")


def send(fd: int, value: Any, *, convert: bool = False) -> None:
    """Write one message (a length, then the encoded value) to `fd`."""
    send_encoded(fd, encode(value, convert=convert))


def send_encoded(fd: int, data: bytes) -> None:
    """Write one message whose value is already encoded."""
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def receive(fd: int) -> Any:
    """Read one message from `fd`: EOFError at its end, `NotPlain` for a bad message."""
    (size,) = _LENGTH.unpack(_read_exactly(fd, _LENGTH.size, at_start=True))
    if size > MAX_BYTES:
        raise NotPlain(f"message over {MAX_BYTES} bytes")
    return decode(_read_exactly(fd, size, at_start=False))


def _read_exactly(fd: int, n: int, *, at_start: bool) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            if at_start and not got:
                raise EOFError("the other side closed the pipe")
            raise NotPlain("truncated message")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
