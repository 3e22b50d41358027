"""The offline provider on real parts: library kernels ingested into a real store, adapted to specs
they were not written for, and judged by the real harness through the Triton interpreter."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")

from agent_client.kb import LocalKB
from agent_client.offline import OfflineProvider
from agent_client.offline.tunables import get_tunables, neighbours, set_tunables
from agent_client.proposals import NodeView, ProposalRequest, ProviderError

REPO = Path(__file__).resolve().parents[3]
FAST = {"trials": 1, "min_reps": 1, "max_reps": 2, "warmup": 0, "max_timing_s": 0.3,
        "time_compile_baseline": False}

# Specs of our own, written differently from the library's specs: other constructors, other names.
RMSNORM = """
import torch
import torch.nn as nn

HIDDEN = 96


class Model(nn.Module):
    def __init__(self, hidden, eps=1e-5):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(hidden))
        self.eps = eps

    def forward(self, h):
        return h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps) * self.scale


def get_inputs(rows=6):
    return [torch.randn(rows, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
"""

CHAIN = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.hardtanh(F.silu(x) * 3.0 - 0.5)


def get_inputs():
    return [torch.randn(7, 333)]


def get_init_inputs():
    return []
"""

CONV = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(1, 3, 8, 8)]


def get_init_inputs():
    return []
"""


@pytest.fixture(scope="module")
def library_kb(tmp_path_factory, embedder):
    from ingest.pipeline import ingest_paths
    from kb_server.config import KBSettings
    from kb_server.store import Store

    store = Store(KBSettings(home=tmp_path_factory.mktemp("offline-kb")), embedder=embedder)
    ingest_paths(store, [REPO / "corpus" / "kernels"])
    return LocalKB(store)


def _request(path: Path, kb, parent=None, n=3) -> ProposalRequest:
    return ProposalRequest(spec_path=path, spec_source=path.read_text(), backend="triton", accelerator="h200",
                           prompt="", parent=parent, n=n, kb=kb)


def _spec(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


@pytest.mark.parametrize("name, source", [("my_rmsnorm", RMSNORM), ("my_chain", CHAIN)])
def test_adapted_library_kernel_passes_the_harness(tmp_path, library_kb, name, source):
    from harness import EvalConfig, evaluate

    spec = _spec(tmp_path, name, source)
    proposals = OfflineProvider(drafts_per_kernel=2).propose(_request(spec, library_kb, n=1))
    assert len(proposals) == 1
    verdict = evaluate(spec, proposals[0].code, backend="triton", device="cpu", config=EvalConfig(**FAST))
    assert verdict.status.value == "passed", (verdict.reasons, proposals[0].code[-800:])
    assert proposals[0].meta["tunables"] == get_tunables(proposals[0].code)


def test_drafts_then_expansions_never_repeat_a_point(tmp_path, library_kb):
    spec = _spec(tmp_path, "my_rmsnorm", RMSNORM)
    provider = OfflineProvider(drafts_per_kernel=3)
    drafts = provider.propose(_request(spec, library_kb, n=3))
    assert len(drafts) == 3
    seen = {repr(sorted(p.meta["tunables"].items())) for p in drafts}
    assert len(seen) == 3  # three distinct points of the tunable space
    parent = NodeView(node_id="n0", code=drafts[0].code, verdict={"status": "passed"},
                      tunables=drafts[0].meta["tunables"], meta=drafts[0].meta, fitness=1.0)
    children = provider.propose(_request(spec, library_kb, parent=parent, n=4))
    assert children, "a parent with a tunable space must have neighbours"
    for child in children:
        point = repr(sorted(child.meta["tunables"].items()))
        assert point not in seen
        seen.add(point)


def test_a_spec_the_library_cannot_serve_gets_the_general_lowering(tmp_path, library_kb):
    from harness import EvalConfig, evaluate

    spec = _spec(tmp_path, "conv", CONV)
    proposals = OfflineProvider().propose(_request(spec, library_kb, n=2))
    assert proposals and all(p.meta["route"] == "lowering" for p in proposals)
    assert proposals[0].meta["general_lowering_only"]  # said plainly in the session and its report
    assert any("library" in why for why in proposals[0].meta["unserved"])
    verdict = evaluate(spec, proposals[0].code, backend="triton", device="cpu", config=EvalConfig(**FAST))
    assert verdict.status.value == "passed", verdict.reasons


def test_a_stochastic_spec_is_refused_plainly(tmp_path, library_kb):
    spec = _spec(tmp_path, "dropout", CONV.replace("return self.conv(x)",
                                                   "return torch.nn.functional.dropout(self.conv(x), 0.3)"))
    with pytest.raises(ProviderError, match="random numbers.*--provider anthropic"):
        OfflineProvider().propose(_request(spec, library_kb))


def test_tunables_rewrite_keeps_the_rest_of_the_source():
    src = 'import triton\nTUNABLES = {\n    "BLOCK": 1024,  # why\n    "num_warps": 4,\n}\nX = 1\n'
    out = set_tunables(src, {"BLOCK": 2048})
    assert get_tunables(out) == {"BLOCK": 2048, "num_warps": 4}
    assert out.startswith("import triton\n") and out.endswith("X = 1\n")
    assert neighbours({"BLOCK": 1024}, {"BLOCK": [512, 1024, 2048]}) == [{"BLOCK": 512}, {"BLOCK": 2048}]


def test_drafts_asked_for_again_keep_coming(tmp_path, library_kb):
    # the session asks for drafts in small batches; the provider must not run dry after its first few
    spec = _spec(tmp_path, "my_rmsnorm", RMSNORM)
    provider = OfflineProvider(drafts_per_kernel=2)
    seen = set()
    for _ in range(4):
        batch = provider.propose(_request(spec, library_kb, n=2))
        assert len(batch) == 2
        seen.update(repr(sorted(p.meta["tunables"].items())) for p in batch)
    assert len(seen) == 8
