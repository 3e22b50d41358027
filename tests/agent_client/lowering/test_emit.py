"""emit.spec_body: the spec's module as a candidate may hold it (numpy's scalar functions come from math)."""

import math

import pytest

from agent_client.lowering.emit import spec_body
from agent_client.lowering.errors import LoweringError
from harness.backends import get_backend
from harness.static_checks import run_static_checks

HEAD = "import numpy as np\nimport torch\nimport torch.nn as nn\n\n\n"
TAIL = ("\n\ndef get_inputs():\n    return [torch.randn(4, 4)]\n\n\ndef get_init_inputs():\n"
        "    return [np.random.rand()]\n")


def _spec(init_line: str) -> str:
    return (HEAD + "class Model(nn.Module):\n    def __init__(self, k=1.0):\n        super(Model, self).__init__()\n"
            f"        {init_line}\n\n    def forward(self, x):\n        return x * self.scale\n" + TAIL)


def test_scalar_numpy_comes_from_math_and_keeps_the_values():
    body = spec_body(_spec("self.scale = float(np.log2(8) * np.sqrt(np.pi) + np.log(1 / 0.07))"))
    assert "import numpy" not in body and "np.random" not in body  # the input functions are dropped
    reasons, _ = run_static_checks(body + "\nclass ModelNew(Model):\n    pass\n", get_backend("triton"))
    assert not [r for r in reasons if "numpy" in r], reasons
    scope: dict = {}
    exec(compile(body, "<body>", "exec"), scope)  # noqa: S102 - our own generated code, in a test
    assert scope["Model"]().scale == pytest.approx(3.0 * math.sqrt(math.pi) + math.log(1 / 0.07), rel=1e-15)


@pytest.mark.parametrize(("line", "named"), [
    ("self.scale = float(np.random.rand())", "numpy.random"),
    ("self.scale = float(np.array([1.0, 2.0]).sum())", "numpy.array"),
    ("self.lib = np", "numpy itself"),
])
def test_numpy_beyond_scalars_is_declined_by_name(line, named):
    with pytest.raises(LoweringError, match=named):
        spec_body(_spec(line))


def test_from_numpy_imports_are_declined():
    with pytest.raises(LoweringError, match="imports from numpy"):
        spec_body(_spec("self.scale = 2.0").replace("import numpy as np", "from numpy import log"))


def test_a_spec_without_numpy_is_kept_as_written():
    spec = _spec("self.scale = 2.0").replace("import numpy as np\n", "").replace("np.random.rand()", "1.0")
    assert spec_body(spec) == spec.split("\n\ndef get_inputs")[0].rstrip() + "\n"


STRIDED = ("import torch\nfrom torch import nn\n\n\nclass Model(nn.Module):\n    def forward(self, a, b):\n"
           "        return torch.relu(a) + b * 2.0\n\n\ndef get_inputs():\n"
           "    return [torch.randn(64, 32).t(), torch.randn(32, 128)[:, ::2]]\n\n\n"
           "def get_init_inputs():\n    return []\n")


def test_a_plan_reads_any_layout_of_its_shapes(tmp_path):
    """A plan's kernels index its inputs by the strides they were traced with (here a transposed and a strided
    view); the same shapes in another layout are copied into those first, never read out of place."""
    import torch

    from agent_client.lowering.lower import lower_spec
    from tests.agent_client.lowering.launches import load_candidate

    path = tmp_path / "strided.py"
    path.write_text(STRIDED)
    source = lower_spec(path, "cpu").source
    assert "in0.stride() != (1, 32) and (in0.stride(0), in0.stride(1)) != (1, 32)" in source
    assert "in1.stride() != (128, 2)" in source
    module = load_candidate(source, tmp_path, "strided_candidate")
    ref, new = module.Model(), module.ModelNew()
    a, b = torch.randn(64, 32).t(), torch.randn(32, 128)[:, ::2]
    for x, y in [(a, b), (a.contiguous(), b.contiguous()), (a.contiguous().t().contiguous().t(), b.clone())]:
        torch.testing.assert_close(new(x, y), ref(x, y), rtol=0, atol=0)


def test_a_traced_broadcast_refuses_other_layouts(tmp_path):
    """An input traced as a broadcast (stride 0) cannot be rebuilt from other data: another layout is refused
    by name rather than read as if it were one row."""
    import torch

    from agent_client.lowering.lower import lower_spec
    from tests.agent_client.lowering.launches import load_candidate

    path = tmp_path / "broadcast.py"
    path.write_text(STRIDED.replace("torch.randn(64, 32).t(), torch.randn(32, 128)[:, ::2]",
                                    "torch.randn(1, 64).expand(32, 64), torch.randn(32, 64)"))
    module = load_candidate(lower_spec(path, "cpu").source, tmp_path, "broadcast_candidate")
    new, ref = module.ModelNew(), module.Model()
    x, y = torch.randn(1, 64).expand(32, 64), torch.randn(32, 64)
    torch.testing.assert_close(new(x, y), ref(x, y))
    with pytest.raises(RuntimeError, match="broadcast with strides"):
        new(x.contiguous(), y)
