"""The gemm_epilogue family's route, matched by the ops of a spec's graph: KernelBench-style GEMM specs
(tests/agent_client/lowering/gemm_specs) reach the library kernel with their epilogue as its chain and pass the
harness; specs its kernel does not cover (batched, triangular, einsum, a computed operand) get no library route."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("TRITON_INTERPRET", "1")

from agent_client.offline.adapt import AdaptError, adapt
from agent_client.offline.families import render_forward
from agent_client.signature import trace_signature
from harness import EvalConfig, Status, evaluate
from ingest.bundle import bundled_source

REPO = Path(__file__).resolve().parents[3]
SPECS = REPO / "tests" / "agent_client" / "lowering" / "gemm_specs"
KERNEL = REPO / "corpus" / "kernels" / "gemm_epilogue" / "kernel.py"
CPU = EvalConfig.for_cpu_tests(trials=1, time_candidate=False, time_eager_baseline=False)

# (spec, the launcher call its forward must make)
SERVED = [
    ("square_matmul", "gemm_epilogue(inputs[0], inputs[1].t(), None, None, 1.0, 'none', 'none', chain=[])"),
    ("transposed_both", "gemm_epilogue(inputs[0].t(), inputs[1], None"),  # (a.T) @ (b.T): weight = b as stored
    ("transposed_b", "gemm_epilogue(inputs[0], inputs[1], None"),
    ("tensor3d_matmul", "gemm_epilogue(inputs[0], inputs[1].t()"),  # rows of a 3D input by a 2D matrix
    ("linear_mul_leaky", "chain=[('mul', 2.0,), ('leaky_relu', 0.1,)]"),
    ("linear_div_gelu", "chain=[('mul', 0.1,), ('gelu',)]"),
    ("linear_sub_mul_relu", "chain=[('add', -2.0,), ('mul', 1.5,), ('relu',)]"),
    ("linear_scale_hardtanh_gelu", "chain=[('mul', 0.5,), ('clamp', -2.0, 2.0,), ('gelu',)]"),
    ("linear_swish_scale_residual", "inputs[1], 1.0, 'none', 'none', chain=[('silu',), ('mul', 2.0,)]"),
    ("linear_sum_scale", "'sum', chain=[('mul', 0.5,), ('mul', 1.5,)]).unsqueeze(-1)"),
    ("linear_bf16_gelu", "chain=[('gelu',)]"),
    ("linear_cast_bf16_gelu", "chain=[('gelu',)]"),  # nn.Linear(...).to(torch.bfloat16) in __init__
    ("matvec", "gemm_epilogue(inputs[0], inputs[1].t()"),  # one output column: served, if not the fastest route
]
REFUSED = ["batched_matmul", "tril_matmul", "einsum4d", "sigmoid_prologue", "linear_swish_groupnorm",
           "linear_sum_reductions"]


def _forward(name: str) -> list[str]:
    sig = trace_signature(SPECS / f"{name}.py")
    if sig.family != "gemm_epilogue":
        raise AdaptError(f"family {sig.family}")
    return render_forward(sig)


@pytest.mark.parametrize("name, call", SERVED, ids=[s[0] for s in SERVED])
def test_gemm_specs_reach_the_library_kernel(name, call):
    assert call in "\n".join(_forward(name))


@pytest.mark.parametrize("name", REFUSED)
def test_what_the_kernel_does_not_cover_goes_to_the_lowering(name):
    with pytest.raises(AdaptError):
        _forward(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", [s[0] for s in SERVED])
def test_library_candidate_passes_the_harness(name):
    spec = SPECS / f"{name}.py"
    source = adapt(bundled_source(KERNEL), spec.read_text(), _forward(name), "test: library gemm_epilogue")
    verdict = evaluate(spec, source, backend="triton", device="cpu", config=CPU)
    assert verdict.status == Status.passed, verdict.reasons


def test_a_layer_cast_in_init_keeps_its_library_route():
    """Module.to(dtype) in __init__ swaps parameters, which fake ones refuse: the dry run's failure is no
    refusal of the spec, so the route stays."""
    from agent_client.offline import OfflineProvider
    from agent_client.offline.library import CorpusLibrary
    from agent_client.proposals import ProposalRequest

    spec = SPECS / "linear_cast_bf16_gelu.py"
    request = ProposalRequest(spec_path=spec, spec_source=spec.read_text(), backend="triton", accelerator="h100",
                              prompt="", parent=None, n=1, kb=CorpusLibrary())
    routes, why = OfflineProvider().routes(request)
    assert "library:gemm_epilogue_triton" in [r.id for r in routes], why
