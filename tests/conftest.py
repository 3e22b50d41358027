"""Shared test fixtures: every test starts from the same random state."""

from __future__ import annotations

import random

import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seed_everything() -> None:
    random.seed(0)
    np.random.seed(0)
    try:
        import torch
    except ImportError:  # torch is optional for pure-python tests
        return
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def embedder():
    """The real all-MiniLM-L6-v2 embedder, loaded once per test session (pass it to Store)."""
    from kb_server.config import KBSettings
    from kb_server.embeddings import get_embedder

    return get_embedder(KBSettings().model)


@pytest.fixture
def kb_settings(tmp_path):
    """Settings of a fresh embedded store under tmp_path (the repo's corpus/ for facts)."""
    from kb_server.config import KBSettings

    return KBSettings(home=tmp_path / "kkb-home")


@pytest.fixture
def store(kb_settings, embedder):
    """A fresh embedded store with the shared embedder."""
    from kb_server.store import Store

    return Store(kb_settings, embedder=embedder)
