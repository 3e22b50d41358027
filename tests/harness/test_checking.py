"""harness/checking.py piece by piece, on CPU tensors: the tolerance, the bf16 yardstick of the precision check,
the poisoning of the reference's output and the late-write check of one guarded forward."""

from __future__ import annotations

import pytest
import torch

from harness import checking, guard
from harness.backends import get_backend
from harness.compare import relative_error
from harness.config import tolerance_for
from harness.spec import build_model, load_spec
from tests.harness.harness_helpers import SPECS


def test_tolerance_from_the_spec_else_from_the_reference_output():
    """The spec's own TOLERANCE, else the table entry of the reference output's first tensor, else (a reference
    that returns no tensor) float32's entry."""
    assert checking.tolerance(load_spec(SPECS / "fp32_loose.py"), torch.ones(2)) == (2e-2, 2e-2)
    table = load_spec(SPECS / "tiny_softmax.py")  # no TOLERANCE
    half = torch.ones(2, dtype=torch.float16)
    assert checking.tolerance(table, half) == tolerance_for("float16") != tolerance_for("float32")
    assert checking.tolerance(table, (3, torch.ones(1, dtype=torch.float64))) == tolerance_for("float64")
    assert checking.tolerance(table, 3.0) == checking.tolerance(table, [2, None]) == tolerance_for("float32")


def test_a_less_precise_floating_input_sets_the_tolerance():
    """An fp32 output made from a bf16 input (a Llama RMSNorm over a bf16 hidden state, an fp32 weight) carries
    bf16's rounding: bf16's entry. Integer inputs and more precise ones change nothing; a spec's own wins."""
    table = load_spec(SPECS / "tiny_softmax.py")
    out, bf16, index = torch.ones(2), torch.ones(2, dtype=torch.bfloat16), torch.arange(2)
    assert checking.tolerance(table, out, [bf16, index]) == tolerance_for("bfloat16") != tolerance_for("float32")
    assert checking.tolerance(table, out, [torch.ones(2), index, 0.5]) == tolerance_for("float32")
    assert checking.tolerance(table, out.double(), [out]) == tolerance_for("float32")
    assert checking.tolerance(table, index, [bf16]) == tolerance_for("int64")  # an exact output stays exact
    assert checking.tolerance(load_spec(SPECS / "fp32_loose.py"), out, [bf16]) == (2e-2, 2e-2)


def _rounded(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).to(x.dtype)


def test_bf16_rounding_error_rounds_inputs_and_parameters_then_computes_in_fp32():
    """The yardstick is the reference computed in fp32 on bf16-rounded inputs and parameters: rounding, not bf16
    arithmetic."""
    spec = load_spec(SPECS / "fp32_loose.py")
    inputs = [torch.rand(256, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    ref = spec.module.Model()(*inputs)
    x, y, z = map(_rounded, inputs)
    expected = relative_error(x * y + z, ref)
    got = checking._bf16_rounding_error(spec, spec.variants[0], inputs, ref, "cpu", 0)
    assert expected > 0 and got == pytest.approx(expected, rel=1e-9)

    spec = load_spec(SPECS / "scaled_linear.py")  # a parameter: rounded too
    variant = spec.variants[0]
    (x,) = inputs = [torch.randn(5, 64, generator=torch.Generator().manual_seed(7))]
    model = build_model(spec.module.Model, spec, variant, 11, "cpu")
    ref = model(x)
    expected = relative_error(_rounded(x) * _rounded(model.weight.detach()) * 0.5, ref)
    got = checking._bf16_rounding_error(spec, variant, inputs, ref, "cpu", 11)
    assert got == pytest.approx(expected, rel=1e-9) and got > relative_error(_rounded(x) * model.weight * 0.5, ref)


def test_poison_fills_floating_outputs_with_nan_and_leaves_integers():
    """The reference's output is poisoned before it is freed: a candidate that finds that memory reads NaN."""
    out, index = torch.ones(3), torch.arange(3)
    checking._poison((out, [index]))
    assert torch.isnan(out).all() and index.tolist() == [0, 1, 2]
    checking._poison(None)  # nothing to poison


class _Clock:
    """A stand-in for harness.timing.Clock whose synchronize() runs `landing` (work that finishes late)."""

    def __init__(self, landing=None):
        self.landing = landing

    def synchronize(self):
        if self.landing:
            self.landing()

    def tampered(self):
        return []


@pytest.mark.parametrize("late", [True, False], ids=["late-write", "settled"])
def test_a_write_that_lands_during_the_sync_is_rejected(monkeypatch, late):
    """One guarded forward on a CUDA device, simulated on CPU tensors: the output read right after forward
    must equal the output after the synchronisation (work left on a side stream changes it in between)."""
    monkeypatch.setattr(torch.cuda, "current_stream", lambda dev: "default")
    monkeypatch.setattr(torch.cuda, "default_stream", lambda dev: "default")
    monkeypatch.setattr(guard.StreamTracker, "used", [])
    out = torch.zeros(4)
    clock = _Clock((lambda: out.fill_(1.0)) if late else None)
    got, reasons, ops = checking._run_candidate(lambda x: out, [torch.ones(4)], get_backend("torch"), "cuda:0",
                                                clock, guard.Digest(12345))
    assert got is out and ops == {}
    if late:
        assert len(reasons) == 1 and "output 0 changed after forward returned" in reasons[0], reasons
    else:
        assert reasons == []


def test_parameters_come_from_the_secret_and_the_variant(monkeypatch):
    """check_variant builds the reference and the candidate under one seed per (run secret, variant): a new run
    gets new parameters, each variant its own, and never the seed of a trial's inputs."""
    from harness.config import EvalConfig
    from harness.profile import derive_seed

    seeds: list[int] = []

    class Recorder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            seeds.append(torch.initial_seed())  # build_model seeds torch right before the constructor

        def forward(self, x):
            return torch.softmax(x, dim=-1)

    spec = load_spec(SPECS / "tiny_softmax.py")
    config = EvalConfig.for_cpu_tests()
    runs = {}
    for secret in (1, 2, 1):
        for variant in spec.variants:
            seeds.clear()
            wrong, cheats, _ = checking.check_variant(spec, Recorder, variant, get_backend("torch"), "cpu", config,
                                                      secret, _Clock())
            assert wrong == [] and cheats == [] and len(seeds) == 1
            runs.setdefault((secret, variant.name), set()).add(seeds[0])
    assert all(len(s) == 1 for s in runs.values())  # the same secret and variant: the same parameters
    per_run = [s.pop() for s in runs.values()]
    assert len(set(per_run)) == len(per_run) == 2 * len(spec.variants)
    trial_seeds = {derive_seed(secret, v.name, t) for secret in (1, 2) for v in spec.variants
                   for t in range(config.trials)}
    assert not trial_seeds & set(per_run)


def _check(spec_path, forward, **config):
    """check_variant of a torch-backend candidate whose forward is `forward`, on the spec's first variant."""
    from harness.config import EvalConfig

    class Candidate(torch.nn.Module):
        def forward(self, *inputs):
            return forward(*inputs)

    spec = load_spec(spec_path)
    return checking.check_variant(spec, Candidate, spec.variants[0], get_backend("torch"), "cpu",
                                  EvalConfig.for_cpu_tests(**config), 5, _Clock())


def test_near_zero_reference_an_offset_inside_atol_fails_the_strict_relative_check():
    """On a reference near zero (x * 1e-6) an output shifted by 3e-6 passes atol=1e-4 but is wrong by 300%: the
    strict relative error catches it, the error after removing the mean does not (the shift is a mean)."""
    wrong, cheats, diag = _check(SPECS / "near_zero.py", lambda x: x * 1e-6 + 3e-6)
    assert cheats == [] and len(wrong) == 1 and "the strict check applies" in wrong[0], wrong
    assert diag["strict_rel_err"] > 1.0 and diag["strict_centered_err"] < 0.05, diag
    assert any("near zero" in w for w in diag["spec_warnings"])


def _near_constant(tmp_path):
    """A spec whose reference is near a constant (1 + x * 1e-6), and a candidate that returns its mean."""
    path = tmp_path / "near_constant.py"
    path.write_text("import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        return 1.0 + x * 1e-6\n\n\n"
                    "def get_inputs():\n    return [torch.randn(256)]\n\n\ndef get_init_inputs():\n    return []\n")

    def mean_only(x):
        y = 1.0 + x * 1e-6
        return torch.full_like(y, float(y.double().mean()))

    return path, mean_only


def test_near_constant_reference_a_constant_output_fails_the_centered_check(tmp_path):
    """On a reference near a constant its mean, as a constant output, passes the tolerance and the plain relative
    error; the error after removing the mean catches it."""
    wrong, cheats, diag = _check(*_near_constant(tmp_path))
    assert cheats == [] and len(wrong) == 1 and "the strict check applies" in wrong[0], wrong
    assert diag["strict_rel_err"] < 0.05 < diag["strict_centered_err"], diag
    assert any("near constant" in w for w in diag["spec_warnings"])


def test_a_candidate_wrong_by_the_tolerance_gets_no_strict_check():
    """The strict check runs on trial 0 only when the tolerance passed: a plainly wrong output has one reason."""
    wrong, cheats, diag = _check(SPECS / "near_zero.py", lambda x: x * 1e-6 + 1.0)
    assert cheats == [] and len(wrong) == 1 and "strict" not in wrong[0], wrong
    assert "spec_warnings" not in diag and "strict_rel_err" not in diag


@pytest.mark.parametrize(("spec", "forward", "key"), [
    ("near_zero", lambda x: x * 1e-6 + 3e-6, "strict_rel_err"),
    ("near_constant", None, "strict_centered_err"),
])
def test_an_error_equal_to_the_strict_bound_passes(tmp_path, spec, forward, key):
    """The strict check's bound is inclusive, as its reason says ("must be <="): an error exactly at it is not
    wrong."""
    path, forward = _near_constant(tmp_path) if spec == "near_constant" else (SPECS / f"{spec}.py", forward)
    wrong, _, diag = _check(path, forward)
    assert wrong and diag[key] > 0.05
    wrong, _, again = _check(path, forward, degenerate_strict_rel=diag[key])
    assert again[key] == diag[key] and wrong == [], wrong


def test_the_precision_check_reports_both_errors():
    """On an fp32 spec the check records the candidate's relative error beside the bf16 rounding error it is
    judged against; an output computed in bf16 is rejected as a downgrade."""
    wrong, cheats, diag = _check(SPECS / "fp32_loose.py", lambda x, y, z: x * y + z)
    assert wrong == cheats == [] and diag["rel_err"] == 0.0 < diag["bf16_rounding_rel_err"], diag
    bf16 = torch.bfloat16
    wrong, cheats, diag = _check(SPECS / "fp32_loose.py", lambda x, y, z: (x.to(bf16) * y.to(bf16) + z.to(bf16)).float())
    assert wrong == [] and len(cheats) == 1 and "precision downgrade" in cheats[0], (wrong, cheats)
    assert diag["rel_err"] > checking.DOWNGRADE_RATIO * diag["bf16_rounding_rel_err"] > 0, diag


def test_a_slightly_imprecise_fp32_output_is_no_downgrade():
    """An error above the 1e-5 floor but well under a quarter of bf16's rounding error is an fp32 computation's."""
    wrong, cheats, diag = _check(SPECS / "fp32_loose.py", lambda x, y, z: (x * y + z) * (1 + 1e-4))
    assert wrong == cheats == [], (wrong, cheats)
    assert 1e-5 < diag["rel_err"] < checking.DOWNGRADE_RATIO * diag["bf16_rounding_rel_err"], diag


def test_no_downgrade_check_where_bf16_rounds_nothing(tmp_path):
    """Inputs that bf16 holds exactly (small integers) give a rounding error of 0: the check has no yardstick
    and stays off, whatever the candidate's (tolerated) error."""
    path = tmp_path / "exact_in_bf16.py"
    path.write_text("import torch\nfrom torch import nn\n\nTOLERANCE = 2e-2\n\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x, y, z):\n        return x * y + z\n\n\n"
                    "def get_inputs():\n    return [torch.randint(1, 8, (64,)).float() for _ in range(3)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    wrong, cheats, diag = _check(path, lambda x, y, z: (x * y + z) * (1 + 1e-3))
    assert wrong == cheats == [] and diag["bf16_rounding_rel_err"] == 0.0 < diag["rel_err"], (wrong, cheats, diag)


def test_an_error_equal_to_the_downgrade_bound_passes(monkeypatch):
    """The downgrade bound is strict: a candidate that computes exactly the yardstick (fp32 on bf16-rounded
    inputs) has an error equal to it, which is no downgrade with DOWNGRADE_RATIO = 1."""
    monkeypatch.setattr(checking, "DOWNGRADE_RATIO", 1.0)
    wrong, cheats, diag = _check(SPECS / "fp32_loose.py", lambda x, y, z: _rounded(x) * _rounded(y) + _rounded(z))
    assert diag["rel_err"] == diag["bf16_rounding_rel_err"] > 1e-5, diag
    assert wrong == cheats == [], (wrong, cheats)


def test_a_wrong_output_that_changes_is_not_called_cached():
    """Right on the first trial, wrong on the second with an output that changed (by half): wrong, not a cached
    result; "did not change" means bit for bit."""
    first = []

    def forward(x):
        if first:
            return first[0] * 1.5
        first.append(torch.softmax(x, dim=-1))
        return first[0].clone()

    wrong, cheats, _ = _check(SPECS / "tiny_softmax.py", forward)
    assert cheats == [] and len(wrong) == 1 and "trial 1" in wrong[0], (wrong, cheats)


def test_an_output_cached_across_trials_is_caught_when_the_reference_moves_only_a_little(tmp_path):
    """A reference that moves by a fraction of a percent between trials (10 + x / 100): an output that stays
    the same, bit for bit, is a cached result, not a wrong one."""
    path = tmp_path / "offset.py"
    path.write_text("import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        return 10.0 + x * 0.01\n\n\n"
                    "def get_inputs():\n    return [torch.randn(64)]\n\n\ndef get_init_inputs():\n    return []\n")
    first = []

    def forward(x):
        if not first:
            first.append(10.0 + x * 0.01)
        return first[0].clone()

    wrong, cheats, _ = _check(path, forward)
    assert len(cheats) == 1 and "the output did not change when the inputs changed" in cheats[0], cheats
    assert len(wrong) == 1 and "trial 1" in wrong[0], wrong


def test_every_reference_output_is_poisoned_once_compared(tmp_path):
    """After the check, each trial's reference output is NaN: memory a candidate might find again holds no
    answer."""
    path = tmp_path / "double.py"
    path.write_text("import torch\nfrom torch import nn\n\nSEEN = []\n\n\nclass Model(nn.Module):\n"
                    "    def forward(self, x):\n        y = x * 2.0\n        SEEN.append((self, y))\n        return y\n\n\n"
                    "def get_inputs():\n    return [torch.randn(16)]\n\n\ndef get_init_inputs():\n    return []\n")
    wrong, cheats, _ = _check(path, lambda x: x * 2.0)
    assert wrong == cheats == []
    spec = load_spec(path)  # the module _check loaded: specs are imported once per path
    reference = spec.module.SEEN[0][0]  # built first; the bf16 yardstick's copy is another instance
    outs = [y for model, y in spec.module.SEEN if model is reference]
    assert len(outs) == 2 and all(torch.isnan(y).all() for y in outs)


@pytest.mark.parametrize("check_variants", [True, False])
def test_check_candidate_checks_every_variant_or_the_first(check_variants):
    from harness.config import EvalConfig

    class Softmax(torch.nn.Module):
        def forward(self, x):
            return torch.softmax(x, dim=-1)

    spec = load_spec(SPECS / "tiny_softmax.py")
    wrong, cheats, diag = checking.check_candidate(spec, Softmax, get_backend("torch"), "cpu",
                                                   EvalConfig.for_cpu_tests(check_variants=check_variants), 5,
                                                   _Clock())
    assert wrong == cheats == []
    assert list(diag) == ([v.name for v in spec.variants] if check_variants else [spec.variants[0].name])


def test_check_candidate_stops_at_the_first_failing_variant():
    from harness.config import EvalConfig

    class Off(torch.nn.Module):
        def forward(self, x):
            return torch.softmax(x, dim=-1) + 1.0

    spec = load_spec(SPECS / "tiny_softmax.py")
    wrong, cheats, diag = checking.check_candidate(spec, Off, get_backend("torch"), "cpu", EvalConfig.for_cpu_tests(),
                                                   5, _Clock())
    first = spec.variants[0].name
    assert cheats == [] and list(diag) == [first] and wrong and all(w.startswith(f"variant {first!r}") for w in wrong)


def _group_norm_mean(x):
    """The zero-by-algebra spec computed in another order: the same value, other rounding noise."""
    y = x * 3.0 + 1.0
    g = y.reshape(y.shape[0], 4, -1)
    mu = g.sum(-1, keepdim=True) / g.shape[-1]
    var = ((g - mu) ** 2).sum(-1, keepdim=True) / g.shape[-1]
    return ((g - mu) * torch.rsqrt(var + 1e-5)).sum(dim=(1, 2)) / g[0].numel()


def test_a_reference_of_rounding_noise_is_matched_against_float64():
    """A reference zero by algebra is fp32 rounding noise, which another summation order misses by more than
    the strict bound; against the float64 reference both are noise of the same size, so the candidate passes,
    and so does zeros (the right value)."""
    spec = SPECS / "zero_by_algebra.py"
    wrong, cheats, diag = _check(spec, _group_norm_mean)
    assert wrong == cheats == [], (wrong, cheats)
    assert diag["strict_rel_err"] > 0.05 and diag["spec_warnings"], diag
    assert 0 < diag["float64_cand_err"] <= checking.NOISE_RATIO * diag["float64_ref_err"] < 1e-5, diag
    wrong, cheats, _ = _check(spec, lambda x: torch.zeros(x.shape[0]))
    assert wrong == cheats == [], (wrong, cheats)


def test_a_value_that_is_not_there_fails_the_noise_check():
    """Inside the tolerance but far outside the reference's noise: a constant 1e-6 on a reference of zero."""
    wrong, cheats, diag = _check(SPECS / "zero_by_algebra.py", lambda x: torch.full((x.shape[0],), 1e-6))
    assert cheats == [] and len(wrong) == 1 and "is rounding noise" in wrong[0], wrong
    assert diag["float64_cand_err"] > checking.NOISE_RATIO * diag["float64_ref_err"], diag


def test_an_accurate_near_zero_reference_keeps_the_strict_check(monkeypatch):
    """Where the fp32 reference matches float64 (x * 1e-6 is exact to rounding) the noise rule does not apply;
    where float64 cannot run, the strict check stands too."""
    wrong, _, diag = _check(SPECS / "near_zero.py", lambda x: x * 1e-6 + 3e-6)
    assert len(wrong) == 1 and "the strict check applies" in wrong[0] and "float64_ref_err" not in diag
    monkeypatch.setattr(checking, "_float64_reference", lambda *a: None)
    wrong, _, diag = _check(SPECS / "zero_by_algebra.py", _group_norm_mean)
    assert len(wrong) == 1 and "the strict check applies" in wrong[0] and "float64_ref_err" not in diag


def test_a_mismatch_where_a_step_meets_rounding_is_excused_and_one_elsewhere_is_not():
    """x * 3 > 0.9 against x > 0.3: at fp32(0.3) the two land on either side of the step. The float64 reference
    moves there when the input moves by STEP_ULPS ulps, so the verdict passes and says how many it excused; the
    same candidate wrong at one element far from the step fails."""
    spec = SPECS / "step_after_rounding.py"
    wrong, cheats, diag = _check(spec, lambda x: torch.where(x > 0.3, 1.0, -1.0))
    assert wrong == cheats == [], (wrong, cheats)
    assert diag["excused"] and all("a step meets rounding" in e for e in diag["excused"]), diag
    assert all(t.get("mismatches_at_steps", 0) >= 1 for t in diag["trials"]), diag

    def wrong_far_from_the_step(x):
        y = torch.where(x > 0.3, 1.0, -1.0)
        y[50] = -y[50]
        return y

    wrong, cheats, diag = _check(spec, wrong_far_from_the_step)
    assert cheats == [] and wrong and "excused" not in diag, (wrong, diag)


def test_a_16_bit_reference_rounding_an_intermediate_is_excused_where_the_output_is_nearer_float64():
    """(x + 1000) - 1000 in bf16: the reference loses x at 1.5 (every 97th element), a candidate computing in
    fp32 keeps it. Within the tolerance of the float64 reference and nearer to it than the reference at every
    mismatched element: excused, and the diagnostics say so. The same candidate off by 0.1 at one of those
    elements is within tolerance of neither and fails."""
    spec = SPECS / "sixteen_bit_rounding.py"

    def in_fp32(x):
        return ((x.float() + 1000.0) - 1000.0).to(x.dtype)

    wrong, cheats, diag = _check(spec, in_fp32)
    assert wrong == cheats == [], (wrong, cheats)
    assert diag["excused"] and all("nearer to it than the reference" in e for e in diag["excused"]), diag
    assert all(t.get("mismatches_nearer_truth", 0) >= 50 for t in diag["trials"]), diag

    def off_at_one(x):
        y = in_fp32(x)
        y[97] += 0.1
        return y

    wrong, cheats, diag = _check(spec, off_at_one)
    assert cheats == [] and wrong and "excused" not in diag, (wrong, diag)



def test_an_fp32_reference_rounding_an_intermediate_is_excused_the_same_way(tmp_path):
    """(x + 1e8) - 1e8 in fp32 (fp32 holds 1e8 + x to a multiple of 8): a candidate computing in float64 passes,
    the same candidate off by 1e-3 at one mismatched element fails."""
    spec = tmp_path / "fp32_rounding.py"
    spec.write_text((SPECS / "sixteen_bit_rounding.py").read_text().replace('DTYPE = "bfloat16"', 'DTYPE = "float32"')
                    .replace("1000.0", "1e8").replace("* 1e-3", "* 1e-6"))

    def in_fp64(x):
        return ((x.double() + 1e8) - 1e8).to(x.dtype)

    wrong, cheats, diag = _check(spec, in_fp64)
    assert wrong == cheats == [] and diag["excused"], (wrong, cheats, diag)

    def off_at_one(x):
        y = in_fp64(x)
        y[97] += 1e-3
        return y

    wrong, cheats, diag = _check(spec, off_at_one)
    assert cheats == [] and wrong and "excused" not in diag, (wrong, diag)
