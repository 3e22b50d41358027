"""The offline provider's search on a KernelBench-style spec: expansions move tunables the spec's path reads,
a route at its limit stops, a losing route stops being expanded, no launch configuration is proposed twice.
The library comes from corpus/kernels through the one bundling function (agent_client/offline/library.py)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")

from agent_client.offline import OfflineProvider
from agent_client.offline.library import CorpusLibrary
from agent_client.offline.reads import LaunchProbe
from agent_client.proposals import NodeView, ProposalRequest

# KernelBench's way: module-level sizes, torch.rand inputs, super(Model, self).__init__(). A row wider
# than the library's widest row kept in registers (16384), so the softmax kernel takes its looped path.
SOFTMAX = """
import torch
import torch.nn as nn

batch_size = 2
dim = 20000


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
"""


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("kb-style") / "softmax_wide.py"
    path.write_text(textwrap.dedent(SOFTMAX))
    return path


def _request(spec: Path, parent=None, history=(), n=4) -> ProposalRequest:
    return ProposalRequest(spec_path=spec, spec_source=spec.read_text(), backend="triton", accelerator="h100",
                           prompt="", parent=parent, n=n, kb=CorpusLibrary(), history=list(history))


def _view(node_id: str, proposal, fitness: float, fraction: float | None, kind: str = "memory") -> NodeView:
    verdict = {"status": "passed", "fraction_of_limit": fraction, "limit_kind": kind,
               "speedup_vs_compile": fitness}
    return NodeView(node_id, proposal.code, verdict, proposal.meta["tunables"], proposal.meta, fitness)


def _drafts(provider: OfflineProvider, spec: Path):
    drafts = provider.propose(_request(spec, n=2))
    # each route's default first
    assert {d.meta["route_id"] for d in drafts} == {"lowering", "library:softmax_rows_triton"}
    return {d.meta["route"]: d for d in drafts}


def test_the_dry_run_reads_the_looped_path_only(spec):
    provider = OfflineProvider()
    route = next(r for r in provider.routes(_request(spec))[0] if r.id == "library:softmax_rows_triton")
    probe = LaunchProbe(route.source, spec, "cpu")
    trace = probe.trace(route.default)
    assert {"BLOCK_LOOP", "num_warps_loop", "WIDE_STRATEGY"} <= trace.read
    assert not {"ELEMS_PER_THREAD", "ROWS_FUSED", "num_warps_fused"} & trace.read  # the fused path's
    assert [launch[0] for launch in trace.launches] == ["_softmax_looped_kernel"]
    # a tunable of another path changes nothing that runs; the looped block size does
    assert probe.trace({**route.default, "ROWS_FUSED": 8}).launches == trace.launches
    assert probe.trace({**route.default, "BLOCK_LOOP": 2048}).launches != trace.launches


def test_expansions_differ_from_their_parent_in_a_tunable_the_path_reads(spec):
    provider = OfflineProvider()
    library = _drafts(provider, spec)["library"]
    parent = _view("n1", library, 0.8, 0.4)
    route = next(r for r in provider.routes(_request(spec))[0] if r.id == library.meta["route_id"])
    relevant = provider.relevant(_request(spec), route, library.meta["tunables"])
    children = provider.propose(_request(spec, parent, [parent], n=6))
    assert len(children) == 6
    for child in children:
        assert child.meta["route_id"] == route.id and child.meta["expanded_from"] == "n1"
        moved = set(child.meta["changed"])
        assert moved and moved <= set(route.space), moved  # a declared tunable, and only declared ones
        assert moved & relevant, moved  # at least one that the spec's path reads
    # memory-bound and far from the limit: structure and split factors move before block sizes and warps
    assert children[0].meta["changed"][0] in {"WIDE_STRATEGY", "PROGRAMS_PER_SM", "MAX_FUSED_N"}


def test_no_launch_configuration_is_proposed_twice(spec):
    provider = OfflineProvider()
    library = _drafts(provider, spec)["library"]
    route = next(r for r in provider.routes(_request(spec))[0] if r.id == library.meta["route_id"])
    probe = LaunchProbe(route.source, spec, "cpu")
    seen = {probe.trace(library.meta["tunables"]).launches}
    parent = _view("n1", library, 0.8, 0.6)
    for _ in range(3):
        for child in provider.propose(_request(spec, parent, [parent], n=4)):
            launches = probe.trace(child.meta["tunables"]).launches
            assert launches not in seen
            seen.add(launches)
    assert len(seen) == 13


def test_a_route_at_its_limit_stops_the_search(spec):
    provider = OfflineProvider()
    library = _drafts(provider, spec)["library"]
    parent = _view("n1", library, 1.6, 0.93)
    assert provider.propose(_request(spec, parent, [parent])) == []
    assert "93%" in provider.stop_note and "memory" in provider.stop_note
    assert provider.propose(_request(spec, None, [parent])) == []  # no more drafts either


def test_a_losing_route_stops_being_expanded(spec):
    provider = OfflineProvider()
    drafts = _drafts(provider, spec)
    lowering = _view("n1", drafts["lowering"], 0.3, 0.2)
    library = _view("n2", drafts["library"], 2.0, 0.6)
    children = provider.propose(_request(spec, lowering, [library, lowering], n=3))
    assert children
    for child in children:  # the lowering's node was chosen, but the leading route is the one expanded
        assert child.meta["route_id"] == "library:softmax_rows_triton"
        assert child.meta["expanded_from"] == "n2"
    close = _view("n3", drafts["lowering"], 1.9, 0.5)  # within reach of the leader: it keeps its own
    children = provider.propose(_request(spec, close, [library, close], n=2))
    assert children and all(c.meta["route_id"] == "lowering" for c in children)
