"""Shared helpers of the code-reward tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from rewardsmith.models import Sample

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
HUMANEVAL = DATA / "humaneval" / "HumanEval.jsonl.gz"

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")


def sample(completion: str, reference: Any, prompt: str | None = None) -> Sample:
    return Sample(id="x", completion=completion, reference=reference, prompt=prompt)


def processes_of(uid: int) -> list[int]:
    """Pids of processes owned by host uid `uid`."""
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids
