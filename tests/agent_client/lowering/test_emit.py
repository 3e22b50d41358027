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
