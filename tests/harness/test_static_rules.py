"""harness/static_checks.py rule by rule: every forbidden import, attribute, call, name and patch root is
rejected with a reason that names it, in each spelling the checker claims to see.

The expected lists are written out here on purpose: deleting a rule from the checker's tuples makes its case
fail, and a rule added to a tuple is covered at once (each case list is the union of both).
"""

from __future__ import annotations

import pytest

from harness import static_checks as sc
from harness.backends import get_backend
from harness.static_checks import run_static_checks

TRITON = get_backend("triton")
PRELUDE = ("import torch\nimport triton\n\n\n@triton.jit\ndef k(x_ptr):\n    pass\n\n\n"
           "class ModelNew:\n    pass\n\n\n")

EXPECTED_IMPORTS = (
    "threading", "_thread", "concurrent", "multiprocessing", "subprocess", "asyncio", "ctypes", "cffi",
    "socket", "signal", "inspect", "gc", "importlib", "builtins", "harness", "pickle", "marshal",
    "torch.utils._python_dispatch", "torch.overrides", "torch._C",
)
EXPECTED_ATTRS = (
    "cuda.Stream", "cuda.stream", "cuda.set_stream", "cuda.ExternalStream", "cuda.StreamContext",
    "os.fork", "os.forkpty", "os.system", "os.popen", "os._exit", "os.write", "os.kill", "os.killpg",
    "os.fdopen", "os.dup", "os.dup2", "os.execv", "os.execve", "os.spawnv", "os.setsid", "os.open",
    "sys.exit", "sys._getframe", "sys.modules", "sys.settrace", "sys.setprofile",
    "torch._C", "_python_dispatch", "TorchDispatchMode", "TorchFunctionMode",
    "__dict__", "__subclasses__", "__globals__", "__builtins__", "__code__", "__closure__", "__mro__",
    "__bases__", "__base__", "__getattribute__", "__loader__", "__spec__", "f_back", "f_globals", "f_locals",
    "f_builtins", "gi_frame", "cr_frame", "tb_frame",
)
EXPECTED_CALLS = ("eval", "exec", "__import__", "setattr", "delattr", "compile", "exit", "quit", "open",
                  "globals", "vars", "breakpoint", "input")
EXPECTED_NAMES = ("__builtins__", "__import__", "eval", "exec", "globals", "setattr", "delattr", "breakpoint")
EXPECTED_PATCH_ROOTS = ("torch", "time", "triton", "os", "sys", "harness", "numpy", "np", "tl")


def _union(expected, actual):
    return sorted(set(expected) | set(actual))


def _reasons(statement: str, backend=TRITON) -> list[str]:
    reasons, syntax_ok = run_static_checks(PRELUDE + statement + "\n", backend)
    assert syntax_ok, statement
    return reasons


def test_the_prelude_alone_passes():
    assert _reasons("") == []


def _import_forms(module: str) -> list[str]:
    forms = [f"import {module}", f"import {module}.sub as alias", f"from {module} import thing",
             f"from {module}.sub import thing", f"def f():\n    import {module}"]
    if "." in module:
        parent, last = module.rsplit(".", 1)
        forms.append(f"from {parent} import {last}")
    return forms


@pytest.mark.parametrize("module", _union(EXPECTED_IMPORTS, sc.FORBIDDEN_IMPORTS))
def test_forbidden_import(module):
    for statement in _import_forms(module):
        assert any(f"({module})" in r and "importing" in r for r in _reasons(statement)), statement


def _attribute_forms(attr: str) -> list[str]:
    head, _, last = attr.rpartition(".")
    owner = f"lib.{head}" if head else "lib"
    return [f"value = lib.{attr}", f"value = lib.{attr}()", f"value = lib.{attr}.more", f"value = {attr}.more",
            f"value = (lib).{attr}", f'value = getattr({owner}, "{last}")', f"def f(self):\n    return self.{attr}"]


@pytest.mark.parametrize("attr", _union(EXPECTED_ATTRS, sc.FORBIDDEN_ATTRS))
def test_forbidden_attribute(attr):
    for statement in _attribute_forms(attr):
        assert any("using" in r and attr in r and "not allowed" in r for r in _reasons(statement)), statement


@pytest.mark.parametrize("name", _union(EXPECTED_CALLS, sc.FORBIDDEN_CALLS))
def test_forbidden_call(name):
    for statement in (f"{name}('1')", f"def f():\n    return {name}('1', 2)"):
        assert any(f"calling {name}()" in r for r in _reasons(statement)), statement


@pytest.mark.parametrize("name", _union(EXPECTED_NAMES, sc.FORBIDDEN_NAMES))
def test_forbidden_name(name):
    for statement in (f"alias = {name}", f"value = {name}['x']", f"value = [{name}][0]"):
        assert any(f"the name {name} is not allowed" in r for r in _reasons(statement)), statement


@pytest.mark.parametrize("root", _union(EXPECTED_PATCH_ROOTS, sc.PATCH_ROOTS))
def test_monkey_patching(root):
    for statement in (f"{root}.thing = None", f"{root}.thing.inner = None", f"{root}.counter += 1",
                      f"{root}.thing: int = 1", f"a = {root}.thing = None"):
        assert any(f"assigning {root}.thing" in r or f"assigning {root}.counter" in r
                   for r in _reasons(statement)), statement


@pytest.mark.parametrize("statement", ["class Lazy(torch.Tensor):\n    pass", "class Lazy(Tensor):\n    pass",
                                       "class Lazy(object, torch.Tensor):\n    pass"])
def test_tensor_subclass(statement):
    assert any("subclasses a Tensor" in r for r in _reasons(statement))


@pytest.mark.parametrize("path", ["/proc/self/maps", "/dev/shm/result", "x/proc/1"])
def test_paths_under_proc_and_dev(path):
    assert any("/proc or /dev" in r for r in _reasons(f"where = {path!r}"))


@pytest.mark.parametrize("module", get_backend("triton").forbidden_imports)
def test_backend_forbidden_imports(module):
    assert any(f"({module})" in r for r in _reasons(f"import {module}"))
    assert _reasons(f"import {module}", get_backend("torch")) == []  # the torch backend may use numpy


@pytest.mark.parametrize("source", [
    "class ModelNew: pass\n",  # no @triton.jit
    "import triton\n\n@triton.jit\ndef k(): pass\n",  # no ModelNew
    "import triton\n\n@triton.jit\ndef k(): pass\n\ndef f():\n    class ModelNew: pass\n",  # not top level
])
def test_structure(source):
    reasons, _ = run_static_checks(source, TRITON)
    assert len(reasons) == 1 and ("ModelNew" in reasons[0] or "@triton.jit" in reasons[0]), reasons


@pytest.mark.parametrize("statement", [
    "import gcd_tools",  # a prefix of a forbidden module is not that module
    "import signals_extra",
    "from threadingx import pool",
    "value = lib.cuda.Streamer",  # a longer attribute name is not the forbidden one
    "value = lib.myos.fork",
    "value = lib.f_backend",
    "value = self.__class__.__name__",
    "torch.cuda.synchronize()",
    'weight = getattr(self, "weight")',
    "def forward(self, input):\n    return input",  # `input` as a variable is fine; only calling it is not
    "evaluate = 1\nevaluate_all(evaluate)",
    "self_time = 1",
    "x.thing = None",  # assigning attributes of our own objects
    "where = 'proc/self'",
])
def test_near_misses_pass(statement):
    assert _reasons(statement) == [], statement


@pytest.mark.parametrize(("statement", "word"), [
    ("import gc", "importing 'gc'"),
    ("value = lib.os.fork", "using 'lib.os.fork'"),
    ('value = getattr(lib, "__dict__")', "using 'lib.__dict__'"),
    ("eval('1')", "calling eval()"),
    ("alias = eval", "the name eval"),
    ("value = getattr(lib, 'a' + 'b')", "getattr with a computed name"),
    ("torch.thing = None", "assigning torch.thing"),
    ("class Lazy(torch.Tensor):\n    pass", "class Lazy subclasses a Tensor"),
    ("where = '/proc/self/maps'", "/proc or /dev"),
])
def test_reasons_name_the_line(statement, word):
    """A reason starts with the line of the offending statement (the next prompt points the model at it)."""
    line = PRELUDE.count("\n") + 1
    assert any(r.startswith(f"line {line}: ") and word in r for r in _reasons(statement)), _reasons(statement)
