"""The conv family through the offline provider: a spec of one convolution gets the library's kernel as a
route beside the general lowering; a thin or depthwise one, or one with an epilogue, says why not.

Usage: .venv/bin/python -m pytest -q tests/agent_client/offline/test_conv_route.py
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")

from agent_client.kb import LocalKB
from agent_client.offline import OfflineProvider
from agent_client.proposals import ProposalRequest

REPO = Path(__file__).resolve().parents[3]
FAST = {"trials": 1, "min_reps": 1, "max_reps": 2, "warmup": 0, "max_timing_s": 0.3,
        "time_compile_baseline": False}
SPEC = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.{conv}

    def forward(self, x):
        return {forward}


def get_inputs():
    return [torch.randn({shape})]


def get_init_inputs():
    return []
"""


@pytest.fixture(scope="module")
def conv_kb(tmp_path_factory, embedder):
    from ingest.pipeline import ingest_paths
    from kb_server.config import KBSettings
    from kb_server.store import Store

    store = Store(KBSettings(home=tmp_path_factory.mktemp("conv-kb")), embedder=embedder)
    ingest_paths(store, [REPO / "corpus" / "kernels" / "conv"])
    return LocalKB(store)


def _routes(tmp_path: Path, kb, conv: str, shape: str, forward: str = "self.up(x)"):
    spec = tmp_path / "spec.py"
    spec.write_text(textwrap.dedent(SPEC.format(conv=conv, shape=shape, forward=forward)))
    request = ProposalRequest(spec_path=spec, spec_source=spec.read_text(), backend="triton", accelerator="h100",
                              prompt="", parent=None, n=4, kb=kb, device="cpu")
    provider = OfflineProvider(drafts_per_kernel=1)
    return spec, provider, request, *provider.routes(request)


def test_one_transposed_convolution_gets_the_library_route(tmp_path, conv_kb):
    from harness import EvalConfig, evaluate

    spec, provider, request, routes, why = _routes(
        tmp_path, conv_kb, "ConvTranspose2d(16, 24, 3, stride=2, padding=1, output_padding=1)", "2, 16, 5, 7")
    assert [r.meta["route"] for r in routes].count("library") == 1, why
    library = next(p for p in provider.propose(request) if p.meta["route"] == "library")
    assert library.meta["op_family"] == "conv"
    assert "return conv(inputs[0], self.up.weight, self.up.bias, (2, 2), (1, 1), (1, 1), 1, True, (1, 1))" \
        in library.code
    verdict = evaluate(spec, library.code, backend="triton", device="cpu", config=EvalConfig(**FAST))
    assert verdict.status.value == "passed", verdict.reasons


@pytest.mark.parametrize("conv, shape, forward, reason", [
    ("Conv2d(16, 16, 3, groups=16)", "1, 16, 8, 8", "self.up(x)", "depthwise convolution"),
    ("Conv2d(16, 16, 3, padding='same')", "1, 16, 8, 8", "self.up(x)", "padding='same'"),
    ("Conv2d(16, 32, 3)", "1, 16, 8, 8", "torch.relu(self.up(x))", "no op family matches"),
    ("Conv2d(16, 32, 3).to(torch.bfloat16)", "1, 16, 8, 8).to(torch.bfloat16", "self.up(x)", "bfloat16 input"),
])
def test_what_the_library_route_does_not_serve_is_said(tmp_path, conv_kb, conv, shape, forward, reason):
    _, _, _, routes, why = _routes(tmp_path, conv_kb, conv, shape, forward)
    assert routes and all(r.meta["route"] == "lowering" for r in routes)  # the general lowering serves it
    assert any(reason in w for w in why), why
