"""The op-signature tracer: families read off real specs, traced on the meta device."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agent_client.signature import load_spec_module, trace_signature

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"

CASES = [
    # (forward body, init body, init args, inputs, expected family)
    ("return torch.softmax(x, dim=-1)", "", "[]", "[torch.randn(8, 4096)]", "softmax"),
    ("return F.log_softmax(x, dim=1)", "", "[]", "[torch.randn(8, 4096)]", "log_softmax"),
    ("return self.ln(x)", "self.ln = nn.LayerNorm(d)", "[64]", "[torch.randn(4, 64)]", "layernorm"),
    # hand-written RMSNorm, the common form in model code
    ("return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w",
     "self.w = nn.Parameter(torch.ones(d))", "[64]", "[torch.randn(4, 64)]", "rmsnorm"),
    ("return self.gn(x)", "self.gn = nn.GroupNorm(4, d)", "[16]", "[torch.randn(2, 16, 8, 8)]", "groupnorm"),
    # BatchNorm's step counter must not hide the batch_norm call
    ("return self.bn(x)", "self.bn = nn.BatchNorm2d(d)", "[16]", "[torch.randn(2, 16, 8, 8)]", "batchnorm"),
    ("return torch.sum(x, dim=1)", "", "[]", "[torch.randn(8, 32)]", "reduction"),
    ("return torch.argmax(x, dim=-1)", "", "[]", "[torch.randn(8, 32)]", "reduction"),
    ("return torch.cumsum(x, dim=1)", "", "[]", "[torch.randn(8, 32)]", "cumsum"),
    ("return F.cross_entropy(x, t)", "", "[]", "[torch.randn(8, 10), torch.randint(0, 10, (8,))]",
     "cross_entropy"),
    ("return torch.clamp(F.gelu(x) * 2.0 + 1.0, -3, 3)", "", "[]", "[torch.randn(8, 32)]", "pointwise"),
    ("return F.relu(self.fc(x)) * 0.5 + r", "self.fc = nn.Linear(d, 2 * d)", "[32]",
     "[torch.randn(4, 32), torch.randn(4, 64)]", "gemm_epilogue"),
    ("return F.max_pool2d(x, 3, 2, 1)", "", "[]", "[torch.randn(2, 4, 16, 16)]", "pool2d"),
    ("return F.scaled_dot_product_attention(q, k, v, is_causal=True)", "", "[]",
     "[torch.randn(1, 2, 16, 8)] * 3", "attention"),
    ("return self.conv(x)", "self.conv = nn.Conv2d(d, d, 3)", "[4]", "[torch.randn(1, 4, 8, 8)]", "conv"),
    ("return self.conv(x)", "self.conv = nn.ConvTranspose3d(d, d, 3, 2)", "[4]", "[torch.randn(1, 4, 3, 4, 5)]",
     "conv"),
    # a convolution with an epilogue is the general lowering's (the conv family's mainloop, the epilogue fused)
    ("return torch.relu(self.conv(x))", "self.conv = nn.Conv2d(d, d, 3)", "[4]", "[torch.randn(1, 4, 8, 8)]",
     None),
]


def _write_spec(tmp_path: Path, forward: str, init: str, init_args: str, inputs: str) -> Path:
    names = "x, t" if "F.cross_entropy" in forward else "x, r" if "+ r" in forward else \
        "q, k, v" if "attention" in forward else "x"
    src = HEADER + textwrap.dedent(f"""
        class Model(nn.Module):
            def __init__(self, d=None):
                super().__init__()
                {init or 'pass'}

            def forward(self, {names}):
                {forward}


        def get_inputs():
            return {inputs}


        def get_init_inputs():
            return {init_args}
        """)
    path = tmp_path / "spec.py"
    path.write_text(src)
    return path


@pytest.mark.parametrize("forward, init, init_args, inputs, family", CASES,
                         ids=[c[4] or "unsupported" for c in CASES])
def test_family_is_read_off_the_trace(tmp_path, forward, init, init_args, inputs, family):
    sig = trace_signature(_write_spec(tmp_path, forward, init, init_args, inputs))
    assert sig.family == family, sig.text


def test_trace_runs_on_meta_so_huge_shapes_cost_nothing(tmp_path):
    # 2^40 elements would need 4 TiB on a real device: only shapes flow through the trace
    path = _write_spec(tmp_path, "return torch.softmax(x, dim=-1)", "", "[]", "[torch.randn(2**20, 2**20)]")
    sig = trace_signature(path)
    assert sig.inputs == (((2**20, 2**20), "float32"),)


def test_parameters_and_constants_are_named(tmp_path):
    path = _write_spec(tmp_path, "return F.relu(self.fc(x)) * 0.5 + r", "self.fc = nn.Linear(d, 2 * d)", "[32]",
                       "[torch.randn(4, 32), torch.randn(4, 64)]")
    sig = trace_signature(path)
    assert sig.text == "linear(in0, p:fc.weight, p:fc.bias) ; relu(t0) ; mul(t1, 0.5) ; add(t2, in1)"
    assert sig.params == {"fc.weight": (64, 32), "fc.bias": (64,)}


def test_a_spec_without_the_format_is_named(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text("import torch\nclass Model: pass\n")
    with pytest.raises(ValueError, match="bad.py defines no get_inputs"):
        load_spec_module(path)
