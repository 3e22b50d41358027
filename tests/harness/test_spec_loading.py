"""harness/spec.py: KernelBench-format specs, our optional conventions, and clear errors."""

from __future__ import annotations

import pytest
import torch

from harness.compare import degenerate_reasons
from harness.config import tolerance_for
from harness.spec import SpecError, build_model, load_spec, make_inputs
from tests.harness.harness_helpers import REPO, SPECS

EXAMPLES = sorted((REPO / "examples" / "specs").glob("*.py"))


def test_variants_default_first_then_declared():
    spec = load_spec(SPECS / "tiny_softmax.py")
    assert [v.name for v in spec.variants] == ["default", "odd", "wide"]
    assert spec.variants[0].time and not spec.variants[1].time
    assert spec.variants[1].kwargs == {"rows": 3, "cols": 37}
    x = make_inputs(spec, spec.variants[1], seed=5, device="cpu")[0]
    assert x.shape == (3, 37)


def test_same_seed_same_inputs_and_parameters():
    spec = load_spec(SPECS / "scaled_linear.py")
    v = spec.variants[0]
    a, b = make_inputs(spec, v, 7, "cpu")[0], make_inputs(spec, v, 7, "cpu")[0]
    c = make_inputs(spec, v, 8, "cpu")[0]
    assert torch.equal(a, b) and not torch.equal(a, c)
    m1, m2 = build_model(spec.module.Model, spec, v, 3, "cpu"), build_model(spec.module.Model, spec, v, 3, "cpu")
    assert torch.equal(m1.weight, m2.weight)
    assert m1.training  # modules stay in their default (training) mode


def test_tolerance_override_and_table():
    spec = load_spec(SPECS / "fp32_loose.py")
    assert (spec.atol, spec.rtol) == (2e-2, 2e-2)
    assert load_spec(SPECS / "tiny_softmax.py").atol is None
    assert tolerance_for("torch.float32") == (1e-4, 1e-4)
    assert tolerance_for("bfloat16") == (1e-2, 1e-2)


@pytest.mark.parametrize(("body", "message"), [
    ("x = 1\n", "missing"),  # nothing of the KernelBench format
    # a variant that is not a dict
    (("import torch\nclass Model(torch.nn.Module): pass\ndef get_inputs(): return []\n"
      "def get_init_inputs(): return []\nVARIANTS = [3]\n"), r"VARIANTS\[0\]"),
    ("raise RuntimeError('boom')\n", "importing it failed"),  # a spec that cannot be imported
    (("import torch\nclass Model(torch.nn.Module): pass\ndef get_inputs(): return []\n"
      "def get_init_inputs(): return []\nget_flops = 12\n"), "get_flops must be a function"),
])
def test_bad_specs_name_the_file(tmp_path, body, message):
    path = tmp_path / "bad_spec.py"
    path.write_text(body)
    with pytest.raises(SpecError, match=message) as info:
        load_spec(path)
    assert "bad_spec.py" in str(info.value)


def test_missing_file():
    with pytest.raises(SpecError, match="no such file"):
        load_spec(SPECS / "nope.py")


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_specs_run_and_are_not_degenerate(path):
    spec = load_spec(path)
    assert len(spec.variants) >= 2, "each example spec declares extra variants"
    variant = spec.variants[1]  # a small one: the default sizes are for the GPU
    model = build_model(spec.module.Model, spec, variant, 0, "cpu")
    with torch.no_grad():
        out = model(*make_inputs(spec, variant, 0, "cpu"))
    atol, rtol = (spec.atol, spec.rtol) if spec.atol is not None else tolerance_for(str(out.dtype))
    assert degenerate_reasons(out, atol, rtol) == [], f"{path.name}: zeros or a constant would pass"


def test_at_least_eight_examples():
    assert len(EXAMPLES) >= 8


SLOW_IMPORT_SPEC = """import time

import torch
from torch import nn

time.sleep(0.4)  # a spec whose import takes a while (KernelBench files that build tables at import)


class Model(nn.Module):
    def forward(self, x):
        return x * 2


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
"""


def test_concurrent_loads_never_see_a_half_built_spec(tmp_path):
    # eight threads load one spec at once: each waits for the first import to finish rather than seeing
    # the module before its Model exists (the transient "missing ['Model', ...]" error)
    import threading

    path = tmp_path / "slow_spec.py"
    path.write_text(SLOW_IMPORT_SPEC)
    results: list = []
    start = threading.Barrier(8)

    def load() -> None:
        start.wait()
        try:
            results.append(load_spec(path))
        except SpecError as exc:
            results.append(exc)

    threads = [threading.Thread(target=load) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    errors = [r for r in results if isinstance(r, Exception)]
    assert errors == [] and len(results) == 8
    assert len({id(r.module) for r in results}) == 1  # imported once, the same module for every loader
