"""Tiny models built once per session, and every model host stopped at the end."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"


@pytest.fixture(scope="session", autouse=True)
def _hosts() -> Iterator[None]:
    yield
    from rewardsmith.reward_models import stop_hosts

    stop_hosts()


@pytest.fixture(scope="session")
def tiny_rm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny sequence-classification RM whose tokenizer doubles the template's BOS."""
    pytest.importorskip("transformers")
    from .tiny_models import save_reward_model

    return save_reward_model(tmp_path_factory.mktemp("rm"))


@pytest.fixture(scope="session")
def tiny_prm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny token-classification PRM (step tag ``<extra_0>``)."""
    pytest.importorskip("transformers")
    from .tiny_models import save_process_model

    return save_process_model(tmp_path_factory.mktemp("prm"))
