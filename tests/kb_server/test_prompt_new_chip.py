"""The prompt for a new chip, over the real playbooks and real embeddings: the chip's own document on
the spec's op is among the passages, and passages about the other bottleneck's techniques (GEMM tiles, split-K,
matrix units for a row-wise op) are not.

Usage: .venv/bin/python -m pytest -q tests/kb_server/test_prompt_new_chip.py
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kb_server.serverproc import REPO

pytestmark = pytest.mark.slow  # embeds the playbooks (a few hundred chunks)
NEW_CHIP = Path(__file__).parent / "fixtures" / "new_chip"
GEMM_WORDS = ("gemm", "split-k", "stream-k", "matrix unit", "tensor core", "tiling and data reuse")


@pytest.fixture(scope="module")
def store(tmp_path_factory, embedder):
    from ingest.pipeline import ingest_paths
    from kb_server.config import KBSettings
    from kb_server.store import Store

    s = Store(KBSettings(home=tmp_path_factory.mktemp("new-chip-home")), embedder=embedder)
    report = ingest_paths(s, [REPO / "corpus" / "docs" / "playbooks", NEW_CHIP])
    assert report.errors == [] and report.facts == ["nova-x1"]
    return s


@pytest.mark.parametrize("spec", ["row_softmax", "rmsnorm", "layernorm"])
def test_a_row_wise_op_on_a_new_chip_gets_the_chips_own_tuning_and_no_gemm(store, spec):
    from kb_server.prompt import build_prompt

    bundle = build_prompt(store, (REPO / "examples" / "specs" / f"{spec}.py").read_text(), "nova-x1", "triton")
    passages = next(s for s in bundle.sections if s.name == "passages")
    headings = [line.lower() for line in passages.text.splitlines() if line.startswith("### [")]
    assert any("softmax and normalisation over rows" in h for h in headings), headings  # the chip's own, on topic
    off = [h for h in headings if any(w in h for w in GEMM_WORDS)]
    assert not off, off
    assert len(headings) >= 5 and sum("nova-x1" in s for s in passages.sources) >= 2
