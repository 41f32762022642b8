"""Streaming JSONL reading and the resume point."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from rewardsmith import InputError
from rewardsmith.io import count_lines, read_samples, resume_point


def test_read_samples_reports_bad_lines_with_their_number() -> None:
    text = '{"completion": "a"}\n\nnot json\n[1]\n{"id": "x", "completion": "b"}\n'
    records = list(read_samples(io.StringIO(text)))
    assert records[0] == {"completion": "a", "id": "1"}
    assert isinstance(records[1], InputError) and records[1].line == 3
    assert "not valid JSON" in str(records[1])
    assert isinstance(records[2], InputError) and records[2].line == 4
    assert records[3]["id"] == "x"


def test_skip_passes_over_finished_records() -> None:
    text = "".join(f'{{"completion": "{i}"}}\n' for i in range(5))
    assert [r["id"] for r in read_samples(io.StringIO(text), skip=3)] == ["4", "5"]


def test_resume_point_cuts_a_partial_last_line(tmp_path) -> None:
    out = tmp_path / "out.jsonl"
    out.write_text('{"id": "a"}\n{"id": "b"}\n{"id": "c", "rew')
    assert resume_point(out) == ["a", "b"]
    assert out.read_text() == '{"id": "a"}\n{"id": "b"}\n'
    assert resume_point(tmp_path / "missing.jsonl") == []


@given(st.lists(st.sampled_from(["", "  ", '{"completion": "x"}', "junk"]), max_size=30))
def test_count_lines_counts_what_read_samples_yields(lines) -> None:
    text = "\n".join(lines)
    path_text = text.encode()
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "in.jsonl"
        path.write_bytes(path_text)
        assert count_lines(path) == len(list(read_samples(io.StringIO(text))))
