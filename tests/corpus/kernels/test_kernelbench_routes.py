"""Every library family reaches a KernelBench-style spec of its own kind: the offline provider's library route
(the library read from corpus/kernels through the one bundling function) gives a candidate that the harness
passes on the CPU. The specs are written the way KernelBench writes its problems: module-level size
constants, `torch.rand` inputs, `super(Model, self).__init__()`, the op's parameters through
get_init_inputs (small sizes here, for the Triton interpreter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_client.offline import OfflineProvider
from agent_client.offline.library import CorpusLibrary
from agent_client.proposals import ProposalRequest
from ingest.bundle import library_dir

HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"


def _spec(init_args: str, init_body: str, forward: str, sizes: str, inputs: str, init_inputs: str) -> str:
    args, result = forward.split(":", 1)
    body = "\n".join("        " + line.strip() for line in init_body.splitlines())
    return (HEAD + "\nclass Model(nn.Module):\n"
            f"    def __init__(self{init_args}):\n        super(Model, self).__init__()\n{body}\n\n"
            f"    def forward(self{args}):\n        return {result.strip()}\n\n\n{sizes}\n\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\n\ndef get_init_inputs():\n    return [{init_inputs}]\n")


ROW = "batch_size = 8\ndim = 1000"
SPECS = {
    "attention": _spec("", "pass", ", Q, K, V: F.scaled_dot_product_attention(Q, K, V)",
                       "batch_size = 2\nnum_heads = 2\nsequence_length = 16\nembedding_dimension = 16",
                       ", ".join(["torch.rand(batch_size, num_heads, sequence_length, embedding_dimension)"] * 3), ""),
    "batchnorm": _spec(", num_features: int", "self.bn = nn.BatchNorm2d(num_features=num_features)",
                       ", x: self.bn(x)", "batch_size = 4\nfeatures = 8\ndim1 = 6\ndim2 = 6",
                       "torch.rand(batch_size, features, dim1, dim2)", "features"),
    "cross_entropy": _spec("", "pass", ", predictions, targets: F.cross_entropy(predictions, targets)",
                           "batch_size = 16\nnum_classes = 100\ninput_shape = (num_classes,)",
                           "torch.rand(batch_size, *input_shape), torch.randint(0, num_classes, (batch_size,))", ""),
    "cumsum": _spec(", dim", "self.dim = dim", ", x: torch.cumsum(x, dim=self.dim)",
                    "batch_size = 8\ninput_shape = (300,)\ndim = 1", "torch.rand(batch_size, *input_shape)", "dim"),
    "gemm_epilogue": _spec("", "pass", ", A, B: torch.matmul(A, B)", "N = 64", "torch.rand(N, N), torch.rand(N, N)", ""),
    "groupnorm": _spec(", num_features: int, num_groups: int",
                       "self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)", ", x: self.gn(x)",
                       "batch_size = 4\nfeatures = 8\nnum_groups = 2\ndim1 = 6\ndim2 = 6",
                       "torch.rand(batch_size, features, dim1, dim2)", "features, num_groups"),
    "layernorm": _spec(", normalized_shape: tuple", "self.ln = nn.LayerNorm(normalized_shape=normalized_shape)",
                       ", x: self.ln(x)", "batch_size = 4\nfeatures = 4\ndim1 = 8\ndim2 = 8",
                       "torch.rand(batch_size, features, dim1, dim2)", "(features, dim1, dim2)"),
    "log_softmax": _spec(", dim: int = 1", "self.dim = dim", ", x: torch.log_softmax(x, dim=self.dim)", ROW,
                         "torch.rand(batch_size, dim)", ""),
    "pointwise": _spec("", "pass", ", x: torch.relu(x)", ROW, "torch.rand(batch_size, dim)", ""),
    "pool2d": _spec(", kernel_size: int, stride: int, padding: int, dilation: int",
                    "self.maxpool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding, "
                    "dilation=dilation)", ", x: self.maxpool(x)",
                    "batch_size = 2\nchannels = 4\nheight = 12\nwidth = 12\nkernel_size = 2\nstride = 2\npadding = 1"
                    "\ndilation = 1", "torch.rand(batch_size, channels, height, width)",
                    "kernel_size, stride, padding, dilation"),
    "reduction": _spec(", dim: int", "self.dim = dim", ", x: torch.sum(x, dim=self.dim, keepdim=True)",
                       "batch_size = 4\ndim1 = 32\ndim2 = 48\nreduce_dim = 1", "torch.rand(batch_size, dim1, dim2)",
                       "reduce_dim"),
    "rmsnorm": _spec(", num_features: int, eps: float = 1e-5", "self.num_features = num_features\nself.eps = eps",
                     ", x: x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)",
                     "batch_size = 4\nfeatures = 16\ndim1 = 6\ndim2 = 6", "torch.rand(batch_size, features, dim1, dim2)",
                     "features"),
    "softmax": _spec("", "pass", ", x: torch.softmax(x, dim=1)", ROW, "torch.rand(batch_size, dim)", ""),
}
FAMILIES = sorted(p.name for p in library_dir().iterdir() if (p / "kernel.yaml").is_file())

# level 2's way: a layer, then a chain of ops that a family's prologue or epilogue may take
LINEAR = ("self.gemm = nn.Linear(in_features, out_features)", "batch_size = 8\nin_features = 32\nout_features = 48",
          "torch.rand(batch_size, in_features)")
LEVEL2 = {
    "gemm_multiply_leakyrelu": ("gemm_epilogue", _spec(
        ", in_features, out_features, multiplier, negative_slope", LINEAR[0] + "\nself.multiplier = multiplier\n"
        "self.leaky_relu = nn.LeakyReLU(negative_slope)", ", x: self.leaky_relu(self.gemm(x) * self.multiplier)",
        LINEAR[1] + "\nmultiplier = 2.0\nnegative_slope = 0.1", LINEAR[2],
        "in_features, out_features, multiplier, negative_slope")),
    "matmul_divide_gelu": ("gemm_epilogue", _spec(
        ", input_size, output_size, divisor", "self.linear = nn.Linear(input_size, output_size)\n"
        "self.divisor = divisor", ", x: torch.nn.functional.gelu(self.linear(x) / self.divisor)",
        "batch_size = 8\ninput_size = 32\noutput_size = 48\ndivisor = 10.0", "torch.rand(batch_size, input_size)",
        "input_size, output_size, divisor")),
}


def test_every_family_has_a_kernelbench_style_spec():
    assert sorted(SPECS) == FAMILIES


@pytest.fixture(scope="module")
def pool():
    from harness import EvalConfig, WorkerPool

    config = EvalConfig.for_cpu_tests(trials=1, time_candidate=False, time_eager_baseline=False)
    with WorkerPool(["cpu"], config=config) as workers:
        yield workers


@pytest.mark.parametrize("family", FAMILIES)
def test_the_family_serves_its_kernelbench_style_spec(family, tmp_path, pool):
    _library_route_passes(family, SPECS[family], tmp_path / f"kb_{family}.py", pool)


@pytest.mark.parametrize("name", sorted(LEVEL2))
def test_a_level2_chain_reaches_its_family(name, tmp_path, pool):
    family, source = LEVEL2[name]
    _library_route_passes(family, source, tmp_path / f"kb_{name}.py", pool)


def _library_route_passes(family: str, source: str, spec: Path, pool) -> None:
    spec.write_text(source)
    request = ProposalRequest(spec_path=spec, spec_source=spec.read_text(), backend="triton", accelerator="h100",
                              prompt="", parent=None, n=4, kb=CorpusLibrary())
    provider = OfflineProvider()
    routes, why = provider.routes(request)
    library = [r for r in routes if r.meta.get("route") == "library"]
    if not library:
        pytest.xfail(f"no library route for a KernelBench-style {family} spec: {'; '.join(why)}")
    assert library[0].meta["op_family"] == family
    proposal = next(p for p in provider.propose(request) if p.meta["route_id"] == library[0].id)
    verdict = pool.evaluate(spec, proposal.code, "triton")
    assert verdict.status.value == "passed", (verdict.reasons, Path(spec).name)
