"""The pointwise library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_pointwise.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: every op of the chain vocabulary on its own, and unknown ops rejected by name; FAST 3's
forms (the interpreter runs them with an exp-based tanh), its interval analysis, its fall-back for fp32
inputs, and its error with the GPU's tanh.approx emulated (the exact tanh made worse by that
instruction's relative error bound, both ways). FAST 4: which tail it fits, its forms against torch, and
the spec's chain on every bf16 value in [-20, 20] against the fp64 chain.
"""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from harness.spec import import_file
from tests.corpus.kernels.library_check import KERNELS, family_kernel, family_tests

FAMILY = "pointwise"


test_kernel_passes_spec, test_sidecar_matches_kernel = family_tests(FAMILY)


def kernel():
    return family_kernel(FAMILY)


OPS = [("relu",), ("gelu",), ("gelu_tanh",), ("silu",), ("mish",), ("softplus",), ("sigmoid",), ("tanh",),
       ("hardswish",), ("leaky_relu", 0.2), ("clamp", -0.5, 0.7), ("mul", -3.0), ("add", 0.125)]
TORCH = {
    "relu": torch.relu, "gelu": torch.nn.functional.gelu,
    "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"), "silu": torch.nn.functional.silu,
    "mish": torch.nn.functional.mish, "softplus": torch.nn.functional.softplus, "sigmoid": torch.sigmoid,
    "tanh": torch.tanh, "hardswish": torch.nn.functional.hardswish,
    "leaky_relu": torch.nn.functional.leaky_relu, "clamp": torch.clamp, "mul": torch.mul, "add": torch.add,
}


@pytest.mark.parametrize("fast", [0, 1], ids=["original", "fewer_transcendentals"])
@pytest.mark.parametrize("op", OPS, ids=lambda op: op[0])
def test_each_op_matches_torch(op, fast, monkeypatch):
    x = torch.linspace(-30.0, 30.0, 1999)  # both tails: overflow-prone exp, softplus threshold
    k = kernel()
    monkeypatch.setitem(k.TUNABLES, "FAST", fast)
    out = k.pointwise_chain(x, [op])
    torch.testing.assert_close(out, TORCH[op[0]](x, *op[1:]), atol=1e-5, rtol=1e-5)


def test_unknown_op_is_named():
    with pytest.raises(ValueError, match="'swish'"):
        kernel().ModelNew([("swish",)])
    with pytest.raises(ValueError, match="at most 8"):
        kernel().ModelNew([("relu",)] * 9)


SFU_OPS = [("silu",), ("mish",), ("softplus",), ("gelu_tanh",), ("sigmoid",), ("tanh",)]
BOUNDED_CHAINS = [  # each ends in an op that FAST 3 turns SFU-free from its bounded input
    [("sigmoid",), ("tanh",)], [("tanh",), ("sigmoid",)], [("tanh",), ("tanh",), ("relu",)],
    [("clamp", -1.0, 1.0), ("tanh",)], [("mul", 0.1), ("tanh",), ("mul", 20.0), ("sigmoid",)],
]


def torch_chain(x, chain):
    for name, *args in chain:
        x = TORCH[name](x, *args)
    return x


def fast3(monkeypatch):
    k = kernel()
    monkeypatch.setitem(k.TUNABLES, "FAST", 3)
    return k


@pytest.mark.parametrize("chain", [[op] for op in OPS] + BOUNDED_CHAINS,
                         ids=lambda chain: "-".join(op[0] for op in chain))
def test_bounded_forms_match_torch(chain, monkeypatch):
    # fp16 output (11-bit mantissa) shows the formulas' error: half an ulp of rounding plus <= 1.3e-4
    x = torch.linspace(-20.0, 20.0, 4001, dtype=torch.float16)
    out = fast3(monkeypatch).pointwise_chain(x, chain).double()
    torch.testing.assert_close(out, torch_chain(x.double(), chain), atol=1e-5, rtol=2.0 ** -10)


def test_bounded_codes_follow_input_ranges():
    k = kernel()

    def bounded(chain):
        codes, values = k._encode(chain)
        return [k._NAMES.get(c, c) for c in k._bounded_codes(codes, values)[:len(chain)]]

    spec_chain = [("silu",), ("mish",), ("softplus",), ("gelu_tanh",), ("sigmoid",), ("tanh",), ("relu",)]
    assert bounded(spec_chain) == ["silu", "mish", "softplus", "gelu_tanh", "sigmoid", k._TANH_UNIT, k._NOP]
    assert bounded([("tanh",), ("sigmoid",), ("relu",)]) == ["tanh", k._SIGMOID_SMALL, k._NOP]
    assert bounded([("sigmoid",), ("mul", 2.0), ("add", -1.0), ("tanh",)])[-1] == k._TANH_UNIT
    assert bounded([("softplus",), ("relu",)])[-1] == k._NOP
    # unbounded or too wide inputs keep the SFU forms
    assert bounded([("mul", 3.0), ("tanh",)]) == ["mul", "tanh"]
    assert bounded([("tanh",), ("mul", 3.0), ("sigmoid",)])[-1] == "sigmoid"
    assert bounded([("leaky_relu", 0.1), ("tanh",), ("relu",)]) == ["leaky_relu", "tanh", "relu"]
    assert bounded([("relu",), ("bias",), ("tanh",)])[-1] == "tanh"


def test_fp32_inputs_fall_back_to_fast1(monkeypatch):
    # FAST 2, 3 and 4 are sized for a 16-bit tolerance: fp32 inputs get FAST 1's kernel, bit for bit
    x = torch.linspace(-30.0, 30.0, 1999)
    chain = [("silu",), ("mish",), ("softplus",), ("sigmoid",), ("tanh",), ("relu",)]
    k = kernel()
    monkeypatch.setitem(k.TUNABLES, "FAST", 1)
    fast1 = k.pointwise_chain(x, chain)
    for fast in (2, 3, 4):
        monkeypatch.setitem(k.TUNABLES, "FAST", fast)
        assert torch.equal(k.pointwise_chain(x, chain), fast1)


# tanh.approx.f32's maximum relative error: 2^-11 by the PTX ISA; older notes say 2^-10.7, used here
TANH_APPROX_REL_ERR = 2.0 ** -10.7


@triton.jit
def _tanh_too_big(z):  # |tanh.approx| at the top of its error bound (never beyond +-1)
    t = (1.0 - 2.0 / (tl.exp(2.0 * z) + 1.0)) * 1.00060114
    return tl.minimum(tl.maximum(t, -1.0), 1.0)


@triton.jit
def _tanh_too_small(z):
    return (1.0 - 2.0 / (tl.exp(2.0 * z) + 1.0)) * 0.99939886


@pytest.mark.parametrize("tanh", [_tanh_too_big, _tanh_too_small], ids=["too_big", "too_small"])
@pytest.mark.parametrize("op", SFU_OPS, ids=lambda op: op[0])
def test_bounded_forms_with_tanh_approx_error(op, tanh, monkeypatch):
    # what FAST 3 does on the GPU, where tanh is tanh.approx.f32: each op stays within a quarter of a bf16
    # ulp plus |x| 2^-11, the term from 1 + t where tanh saturates (silu, mish, gelu_tanh of x << 0)
    assert 1.0 + TANH_APPROX_REL_ERR == pytest.approx(1.00060114, abs=1e-8)
    k = fast3(monkeypatch)
    monkeypatch.setattr(k, "_tanh", tanh)
    x = torch.linspace(-20.0, 20.0, 4001, dtype=torch.float16)
    err = (k.pointwise_chain(x, [op]).double() - torch_chain(x.double(), [op])).abs()
    ref = torch_chain(x.double(), [op]).abs()
    assert torch.all(err <= 2.0 ** -9 * ref + 2.0 ** -11 * x.double().abs() + 1e-6)


@pytest.mark.parametrize("tanh", [_tanh_too_big, _tanh_too_small], ids=["too_big", "too_small"])
def test_silu_mish_spec_with_tanh_approx_error(tanh, monkeypatch):
    # the bf16 spec's chain on its input distribution (and its tails): within half the harness tolerance
    # of eager's bf16 result, whose own rounding is most of the difference
    spec = import_file(KERNELS / FAMILY / "specs" / "pointwise_silu_mish_bf16.py", "test_pointwise_spec")
    k = fast3(monkeypatch)
    monkeypatch.setattr(k, "_tanh", tanh)
    torch.manual_seed(0)
    x = torch.cat([torch.randn(16384) * 3.0, torch.linspace(-20.0, 20.0, 4001)]).to(torch.bfloat16)
    ref = spec.Model(spec.CHAIN)(x).double()
    out = k.pointwise_chain(x, spec.CHAIN).double()
    assert torch.all((out - ref).abs() <= 0.5 * (1e-2 + 1e-2 * ref.abs()))


SPEC_CHAIN = [("silu",), ("mish",), ("softplus",), ("gelu_tanh",), ("sigmoid",), ("tanh",), ("relu",)]
FIT_CHAINS = [  # each has a tail FAST 4 fits at FIT_BITS 12
    SPEC_CHAIN, [("softplus",), ("tanh",)], [("gelu_tanh",), ("sigmoid",), ("tanh",)],
    [("clamp", -1.0, 1.0), ("gelu",), ("tanh",)], [("mul", -2.0), ("softplus",), ("sigmoid",)],
]


def fitted(chain, bits=12):
    k = kernel()
    codes, values = k._encode(chain)
    return k._suffix_fit(tuple(codes), tuple(values), bits)


def test_suffix_fit_picks_the_longest_saturating_tail():
    slot, degree, tanh, maps, coeffs = fitted(SPEC_CHAIN)
    assert (slot, degree, tanh, len(coeffs)) == (1, 6, True, 7)  # mish .. relu: tanh(y / 2) and degree 6
    assert maps[:2] == (0.5, 0.0)
    assert fitted(SPEC_CHAIN, bits=10)[:3] == (0, 8, True)  # the whole chain, looser
    assert fitted([("clamp", -1.0, 1.0), ("gelu",), ("tanh",)])[:3] == (1, 7, False)  # bounded: no tanh
    # nothing to gain (one SFU op), a bias, or no saturating tail
    for chain in ([("silu",)], [("tanh",)], [("sigmoid",), ("tanh",)], [("bias",), ("silu",), ("sigmoid",)],
                  [("silu",), ("mish",)], [("gelu",), ("mul", 2.0)]):
        assert fitted(chain) is None, chain


def fast4(monkeypatch):
    k = kernel()
    monkeypatch.setitem(k.TUNABLES, "FAST", 4)
    return k


@pytest.mark.parametrize("chain", FIT_CHAINS, ids=lambda chain: "-".join(op[0] for op in chain))
def test_fitted_tails_match_torch(chain, monkeypatch):
    # fp16 output: half an ulp of rounding plus the fit's 2^-12 of the tail's largest value
    assert fitted(chain) is not None
    x = torch.linspace(-20.0, 20.0, 4001, dtype=torch.float16)
    ref = torch_chain(x.double(), chain)
    out = fast4(monkeypatch).pointwise_chain(x, chain).double()
    torch.testing.assert_close(out, ref, atol=2.0 ** -11 * ref.abs().max().item(), rtol=2.0 ** -10)


def every_bf16(lo: float, hi: float) -> torch.Tensor:
    values = torch.arange(-2 ** 15, 2 ** 15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    return values[torch.isfinite(values) & (values >= lo) & (values <= hi)]


@pytest.mark.parametrize("tanh", [None, _tanh_too_big, _tanh_too_small], ids=["exact", "too_big", "too_small"])
def test_fitted_spec_chain_on_every_bf16_value(tanh, monkeypatch):
    # the 33601 bf16 values in [-20, 20], computed with fp16 output to see the error before bf16's rounding:
    # within 2^-11 (an eighth of a bf16 ulp at the output's 0.55 .. 0.76, half an fp16 ulp included) of
    # the fp64 chain, also with tanh.approx's error both ways (FAST 3 reaches 5.6e-4 there, at x = -20)
    x = every_bf16(-20.0, 20.0)
    x = x.to(torch.float16)[x.double() == x.to(torch.float16).double()]
    k = fast4(monkeypatch)
    if tanh is not None:
        monkeypatch.setattr(k, "_tanh", tanh)
    err = (k.pointwise_chain(x, SPEC_CHAIN).double() - torch_chain(x.double(), SPEC_CHAIN)).abs()
    assert err.max().item() <= 2.0 ** -11
