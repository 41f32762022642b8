"""Fixtures the red-team files share: the SandboxFusion stand-in (code) and the database of
the agent rewards' rows (`env`)."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator

import pytest

from .test_code_remote import FakeSandboxFusion
from .test_redteam_agents import Env, build_db


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeSandboxFusion]:
    """A SandboxFusion stand-in (the real service cannot run here), one per module."""
    with contextlib.closing(FakeSandboxFusion()) as server:
        yield server


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """The singers database, one per module, checked unchanged (and alone in its folder)
    after the module's rows."""
    folder = tmp_path_factory.mktemp("redteam-agents")
    db = folder / "singers.sqlite"
    build_db(db)
    digest, files = hashlib.sha256(db.read_bytes()).hexdigest(), sorted(os.listdir(folder))
    work = tmp_path_factory.mktemp("redteam-agents-work")
    yield Env(db=db, tmp=work)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest, "the database file changed"
    assert sorted(os.listdir(folder)) == files, "files appeared beside the database"
    assert not (work / "copy.db").exists() and not (work / "other.db").exists()
