"""harness/static_checks.py: each adversarial candidate that can be caught by reading it is, with a reason."""

from __future__ import annotations

import pytest

from harness.backends import get_backend
from harness.static_checks import run_static_checks
from tests.harness.harness_helpers import candidate

TRITON = get_backend("triton")

# candidate file -> a word the rejection reason must contain
STATICALLY_REJECTED = {
    "side_stream": "cuda.Stream",
    "side_thread": "threading",
    "monkeypatch_event": "monkey-patching",
    "lazy_subclass": "subclasses a Tensor",
    "hang_fork": "os.fork",
    "segfault_ctypes": "ctypes",
    "sys_exit": "sys.exit",
    "side_stream_attempt": "cuda.Stream",
    "reuses_reference_output": "importing 'gc'",
    "reference_via_builtins": "the name __builtins__",
    "reference_via_sys_dict": "sys.__dict__",
    "reference_via_subclasses": "__subclasses__",
}
# caught at run time only (they look like ordinary code)
RUNTIME_ONLY = ["calls_reference", "calls_torch_softmax", "caches_output", "aliases_input", "mutates_input",
                "hardcoded_shape", "zeros_near_zero", "precision_downgrade", "memory_blowup", "fake_json_stdout",
                "honest_softmax", "honest_fma", "honest_scale", "oob_write", "switches_after_n_calls",
                "switches_when_timed", "returns_input", "honest_gather", "precision_downgrade_gather",
                "predicts_inputs"]


@pytest.mark.parametrize(("name", "word"), sorted(STATICALLY_REJECTED.items()))
def test_rejected_statically(name, word):
    reasons, syntax_ok = run_static_checks(candidate(name), TRITON)
    assert syntax_ok
    assert any(word in r for r in reasons), reasons


@pytest.mark.parametrize("name", RUNTIME_ONLY)
def test_ordinary_code_passes_static_checks(name):
    assert run_static_checks(candidate(name), TRITON) == ([], True)


@pytest.mark.parametrize(("source", "word"), [
    ("class ModelNew: pass\n", "no @triton.jit"),  # no kernel at all
    ("import triton\n@triton.jit\ndef k(): pass\n", "ModelNew"),  # no ModelNew
    ("import numpy as np\nimport triton\n@triton.jit\ndef k(): pass\nclass ModelNew: pass\n", "numpy"),
    ("import triton\n@triton.jit\ndef k(): pass\nclass ModelNew:\n def f(self):\n  getattr(self, 'a'+'b')\n",
     "getattr"),  # computed attribute names hide forbidden calls
    ("import triton\n@triton.jit\ndef k(): pass\nclass ModelNew:\n p = '/proc/self/fd'\n", "/proc"),
])
def test_small_cases(source, word):
    reasons, _ = run_static_checks(source, TRITON)
    assert any(word in r for r in reasons), reasons


def test_syntax_error_is_a_compile_error():
    reasons, syntax_ok = run_static_checks("def broken(:\n", TRITON)
    assert not syntax_ok and "syntax error at line 1" in reasons[0]


def test_torch_backend_allows_torch_ops_and_numpy():
    src = "import numpy\nclass ModelNew:\n    pass\n"
    assert run_static_checks(src, get_backend("torch")) == ([], True)
