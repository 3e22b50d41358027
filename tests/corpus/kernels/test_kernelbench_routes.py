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


def _spec(forward: str, inputs: str, sizes: str, init: str = "pass", init_args: str = "",
          init_inputs: str = "") -> str:
    """A spec in KernelBench's layout. forward: "ARGS: EXPRESSION"; sizes, init: statements split by "; "."""
    args, result = forward.split(":", 1)
    body = "\n".join("        " + line for line in init.split("; "))
    sizes = "\n".join(sizes.split("; "))
    return (HEAD + "\nclass Model(nn.Module):\n"
            f"    def __init__(self{', ' + init_args if init_args else ''}):\n"
            f"        super(Model, self).__init__()\n{body}\n\n"
            f"    def forward(self, {args}):\n        return {result.strip()}\n\n\n{sizes}\n\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\n\n"
            f"def get_init_inputs():\n    return [{init_inputs}]\n")


ROW = "batch_size = 8; dim = 1000"
MAPS = "torch.rand(batch_size, features, dim1, dim2)"
QKV = "torch.rand(batch_size, num_heads, sequence_length, embedding_dimension)"
SPECS = {
    "attention": _spec("Q, K, V: F.scaled_dot_product_attention(Q, K, V)", ", ".join([QKV] * 3),
                       "batch_size = 2; num_heads = 2; sequence_length = 16; embedding_dimension = 16"),
    "batchnorm": _spec("x: self.bn(x)", MAPS, "batch_size = 4; features = 8; dim1 = 6; dim2 = 6",
                       "self.bn = nn.BatchNorm2d(num_features=num_features)", "num_features: int",
                       "features"),
    "conv": _spec("x: self.conv2d(x)", "torch.rand(batch_size, in_channels, height, width)",
                  "batch_size = 2; in_channels = 8; out_channels = 16; kernel_size = 3; height = 10; width = 9",
                  "self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, bias=bias)",
                  "in_channels: int, out_channels: int, kernel_size: int, bias: bool = False",
                  "in_channels, out_channels, kernel_size"),
    "cross_entropy": _spec("predictions, targets: F.cross_entropy(predictions, targets)",
                           "torch.rand(batch_size, *input_shape), "
                           "torch.randint(0, num_classes, (batch_size,))",
                           "batch_size = 16; num_classes = 100; input_shape = (num_classes,)"),
    "cumsum": _spec("x: torch.cumsum(x, dim=self.dim)", "torch.rand(batch_size, *input_shape)",
                    "batch_size = 8; input_shape = (300,); dim = 1", "self.dim = dim", "dim", "dim"),
    "gemm_epilogue": _spec("A, B: torch.matmul(A, B)", "torch.rand(N, N), torch.rand(N, N)", "N = 64"),
    "groupnorm": _spec("x: self.gn(x)", MAPS,
                       "batch_size = 4; features = 8; num_groups = 2; dim1 = 6; dim2 = 6",
                       "self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)",
                       "num_features: int, num_groups: int", "features, num_groups"),
    "layernorm": _spec("x: self.ln(x)", MAPS, "batch_size = 4; features = 4; dim1 = 8; dim2 = 8",
                       "self.ln = nn.LayerNorm(normalized_shape=normalized_shape)", "normalized_shape: tuple",
                       "(features, dim1, dim2)"),
    "log_softmax": _spec("x: torch.log_softmax(x, dim=self.dim)", "torch.rand(batch_size, dim)", ROW,
                         "self.dim = dim", "dim: int = 1"),
    "pointwise": _spec("x: torch.relu(x)", "torch.rand(batch_size, dim)", ROW),
    "pool2d": _spec("x: self.maxpool(x)", "torch.rand(batch_size, channels, height, width)",
                    "batch_size = 2; channels = 4; height = 12; width = 12; kernel_size = 2; stride = 2; "
                    "padding = 1; dilation = 1",
                    "self.maxpool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding, "
                    "dilation=dilation)", "kernel_size: int, stride: int, padding: int, dilation: int",
                    "kernel_size, stride, padding, dilation"),
    "reduction": _spec("x: torch.sum(x, dim=self.dim, keepdim=True)", "torch.rand(batch_size, dim1, dim2)",
                       "batch_size = 4; dim1 = 32; dim2 = 48; reduce_dim = 1", "self.dim = dim", "dim: int",
                       "reduce_dim"),
    "rmsnorm": _spec("x: x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)", MAPS,
                     "batch_size = 4; features = 16; dim1 = 6; dim2 = 6",
                     "self.num_features = num_features; self.eps = eps",
                     "num_features: int, eps: float = 1e-5",
                     "features"),
    "softmax": _spec("x: torch.softmax(x, dim=1)", "torch.rand(batch_size, dim)", ROW),
}
FAMILIES = sorted(p.name for p in library_dir().iterdir() if (p / "kernel.yaml").is_file())

# level 2's way: a layer, then a chain of ops that a family's prologue or epilogue may take
LEVEL2 = {
    "gemm_multiply_leakyrelu": ("gemm_epilogue", _spec(
        "x: self.leaky_relu(self.gemm(x) * self.multiplier)", "torch.rand(batch_size, in_features)",
        "batch_size = 8; in_features = 32; out_features = 48; multiplier = 2.0; negative_slope = 0.1",
        "self.gemm = nn.Linear(in_features, out_features); self.multiplier = multiplier; "
        "self.leaky_relu = nn.LeakyReLU(negative_slope)",
        "in_features, out_features, multiplier, negative_slope",
        "in_features, out_features, multiplier, negative_slope")),
    "matmul_divide_gelu": ("gemm_epilogue", _spec(
        "x: torch.nn.functional.gelu(self.linear(x) / self.divisor)", "torch.rand(batch_size, input_size)",
        "batch_size = 8; input_size = 32; output_size = 48; divisor = 10.0",
        "self.linear = nn.Linear(input_size, output_size); self.divisor = divisor",
        "input_size, output_size, divisor", "input_size, output_size, divisor")),
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
    request = ProposalRequest(spec_path=spec, spec_source=spec.read_text(), backend="triton", prompt="",
                              accelerator="h100", parent=None, n=4, kb=CorpusLibrary())
    provider = OfflineProvider()
    routes, why = provider.routes(request)
    library = [r for r in routes if r.meta.get("route") == "library"]
    if not library:
        pytest.xfail(f"no library route for a KernelBench-style {family} spec: {'; '.join(why)}")
    assert library[0].meta["op_family"] == family
    proposal = next(p for p in provider.propose(request) if p.meta["route_id"] == library[0].id)
    verdict = pool.evaluate(spec, proposal.code, "triton")
    assert verdict.status.value == "passed", (verdict.reasons, Path(spec).name)


def test_a_written_out_batch_norm_without_a_counter_passes(tmp_path, pool):
    # F.batch_norm on the module's own buffers keeps no num_batches_tracked: the adapted forward must not
    # reach for one (it did, and every such candidate stopped with an AttributeError)
    source = _spec("x: F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, True, 0.1, "
                   "1e-5)", MAPS, "batch_size = 4; features = 8; dim1 = 6; dim2 = 6",
                   "self.weight = nn.Parameter(torch.randn(num_features)); "
                   "self.bias = nn.Parameter(torch.randn(num_features)); "
                   "self.register_buffer('running_mean', torch.zeros(num_features)); "
                   "self.register_buffer('running_var', torch.ones(num_features))", "num_features: int",
                   "features")
    spec = tmp_path / "kb_batchnorm_functional.py"
    spec.write_text(source)
    request = ProposalRequest(spec_path=spec, spec_source=source, backend="triton", prompt="", accelerator="h100",
                              parent=None, n=4, kb=CorpusLibrary())
    routes, why = OfflineProvider().routes(request)
    assert any(r.meta.get("op_family") == "batchnorm" for r in routes), why
    _library_route_passes("batchnorm", source, spec, pool)
