"""One library, one path: the knowledge base's kernel records, the library read from corpus/kernels (the
offline provider's records where there is no store) and the provider's routes hold the same bundled source."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from agent_client.offline import OfflineProvider
from agent_client.offline.library import CorpusLibrary
from agent_client.proposals import ProposalRequest
from ingest.bundle import bundled_source, library_dir
from tests.agent_client.offline.test_expansions import SOFTMAX

FAMILIES = sorted(p.name for p in library_dir().iterdir() if (p / "kernel.yaml").is_file())


def test_every_family_is_read():
    assert len(FAMILIES) >= 13
    assert sorted(r.op_family for r in CorpusLibrary().kernels()) == FAMILIES


@pytest.mark.parametrize("family", FAMILIES)
def test_the_store_and_the_corpus_read_the_same_source(family):
    from ingest.kernels import read_kernel

    [record] = CorpusLibrary().kernels(op_family=family)
    stored = read_kernel(library_dir() / family / "kernel.py")  # what `kkb ingest` stores
    assert record.source == stored.source == bundled_source(library_dir() / family / "kernel.py")
    assert "from corpus.kernels" not in record.source
    assert record.tunables == stored.tunables and record.name == stored.name


class _Unbundled(CorpusLibrary):
    """A store of an older kind: records holding kernel.py as written, its helper imports not inlined."""

    def kernels(self, **kw):
        return [dataclasses.replace(r, source=Path(r.path).read_text()) for r in super().kernels(**kw)]


def test_the_provider_bundles_a_record_stored_unbundled(tmp_path):
    spec = tmp_path / "softmax.py"
    spec.write_text(textwrap.dedent(SOFTMAX))
    assert "from corpus.kernels" in Path(CorpusLibrary().kernels(op_family="softmax")[0].path).read_text()

    def library_route(kb):
        request = ProposalRequest(spec_path=spec, spec_source=spec.read_text(), backend="triton",
                                  accelerator="h100", prompt="", parent=None, n=1, kb=kb)
        return next(r for r in OfflineProvider().routes(request)[0] if r.meta["route"] == "library")

    unbundled, bundled = library_route(_Unbundled()), library_route(CorpusLibrary())
    assert "from corpus.kernels" not in unbundled.source
    assert unbundled.source == bundled.source


def test_a_kernel_that_refuses_the_spec_shapes_is_no_route(tmp_path):
    # a head dimension the attention kernel does not take: its launcher raises, so the route never reaches the
    # harness (the general lowering still serves the spec)
    attention = "torch.nn.functional.scaled_dot_product_attention(x, x, x)"
    spec = tmp_path / "sdpa.py"
    spec.write_text(SOFTMAX.replace("torch.softmax(x, dim=1)", attention)
                    .replace("torch.rand(batch_size, dim)", "torch.rand(batch_size, 2, 8, 24)"))
    request = ProposalRequest(spec_path=spec, spec_source=spec.read_text(), backend="triton", prompt="",
                              accelerator="h100", parent=None, n=1, kb=CorpusLibrary())
    routes, why = OfflineProvider().routes(request)
    assert [r.id for r in routes] == ["lowering"]
    said = "attention_fwd_triton cannot run the spec: ValueError"
    assert any(said in w and "head_dim 24" in w for w in why), why


def test_a_route_whose_forward_cannot_take_the_spec_is_no_route(tmp_path):
    # a batched matmul: the GEMM family's forward transposes its second input as a matrix, which a 3-D
    # tensor is not; a dry run shows it (as the harness would, at a candidate's cost)
    spec = tmp_path / "bmm.py"
    forward = "def forward(self, x: torch.Tensor) -> torch.Tensor:"
    spec.write_text(SOFTMAX.replace(forward, "def forward(self, x, y):")
                    .replace("torch.softmax(x, dim=1)", "torch.bmm(x, y)")
                    .replace("x = torch.rand(batch_size, dim)\n    return [x]",
                             "return [torch.rand(batch_size, 8, 16), torch.rand(batch_size, 16, 12)]"))
    request = ProposalRequest(spec_path=spec, spec_source=spec.read_text(), backend="triton", prompt="",
                              accelerator="h100", parent=None, n=1, kb=CorpusLibrary())
    routes, why = OfflineProvider().routes(request)
    assert "library:gemm_epilogue_triton" not in [r.id for r in routes], why
    # refused by the family's renderer (it names batched products), or failing its dry run
    assert any("gemm_epilogue" in w and ("batched" in w or "cannot run the spec" in w) for w in why), why


class _EmptyStore(CorpusLibrary):
    """A knowledge base that was never ingested: no kernel records at all."""

    def kernels(self, **kw):
        return []


class _OtherFamilies(CorpusLibrary):
    """A store that holds kernels, none of them softmax: what the user keeps is what the provider offers."""

    def kernels(self, **kw):
        return [r for r in super().kernels(**kw) if r.op_family != "softmax"]


def test_a_store_never_ingested_serves_the_library_that_ships(tmp_path):
    spec = tmp_path / "softmax.py"
    spec.write_text(textwrap.dedent(SOFTMAX))

    def routes(kb):
        request = ProposalRequest(spec_path=spec, spec_source=spec.read_text(), backend="triton",
                                  accelerator="h100", prompt="", parent=None, n=1, kb=kb)
        return OfflineProvider().routes(request)

    found, why = routes(_EmptyStore())
    [library] = [r for r in found if r.meta["route"] == "library"]
    assert library.source == next(r for r in routes(CorpusLibrary())[0] if r.meta["route"] == "library").source
    assert any("holds no kernels (`kkb ingest` adds them)" in w for w in why), why
    found, why = routes(_OtherFamilies())
    assert [r for r in found if r.meta["route"] == "library"] == []
    assert any("no triton kernel for op family 'softmax'" in w for w in why), why
