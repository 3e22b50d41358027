"""Shared test fixtures: every test starts from the same random state, and leaves no setting behind."""

from __future__ import annotations

import ast
import functools
import os
import random
import sys
from pathlib import Path

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


KERNELS_DIR = str(Path(__file__).resolve().parents[1] / "corpus" / "kernels")
WATCHED_ENV = ("KKB_", "TRITON_", "HF_", "TRANSFORMERS_", "CUDA_VISIBLE_DEVICES", "ANTHROPIC_", "OPENAI_")


@functools.cache
def _tunables_literal(path: str) -> dict | None:
    tree = ast.parse(Path(path).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "TUNABLES" for t in node.targets):
            try:
                return ast.literal_eval(node.value)
            except ValueError:
                return None
    return None


def _watched_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(WATCHED_ENV)}


def _kernel_tunables() -> dict[int, tuple[str, dict]]:
    """id(module) -> (its kernel.py, a copy of its TUNABLES), for the library kernel modules loaded now."""
    out = {}
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        tunables = getattr(module, "TUNABLES", None)
        if path.startswith(KERNELS_DIR) and path.endswith("kernel.py") and isinstance(tunables, dict):
            out[id(module)] = (path, dict(tunables))
    return out


def leaked_settings(env_before: dict[str, str], tunables_before: dict[int, tuple[str, dict]]) -> list[str]:
    """What a test left changed: watched environment variables, and the TUNABLES of library kernel modules
    (against their value before the test, or the kernel.py literal for a module the test loaded)."""
    leaks = []
    env_after = _watched_env()
    for name in sorted(set(env_before) | set(env_after)):
        if env_before.get(name) != env_after.get(name):
            leaks.append(f"environment {name}: {env_before.get(name)!r} -> {env_after.get(name)!r}")
    for key, (path, tunables) in _kernel_tunables().items():
        expected = tunables_before[key][1] if key in tunables_before else _tunables_literal(path)
        if expected is not None and tunables != expected:
            changed = sorted(k for k in set(expected) | set(tunables) if expected.get(k) != tunables.get(k))
            leaks.append(f"{Path(path).parent.name}/kernel.py TUNABLES {changed}")
    return leaks


@pytest.fixture(autouse=True)
def _no_leaked_settings():
    """Fails a test that changes a library kernel's TUNABLES or a watched environment variable without
    putting it back (use monkeypatch: tests/corpus/kernels/library_check.py's set_tunables, setenv)."""
    env_before, tunables_before = _watched_env(), _kernel_tunables()
    yield
    leaks = leaked_settings(env_before, tunables_before)
    if leaks:
        pytest.fail("the test changed settings and left them changed: " + "; ".join(leaks), pytrace=False)


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


@pytest.fixture(scope="session")
def real_corpus(tmp_path_factory, embedder):
    """The repo's whole corpus/ ingested once per test session into a fresh store (about a minute on two
    cores): (store, the first ingest's report). Tests that read it must not write to it."""
    from ingest.pipeline import IngestOptions, ingest_paths
    from kb_server.config import KBSettings
    from kb_server.store import Store

    corpus = Path(__file__).resolve().parents[1] / "corpus"
    home = tmp_path_factory.mktemp("kkb-real-corpus")
    store = Store(KBSettings(home=home, corpus_dir=corpus), embedder=embedder)
    return store, ingest_paths(store, [corpus], IngestOptions(prune=True))


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    """A test marked gpu says why it does not run on a machine without CUDA (its own skipif, if any, comes
    first: e.g. "needs an sm_90 (Hopper) GPU")."""
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if gpu_items and not _cuda_available():
        skip = pytest.mark.skip(reason="marked gpu: needs a CUDA GPU, and this machine has none")
        for item in gpu_items:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """After a run that ran GPU tests on a GPU (or with KKB_PROVENANCE=1): the command, the commit, the source
    digest and the versions (tests/gpu_log.py), so that a saved log says what it is a log of."""
    reports = [r for key in ("passed", "failed", "error") for r in terminalreporter.stats.get(key, [])]
    ran_gpu = any(getattr(r, "when", "") == "call" and "gpu" in getattr(r, "keywords", {}) for r in reports)
    if not (ran_gpu or os.environ.get("KKB_PROVENANCE") == "1"):
        return
    import shlex

    from tests.gpu_log import provenance_lines

    command = os.environ.get("KKB_GPU_COMMAND") or shlex.join(["python3", "-m", "pytest",
                                                               *config.invocation_params.args])
    terminalreporter.write_sep("-", "provenance")
    for line in provenance_lines(command):
        terminalreporter.write_line(line)
