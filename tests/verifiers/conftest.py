"""Fixtures the code red-team files share."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from .test_code_remote import FakeSandboxFusion


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeSandboxFusion]:
    """A SandboxFusion stand-in (the real service cannot run here), one per module."""
    with contextlib.closing(FakeSandboxFusion()) as server:
        yield server
