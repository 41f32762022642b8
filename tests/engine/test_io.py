"""Streaming JSONL reading and the resume point."""

from __future__ import annotations

import io
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewardsmith import InputError, load_spec
from rewardsmith.engine._engine import as_sample
from rewardsmith.io import count_lines, read_samples, resume_point


def read(text: str | bytes, skip: int = 0) -> list:
    data = text.encode() if isinstance(text, str) else text
    return list(read_samples(io.BytesIO(data), skip=skip))


def test_read_samples_reports_bad_lines_with_their_number() -> None:
    text = '{"completion": "a"}\n\nnot json\n[1]\n{"id": "x", "completion": "b"}\n'
    records = read(text)
    assert records[0] == {"completion": "a", "id": "1"}
    assert isinstance(records[1], InputError) and records[1].line == 3
    assert "not valid JSON" in str(records[1])
    assert isinstance(records[2], InputError) and records[2].line == 4
    assert records[3]["id"] == "x"
    assert [records[0].line, records[3].line] == [1, 5]  # blank lines counted


def test_skip_passes_over_finished_records() -> None:
    text = "".join(f'{{"completion": "{i}"}}\n' for i in range(5))
    assert [r["id"] for r in read(text, skip=3)] == ["4", "5"]


def test_resume_point_cuts_a_partial_last_line(tmp_path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c", "rew')
    assert resume_point(out) == ["a", "b"]
    assert out.read_text() == '{"id": "a"}\n{"id": "b"}\n'
    assert resume_point(tmp_path / "missing.jsonl") == []


@pytest.mark.parametrize(
    "bad",
    [b'{"id": "b\xff"}\n', b"[" * 100_000 + b"]" * 100_000 + b"\n", b"[1]\n", b"{}\n"],
    ids=["not-utf8", "deep", "not-an-object", "no-id"],
)
def test_resume_point_cuts_an_unreadable_line_and_what_follows(tmp_path, bad: bytes) -> None:
    out = tmp_path / "out.jsonl"
    out.write_bytes(b'{"id": "a"}\n' + bad + b'{"id": "c"}\n')
    assert resume_point(out) == ["a"]
    assert out.read_bytes() == b'{"id": "a"}\n'


def test_count_lines_gives_no_total_for_a_pipe(tmp_path) -> None:
    """A pipe is read once, by the scoring: counting it first would leave nothing to score."""
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    assert count_lines(fifo) is None  # without opening it (opening would block here)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"completion": "caf\xe9"}', "not UTF-8 text: invalid continuation byte at byte 20"),
        (b"\x00\x01\x02\xff\xfe", "not UTF-8 text"),
        (b'{"completion": "x", "reference": ' + b"[" * 600 + b"]" * 600 + b"}", "nested more"),
        (b"[" * 100_000 + b"]" * 100_000, "nested more than 100 levels deep"),
    ],
    ids=["latin-1", "binary", "600-deep", "100000-deep"],
)
def test_a_bad_line_is_one_error_and_the_next_lines_are_read(line: bytes, message: str) -> None:
    data = b'{"completion": "a"}\n' + line + b'\n{"completion": "b"}\n'
    first, bad, last = read(data)
    assert isinstance(bad, InputError) and bad.line == 2 and message in str(bad)
    assert (first["completion"], last["completion"], last["id"]) == ("a", "b", "3")


def test_a_line_too_deep_keeps_its_own_id() -> None:
    """Its result is `invalid` under the id the line gives, not its line number: output
    keeps the input's ids."""
    deep = b"[" * 200 + b"]" * 200
    bad, numbered = read(
        b'{"id": "n100", "completion": "x", "reference": ' + deep + b"}\n"
        b'{"completion": "x", "reference": ' + deep + b"}\n"
    )
    assert isinstance(bad, InputError) and (bad.line, bad.sample_id) == (1, "n100")
    assert isinstance(numbered, InputError) and numbered.sample_id is None
    spec = load_spec({"rewards": {"e": {"type": "exact_match"}}})
    assert [as_sample(spec, item, i).id for i, item in enumerate([bad, numbered])] == [
        "n100",
        "2",
    ]


def test_lines_end_at_newline_only() -> None:
    # a bare \r is JSON whitespace, \u2028 a character: neither breaks a line in JSON Lines
    data = '{"completion":\r"a\u2028b",\r"id": "one"}\r\n{"completion": "c"}\n'.encode()
    records = read(data)
    assert [(r["id"], r["completion"]) for r in records] == [("one", "a\u2028b"), ("2", "c")]


def test_a_byte_order_mark_at_the_start_is_not_part_of_the_first_sample() -> None:
    (record,) = read(b'\xef\xbb\xbf{"completion": "a"}\n')
    assert record == {"completion": "a", "id": "1"}


def test_a_line_holding_only_a_byte_order_mark_is_blank(tmp_path) -> None:
    data = b'\xef\xbb\xbf\r\n{"completion": "a"}\n'
    assert read(data) == [{"completion": "a", "id": "2"}]
    (tmp_path / "in.jsonl").write_bytes(data)
    assert count_lines(tmp_path / "in.jsonl") == 1


@given(
    st.lists(
        st.sampled_from(["", "  ", "\r", '{"completion": "x"}', "junk", '{"a":\r1}', "\udcff"]),
        max_size=30,
    )
)
def test_count_lines_counts_what_read_samples_yields(lines) -> None:
    data = "\n".join(lines).encode("utf-8", "surrogateescape")  # \udcff: the byte 0xff
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "in.jsonl"
        path.write_bytes(data)
        assert count_lines(path) == len(read(data))
