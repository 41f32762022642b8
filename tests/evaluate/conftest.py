"""Fixtures: data rows written where a test can read them; `needs_data` skips without
`../shared/data`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from .real_data import DATA

needs_data = pytest.mark.skipif(not DATA.exists(), reason=f"shared data absent: {DATA}")


@pytest.fixture
def write_rows(tmp_path: Path) -> Callable[[Iterable[dict[str, Any]], str], Path]:
    def write(rows: Iterable[dict[str, Any]], name: str = "rows.jsonl") -> Path:
        path = tmp_path / name
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return path

    return write
