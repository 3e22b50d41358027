"""Source checks run in the parent before a candidate is executed. Each check returns (ok, reason).

Usage: from harness.static_checks import run_static_checks; reasons = run_static_checks(source, backend)

They are a first line only: every runtime check (harness/guard.py) still runs, so a candidate that slips
past these (e.g. through obfuscation) is still caught by what it does.
"""

from __future__ import annotations

import ast
import re

from harness.backends.base import Backend
from harness.pysource import parse_python

Check = tuple[bool, str]

# Modules a candidate may not import: threads/processes escape the timer, the rest reach the harness.
FORBIDDEN_IMPORTS = (
    "threading", "_thread", "concurrent", "multiprocessing", "subprocess", "asyncio", "ctypes", "cffi",
    "socket", "signal", "inspect", "gc", "importlib", "builtins", "harness", "pickle", "marshal",
    "torch.utils._python_dispatch", "torch.overrides", "torch._C",
)
# Dotted names (suffix match) a candidate may not use.
FORBIDDEN_ATTRS = (
    "cuda.Stream", "cuda.stream", "cuda.set_stream", "cuda.ExternalStream", "cuda.StreamContext",
    "os.fork", "os.forkpty", "os.system", "os.popen", "os._exit", "os.write", "os.kill", "os.killpg",
    "os.fdopen", "os.dup", "os.dup2", "os.execv", "os.execve", "os.spawnv", "os.setsid", "os.open",
    "sys.exit", "sys._getframe", "sys.modules", "sys.settrace", "sys.setprofile",
    "torch._C", "_python_dispatch", "TorchDispatchMode", "TorchFunctionMode",
    # introspection: the routes from any object to modules, frames and the reference
    "__dict__", "__subclasses__", "__globals__", "__builtins__", "__code__", "__closure__", "__mro__",
    "__bases__", "__base__", "__getattribute__", "__loader__", "__spec__", "f_back", "f_globals", "f_locals",
    "f_builtins", "gi_frame", "cr_frame", "tb_frame",
)
FORBIDDEN_CALLS = ("eval", "exec", "__import__", "setattr", "delattr", "compile", "exit", "quit", "open",
                   "globals", "vars", "breakpoint", "input")
# Names a candidate may not even mention (an alias, `f = eval` or `__builtins__["eval"]`, is a call later)
FORBIDDEN_NAMES = ("__builtins__", "__import__", "eval", "exec", "globals", "setattr", "delattr",
                   "breakpoint")
# Roots whose attributes a candidate may not assign to (timer / synchronisation monkey-patching).
PATCH_ROOTS = ("torch", "time", "triton", "os", "sys", "harness", "numpy", "np", "tl")


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _where(node: ast.AST) -> str:
    return f"line {getattr(node, 'lineno', '?')}"


def check_defines_modelnew(tree: ast.Module) -> Check:
    ok = any(isinstance(n, ast.ClassDef) and n.name == "ModelNew" for n in tree.body)
    return ok, "" if ok else "the candidate defines no top-level `class ModelNew`"


def check_backend_requirements(source: str, backend: Backend) -> Check:
    for pattern, reason in backend.required:
        if not re.search(pattern, source):
            return False, reason
    return True, ""


def check_imports(tree: ast.Module, backend: Backend) -> Check:
    forbidden = FORBIDDEN_IMPORTS + tuple(backend.forbidden_imports)
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            for bad in forbidden:
                if name == bad or name.startswith(bad + "."):
                    return False, f"{_where(node)}: importing {name!r} is not allowed ({bad})"
    return True, ""


def _attribute_uses(tree: ast.Module):
    """(node, dotted name) of every attribute read, `getattr(obj, "name")` included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            yield node, _dotted(node)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
              and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)):
            yield node, f"{_dotted(node.args[0])}.{node.args[1].value}"


def check_attributes(tree: ast.Module) -> Check:
    for node, dotted in _attribute_uses(tree):
        if dotted:
            for bad in FORBIDDEN_ATTRS:
                if dotted == bad or dotted.endswith("." + bad) or dotted.startswith(bad + "."):
                    return False, (f"{_where(node)}: using {dotted!r} is not allowed (side streams, " \
                                  "processes, exits, introspection and harness internals are off limits)")
    return True, ""


def check_calls(tree: ast.Module) -> Check:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            return False, f"{_where(node)}: calling {node.func.id}() is not allowed in a candidate"
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                and (len(node.args) < 2 or not isinstance(node.args[1], ast.Constant))):
            return False, f"{_where(node)}: getattr with a computed name is not allowed"
    return True, ""


def check_names(tree: ast.Module) -> Check:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in FORBIDDEN_NAMES:
            return False, f"{_where(node)}: the name {node.id} is not allowed in a candidate"
    return True, ""


def check_no_patching(tree: ast.Module) -> Check:
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute):
                dotted = _dotted(target)
                if dotted.split(".")[0] in PATCH_ROOTS:
                    return False, f"{_where(node)}: assigning {dotted} (monkey-patching) is not allowed"
    return True, ""


def check_no_tensor_subclass(tree: ast.Module) -> Check:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                if _dotted(base).endswith("Tensor"):
                    return False, (f"{_where(node)}: class {node.name} subclasses a Tensor; outputs must " \
                                  "be plain torch.Tensor")
    return True, ""


def check_strings(tree: ast.Module) -> Check:
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and ("/proc/" in node.value or "/dev/" in node.value)):
            return False, f"{_where(node)}: paths under /proc or /dev are not allowed"
    return True, ""


def run_static_checks(source: str, backend: Backend) -> tuple[list[str], bool]:
    """Return (reasons, syntax_ok). reasons is empty when every check passes."""
    try:
        tree = parse_python(source)
    except SyntaxError as exc:
        return [f"syntax error at line {exc.lineno}: {exc.msg}"], False
    checks = [
        check_defines_modelnew(tree), check_backend_requirements(source, backend),
        check_imports(tree, backend), check_attributes(tree), check_calls(tree), check_names(tree),
        check_no_patching(tree),
        check_no_tensor_subclass(tree), check_strings(tree),
    ]
    return [reason for ok, reason in checks if not ok], True
