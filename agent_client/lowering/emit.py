"""A whole candidate from plans: the spec's module (for Model and its helpers), kernels, launches, ModelNew.

Usage: source = candidate_source(spec_source, {shapes: plan}, note)

The candidate keeps the spec's code as the user wrote it, less its input functions, so `ModelNew`
subclasses `Model` and builds the same parameters under the same seed whatever the constructor does
(`super(Model, self)`, submodules, registered buffers, helper classes). Its forward is generated: it picks
the plan traced for the input shapes it is given, allocates the stored values and launches the kernels.
Parameters and buffers are read through their attribute paths at every call, so `.to()` and weight
updates are seen. Launch parameters live in the module-level TUNABLES dict, which the search rewrites.
"""

from __future__ import annotations

import ast
import textwrap

import torch

from agent_client.lowering.errors import LoweringError
from agent_client.lowering.prelude import PRELUDE
from agent_client.lowering.schedule import Plan
from harness.pysource import parse_python

_DROP = {"get_inputs", "get_init_inputs", "get_variants", "get_flops", "VARIANTS", "ATOL", "RTOL", "TOLERANCE",
         "DTYPE"}


def spec_body(spec_source: str) -> str:
    """The spec's code less its input functions and harness conventions."""
    tree = parse_python(spec_source)
    lines = spec_source.splitlines(keepends=True)
    drop = []
    for node in tree.body:
        names = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        if names and all(n in _DROP for n in names):
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            drop.append((start, node.end_lineno))
    for start, end in sorted(drop, reverse=True):
        del lines[start - 1:end]
    return _without_numpy("".join(lines).rstrip() + "\n")


# numpy on Python scalars, as specs use it for constants (np.log(1 / 0.07), np.sqrt(d)), with the same values
# from math: a Triton candidate may not import numpy (it could compute the outputs on the host)
_SCALAR_NUMPY = {
    "pi": "math.pi", "e": "math.e", "inf": "math.inf", "nan": "math.nan", "log": "math.log",
    "log2": "math.log2", "log10": "math.log10", "log1p": "math.log1p", "exp": "math.exp", "expm1": "math.expm1",
    "sqrt": "math.sqrt", "floor": "math.floor", "ceil": "math.ceil", "prod": "math.prod", "sin": "math.sin",
    "cos": "math.cos", "tan": "math.tan", "tanh": "math.tanh", "arctan": "math.atan", "power": "pow",
    "abs": "abs",
}


def _without_numpy(body: str) -> str:
    """`body` with `import numpy as np` replaced by a stand-in holding the scalar functions it uses; a use
    the stand-in cannot serve (an array, np.random) is a LoweringError naming it."""
    tree = parse_python(body)
    aliases, imports = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "numpy":
            raise LoweringError(f"line {node.lineno}: the spec imports from numpy, which a candidate may not "
                                "import; write the constant with math or torch")
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "numpy" for a in node.names):
            if len(node.names) > 1 or node.names[0].name != "numpy" or node.col_offset:
                raise LoweringError(f"line {node.lineno}: this numpy import cannot be kept in a candidate "
                                    "(a candidate may not import numpy)")
            aliases.add(node.names[0].asname or "numpy")
            imports.append(node)
    if not imports:
        return body
    attrs: dict[str, int] = {}
    held = set()  # the alias's Name nodes that an attribute reads through
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            attrs.setdefault(node.attr, node.lineno)
            held.add(id(node.value))
    bare = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in aliases and id(n) not in held]
    missing = sorted(a for a in attrs if a not in _SCALAR_NUMPY)
    if bare or missing:
        what = f"numpy.{missing[0]} (line {attrs[missing[0]]})" if missing else f"numpy itself (line {bare[0].lineno})"
        raise LoweringError(f"the spec's module uses {what}; a candidate may not import numpy, and only numpy's "
                            "scalar functions are replaced by math's")
    lines = body.splitlines(keepends=True)
    for node in sorted(imports, key=lambda n: n.lineno, reverse=True):
        alias = node.names[0].asname or "numpy"
        members = "".join(f"    {a} = {_member(_SCALAR_NUMPY[a])}\n" for a in sorted(attrs)) or "    pass\n"
        stand_in = (f"import math\n\n\nclass {alias}:  # numpy's scalar functions this module uses, from math\n"
                    f"{members}\n\n")
        lines[node.lineno - 1:node.end_lineno] = [stand_in]
    return "".join(lines)


def _member(expr: str) -> str:
    """A class attribute holding `expr`: functions become static methods so `np.log(x)` calls them as is."""
    constant = expr.startswith("math.") and expr.split(".")[1] in ("pi", "e", "inf", "nan")
    return expr if constant else f"staticmethod({expr})"


def _attr_path(path: str) -> str:
    out = "self"
    for part in path.split("."):
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


def _dtype(name: str) -> str:
    return f"torch.{name}"


def _layout_lines(name: str, meta) -> list[str]:
    """Lines that give the plan an input laid out as it was traced: its kernels index it by those strides,
    so another layout of the same shape (a transposed or a contiguous copy) is copied into that one first,
    never read out of place. Dims of size 1 are never indexed; a traced broadcast (stride 0) cannot be made
    from other data, so any other layout is refused."""
    dims = [d for d, n in enumerate(meta.shape) if n != 1]
    if not dims:
        return []
    got = "(" + ", ".join(f"{name}.stride({d})" for d in dims) + ("," if len(dims) == 1 else "") + ")"
    want = tuple(meta.stride[d] for d in dims)
    # one stride() call on the way of every launch; the dims that matter only where it differs
    lines = [(f"if {name}.stride() != {tuple(meta.stride)!r} and {got} != {want!r}:  # the layout the "
             f"kernels index {name} by")]
    if any(meta.stride[d] == 0 for d in dims):
        lines.append(f"    raise RuntimeError('ModelNew was generated for {name} broadcast with strides "
                     f"{tuple(meta.stride)}, not ' + str({name}.stride()))")
    else:
        lines.append(f"    {name} = torch.empty_strided({tuple(meta.shape)!r}, {tuple(meta.stride)!r}, "
                     f"dtype={name}.dtype, device={name}.device).copy_({name})")
    return lines


def _plan_function(pid: int, plan: Plan, graph) -> str:
    body = ["T = TUNABLES"]
    params = []
    for i in range(graph.n_forward_inputs):
        params.append(f"in{i}" if i not in graph.scalar_inputs else f"_arg{i}")
    for gi in sorted((g for g in graph.inputs.values() if g.kind == "input" and g.meta is not None),
                     key=lambda g: g.ref):
        body += _layout_lines(f"in{gi.ref}", gi.meta)
    device = None
    for node, buf in plan.buffers.items():
        gi = graph.inputs.get(getattr(node, "name", None)) if hasattr(node, "op") and node.op == "placeholder" \
            else None
        if gi is None:
            continue
        if gi.kind != "input":
            body.append(f"{buf.name} = {_attr_path(str(gi.ref))}")
        if device is None or gi.kind == "input":
            device = device if (device and device.startswith("in")) else buf.name
    body.append(f"dev = {device}.device" if device else "dev = torch.device('cuda')")
    for node in plan.allocations:
        buf = plan.buffers[node]
        body.append(f"{buf.name} = torch.empty({tuple(buf.meta.shape)!r}, device=dev, "
                    f"dtype={_dtype(buf.meta.dtype)})")
    for k in plan.kernels:
        for tmp, tshape, tdtype in k.temps:
            body.append(f"{tmp} = torch.empty({tuple(tshape)!r}, device=dev, dtype={_dtype(tdtype)})")
        body += k.host
        kwargs = ", ".join(f"{key}={expr}" for key, expr in k.constexprs.items())
        launch = f"{k.name}[{k.grid}]({', '.join(k.args)}{', ' if kwargs else ''}{kwargs})"
        # one of several forms of a kernel group, chosen at run time
        body += [f"if {k.when}:", "    " + launch] if k.when is not None else [launch]
    for path, node in plan.mutations:
        body.append(f"{_attr_path(path)}.copy_({plan.buffers[node].name})")
    results = []
    for o in plan.outputs:
        results.append(plan.buffers[o].name if isinstance(o, torch.fx.Node) else repr(o))
    if graph.output_tuple:
        body.append(f"return ({', '.join(results)}{',' if len(results) == 1 else ''})")
    else:
        body.append(f"return {results[0]}")
    head = f"def _plan{pid}(self, {', '.join(params)}):" if params else f"def _plan{pid}(self):"
    return head + "\n" + textwrap.indent("\n".join(body), "    ") + "\n"


def candidate_source(spec_source: str, plans: list[tuple[tuple, Plan, object]], note: str) -> str:
    """plans: (input shapes key, plan, graph) per traced variant; the first is the default."""
    tunables: dict = {}
    kernels, functions, keys, helpers = [], [], [], []
    for pid, (key, plan, graph) in enumerate(plans):
        for k in plan.kernels:
            helpers += [h for h in k.helpers if h not in helpers]
            kernels.append(f"# {k.note}\n{k.source}")
            tunables.update(k.tunables)
        functions.append(_plan_function(pid, plan, graph))
        keys.append(f"    {key!r}: _plan{pid},")
    header = textwrap.indent(note.strip(), "# ") + "\n"
    first = plans[0][2]  # variants share the structure of their arguments and results
    return (
        f"{header}import torch\nimport triton\nimport triton.language as tl\n\n"
        "# ---- the reference module, as written (ModelNew builds the same parameters) ----\n"
        f"{spec_body(spec_source)}\n"
        "# ---- generated kernels ----\n"
        f"TUNABLES = {tunables!r}\n"
        f"{PRELUDE}\n\n" + "".join(h + "\n\n" for h in helpers)
        + "\n\n".join(kernels) + "\n\n" + "\n\n".join(functions) + "\n\n"
        "_PLANS = {\n" + "\n".join(keys) + "\n}\n"
        + (f"_OUTPUT_SPEC = torch.utils._pytree.treespec_loads({first.output_spec!r})\n" if first.output_spec else "")
        + "\n\n"
        "class ModelNew(Model):\n"
        "    def forward(self, *args):\n"
        + ("        args = tuple(torch.utils._pytree.tree_leaves(list(args)))  # nested arguments\n"
           if first.input_spec else "")
        + "        key = tuple(tuple(a.shape) for a in args if isinstance(a, torch.Tensor))\n"
        "        plan = _PLANS.get(key)\n"
        "        if plan is None:\n"
        "            raise RuntimeError(f'ModelNew was generated for input shapes {list(_PLANS)}, not {key}')\n"
        + ("        return plan(self, *args)\n" if not first.output_spec else
           "        out = plan(self, *args)\n"
           "        return torch.utils._pytree.tree_unflatten(list(out), _OUTPUT_SPEC)\n")
    )
