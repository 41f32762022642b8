"""The `rewardsmith score` command, run as a real subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED = "tests.engine.rewards_for_tests:scripted"


def run_cli(
    *args: str, timeout: float = 120, stdin: Any = None, workers: int | None = None
) -> subprocess.CompletedProcess[str]:
    """`rewardsmith ARGS` from the repository's sources (`workers`: REWARDSMITH_WORKERS)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    if workers is not None:
        env["REWARDSMITH_WORKERS"] = str(workers)
    return subprocess.run(
        [sys.executable, "-m", "rewardsmith.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        stdin=stdin,
        timeout=timeout,
    )


@pytest.fixture
def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(f"rewards:\n  s: {{type: '{SCRIPTED}'}}\ntimeout_s: 1\n")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_score_writes_one_line_per_input_in_order(tmp_path: Path, spec_file: Path) -> None:
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    lines = [
        '{"id": "a", "completion": "xx"}',
        "{broken",
        '{"completion": "hang"}',
        '{"id": "d", "completion": "xxxx"}',
    ]
    inp.write_text("\n".join(lines) + "\n")
    proc = run_cli("score", "--spec", str(spec_file), "--input", str(inp), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    results = read_jsonl(out)
    assert [r["id"] for r in results] == ["a", "2", "3", "d"]
    assert [r["status"] for r in results] == ["ok", "invalid", "timeout", "ok"]
    assert [r["reward"] for r in results] == [2.0, None, None, 4.0]
    assert "line 2" in proc.stderr and "not valid JSON" in proc.stderr
    assert "4 samples" in proc.stderr  # the summary table


def test_strict_stops_at_the_first_malformed_line(tmp_path: Path, spec_file: Path) -> None:
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text('{"completion": "x"}\n{broken\n{"completion": "y"}\n')
    proc = run_cli(
        "score", "--spec", str(spec_file), "--input", str(inp), "--output", str(out), "--strict"
    )
    assert proc.returncode == 1
    assert "line 2" in proc.stderr


def test_spec_errors_exit_2_naming_the_key(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("rewards:\n  a: {type: exact_match, ignore_kase: true}\n")
    proc = run_cli("score", "--spec", str(spec), "--input", "x.jsonl", "--output", "y.jsonl")
    assert proc.returncode == 2
    assert "unknown key 'ignore_kase'" in proc.stderr


def test_resume_after_a_real_kill_matches_an_uninterrupted_run(
    tmp_path: Path, spec_file: Path
) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_text(
        "".join(json.dumps({"completion": "sleep 0.01" + " " * (i % 5)}) + "\n" for i in range(400))
    )
    full, part = tmp_path / "full.jsonl", tmp_path / "part.jsonl"
    assert (
        run_cli(
            "score", "--spec", str(spec_file), "--input", str(inp), "--output", str(full)
        ).returncode
        == 0
    )

    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    args = [
        sys.executable,
        "-m",
        "rewardsmith.cli",
        "score",
        "--spec",
        str(spec_file),
        "--input",
        str(inp),
        "--output",
        str(part),
        "--workers",
        "1",
    ]
    proc = subprocess.Popen(
        args,
        env=env,
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not part.exists() or part.stat().st_size < 2000):
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = len(part.read_text().splitlines())
    assert 0 < finished < 400, "the kill should land mid-run"

    # Mark the finished lines so that recomputing them would show.
    marked = [{**r, "reward": -7.0} for r in read_jsonl(part)[:-1]]
    part.write_text("".join(json.dumps(r) + "\n" for r in marked) + '{"id": "trunc')
    proc2 = run_cli(
        "score", "--spec", str(spec_file), "--input", str(inp), "--output", str(part), "--resume"
    )
    assert proc2.returncode == 0, proc2.stderr
    resumed, expected = read_jsonl(part), read_jsonl(full)
    assert [r["id"] for r in resumed] == [r["id"] for r in expected]
    assert all(r["reward"] == -7.0 for r in resumed[: len(marked)])
    assert resumed[len(marked) :] == expected[len(marked) :]


def test_resume_refuses_an_output_of_another_input(tmp_path: Path, spec_file: Path) -> None:
    """Refused, the output is left as it was: its partly written last line too."""
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text('{"id": "a", "completion": "x"}\n')
    foreign = '{"id": "zzz", "reward": 1}\n{"id": "zz'
    out.write_text(foreign)
    proc = run_cli(
        "score", "--spec", str(spec_file), "--input", str(inp), "--output", str(out), "--resume"
    )
    assert proc.returncode == 2 and "not the same input" in proc.stderr
    assert out.read_text() == foreign


def test_resume_passes_a_line_too_deep_that_has_its_own_id(tmp_path: Path, spec_file: Path) -> None:
    """Its invalid result is written under its own id; resuming matches it to the input."""
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    deep = "[" * 200 + "]" * 200
    inp.write_text(
        f'{{"id": "deep", "completion": "x", "reference": {deep}}}\n'
        '{"id": "b", "completion": "y"}\n'
    )
    args = ("score", "--spec", str(spec_file), "--input", str(inp), "--output", str(out))
    assert run_cli(*args).returncode == 0
    first = out.read_text().splitlines(keepends=True)[0]
    out.write_text(first)  # as if killed after the first line
    proc = run_cli(*args, "--resume")
    assert proc.returncode == 0, proc.stderr
    assert [(r["id"], r["status"]) for r in read_jsonl(out)] == [
        ("deep", "invalid"),
        ("b", "ok"),
    ]


def test_resume_refuses_an_input_in_another_order(tmp_path: Path, spec_file: Path) -> None:
    """Output [a, b] of input [a, b, c], resumed on [c, b, a]: comparing only the last id
    would skip c and score a twice."""
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_text("".join(f'{{"id": "{i}", "completion": "x"}}\n' for i in "cba"))
    out.write_text('{"id": "a", "reward": 1}\n{"id": "b", "reward": 1}\n')
    proc = run_cli(
        "score", "--spec", str(spec_file), "--input", str(inp), "--output", str(out), "--resume"
    )
    assert proc.returncode == 2 and "output line 1 has id 'a'" in proc.stderr
    assert [r["id"] for r in read_jsonl(out)] == ["a", "b"]


def test_a_pipe_is_scored_and_resume_from_a_pipe_is_refused(
    tmp_path: Path, spec_file: Path
) -> None:
    """`--input <(zcat in.jsonl.gz)`: read once, by the scoring. --resume would read it twice."""
    out = tmp_path / "out.jsonl"
    command = f"{sys.executable} -m rewardsmith.cli score --spec {spec_file} --output {out}"
    lines = "".join(f'{{"id": "{i}", "completion": "x"}}\\n' for i in range(3))
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    for extra, code in (("", 0), (" --resume", 2)):
        proc = subprocess.run(
            ["bash", "-c", f"{command} --input <(printf '{lines}'){extra}"],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )
        assert proc.returncode == code, proc.stderr
        assert [r["id"] for r in read_jsonl(out)] == ["0", "1", "2"]
    assert "regular files" in proc.stderr


def test_missing_input_file_is_an_error_message_not_a_traceback(spec_file: Path) -> None:
    proc = run_cli(
        "score", "--spec", str(spec_file), "--input", "nope.jsonl", "--output", "o.jsonl"
    )
    assert proc.returncode == 1
    assert "nope.jsonl" in proc.stderr and "Traceback" not in proc.stderr


def test_group_transform_adds_advantages_and_resume_keeps_groups_whole(
    tmp_path: Path, spec_file: Path
) -> None:
    inp = tmp_path / "in.jsonl"
    rows = [
        {"id": f"g{g}-{i}", "group": f"g{g}", "completion": "x" * (1 + (g * 3 + i) % 4)}
        for g in range(3)
        for i in range(4)
    ]
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    full, part = tmp_path / "full.jsonl", tmp_path / "part.jsonl"
    args = ["score", "--spec", str(spec_file), "--input", str(inp), "--group-transform", "grpo"]
    assert run_cli(*args, "--output", str(full)).returncode == 0
    expected = read_jsonl(full)
    for g in range(3):
        advantages = [r["advantage"] for r in expected[g * 4 : g * 4 + 4]]
        assert abs(sum(advantages)) < 1e-9 and any(a != 0 for a in advantages)

    # Interrupted after 6 lines: group g1 is cut in half. Resume must redo all of g1.
    part.write_text("".join(json.dumps({**r, "advantage": 99.0}) + "\n" for r in expected[:6]))
    proc = run_cli(*args, "--output", str(part), "--resume")
    assert proc.returncode == 0, proc.stderr
    resumed = read_jsonl(part)
    assert [r["id"] for r in resumed] == [r["id"] for r in expected]
    assert [r["advantage"] for r in resumed[:4]] == [99.0] * 4  # g0 was whole: kept
    assert resumed[4:] == expected[4:]  # g1 recomputed as a whole group


def test_bad_group_transform_names_the_choices(tmp_path: Path, spec_file: Path) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"completion": "x"}\n')
    proc = run_cli("score", "--spec", str(spec_file), "--input", str(inp), "--output",
                   str(tmp_path / "o.jsonl"), "--group-transform", "grpoo")  # fmt: skip
    assert proc.returncode == 2 and "Did you mean: grpo?" in proc.stderr


def score_args(spec: Path, inp: Path, out: Path, *extra: str) -> list[str]:
    return ["score", "--spec", str(spec), "--input", str(inp), "--output", str(out), *extra]


def test_a_bad_byte_at_line_15000_of_20000_is_one_invalid_line_and_resume_passes_it(
    tmp_path: Path, spec_file: Path
) -> None:
    lines = [json.dumps({"completion": "x" * (i % 9)}).encode() for i in range(20_000)]
    lines[14_999] = b'{"completion": "caf\xe9"}'  # Latin-1, not UTF-8
    lines[17_999] = b'{"completion": "x", "reference": ' + b"[" * 600 + b"]" * 600 + b"}"
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inp.write_bytes(b"\n".join(lines) + b"\n")
    proc = run_cli(*score_args(spec_file, inp, out, "--quiet"))
    assert proc.returncode == 0, proc.stderr
    results = read_jsonl(out)
    assert len(results) == 20_000
    bad = [(r["id"], r["status"]) for r in results if r["status"] != "ok"]
    assert bad == [("15000", "invalid"), ("18000", "invalid")]
    assert "line 15000: not UTF-8 text" in proc.stderr
    assert "line 18000: JSON nested more than 100 levels deep" in proc.stderr
    reason = results[14_999]["components"]["s"]["detail"]["reason"]
    assert reason.startswith("line 15000: not UTF-8 text")

    # interrupted at line 14,000: resuming reads past both bad lines to the same output
    full = out.read_bytes()
    cut = b"".join(full.splitlines(keepends=True)[:14_000]) + b'{"id": "140'
    out.write_bytes(cut)
    proc = run_cli(*score_args(spec_file, inp, out, "--quiet", "--resume"))
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == full


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink", "relative"])
@pytest.mark.parametrize("resume", [False, True])
def test_an_output_that_is_the_input_is_refused_and_the_input_kept(
    tmp_path: Path, spec_file: Path, link: str, resume: bool
) -> None:
    inp = tmp_path / "in.jsonl"
    content = b'{"id": "a", "completion": "x"}\n{"id": "b", "completion": "yy"}\n'
    inp.write_bytes(content)
    out = {
        "same": inp,
        "symlink": tmp_path / "out.jsonl",
        "hardlink": tmp_path / "out.jsonl",
        "relative": tmp_path / "sub" / ".." / "in.jsonl",
    }[link]
    if link == "symlink":
        out.symlink_to(inp)
    elif link == "hardlink":
        os.link(inp, out)
    elif link == "relative":
        (tmp_path / "sub").mkdir()
    proc = run_cli(*score_args(spec_file, inp, out, *(["--resume"] if resume else [])))
    assert proc.returncode == 2
    assert "is the input file" in proc.stderr
    assert inp.read_bytes() == content


@pytest.mark.parametrize(
    ("spec_text", "message"),
    [
        (b"rewards:\n  a: {type: math}\ntimeout_s: .inf\n", "timeout_s"),
        (b"rewards:\n  a: {type: math}\non_error: .nan\n", "on_error"),
        (b"rewards:\n  a: {type: math}\n  a: {type: f1}\n", "duplicate key 'a'"),
        (b"rewards:\n  a: {type: math}  # caf\xe9\n", "not UTF-8 text"),
        (b"rewards:\n  a: {type: 'os:system', command: 'touch pwned'}\n", "not a reward factory"),
    ],
)
def test_spec_mistakes_exit_2_with_a_message(
    tmp_path: Path, spec_text: bytes, message: str
) -> None:
    spec, inp = tmp_path / "spec.yaml", tmp_path / "in.jsonl"
    spec.write_bytes(spec_text)
    inp.write_text('{"completion": "x"}\n')
    proc = run_cli(*score_args(spec, inp, tmp_path / "out.jsonl"), timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not (ROOT / "pwned").exists()


@pytest.mark.parametrize("workers", ["-1", "0", "two"])
def test_a_bad_worker_count_exits_2(tmp_path: Path, spec_file: Path, workers: str) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_text('{"completion": "x"}\n')
    proc = run_cli(
        *score_args(spec_file, inp, tmp_path / "o.jsonl", "--workers", workers), timeout=60
    )
    assert proc.returncode == 2 and "--workers" in proc.stderr


def test_whole_input_whitening_warns_that_memory_grows(tmp_path: Path, spec_file: Path) -> None:
    inp = tmp_path / "in.jsonl"
    inp.write_text(
        "".join(json.dumps({"group": "g", "completion": "x" * i}) + "\n" for i in range(4))
    )
    out = tmp_path / "o.jsonl"
    proc = run_cli(*score_args(spec_file, inp, out, "--group-transform", "whiten"))
    assert proc.returncode == 0, proc.stderr
    assert "normalises over the whole input" in proc.stderr and "batch_size" in proc.stderr
    proc = run_cli(*score_args(spec_file, inp, out, "--group-transform", "grpo"))
    assert "normalises over the whole input" not in proc.stderr


def test_stdin_redirected_from_the_output_file_is_refused(tmp_path: Path, spec_file: Path) -> None:
    out = tmp_path / "data.jsonl"
    content = b'{"id": "a", "completion": "x"}\n'
    out.write_bytes(content)
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'src'}"}
    with out.open("rb") as stdin:
        proc = subprocess.run(
            [sys.executable, "-m", "rewardsmith.cli", *score_args(spec_file, Path("-"), out)],
            stdin=stdin,
            capture_output=True,
            env=env,
            cwd=ROOT,
            timeout=60,
        )
    assert proc.returncode == 2 and b"is the input file" in proc.stderr
    assert out.read_bytes() == content
