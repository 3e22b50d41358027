"""Render an ExportPlan as one self-contained Python module (torch and triton only).

Usage: text = render_module(plan, "my_op"); Path("my_op.py").write_text(text)

The module holds, in order: a docstring that says how to use it and where the kernel was measured; the
candidate exactly as the harness judged it (between marker lines); the dispatch runtime
(agent_client/shipping/runtime.py, copied); the export's constants (EXPORT_INFO, MIN_SPEEDUP, SPEC_SOURCE,
DISPATCH); the custom op with its fake implementation; `kernel_op` (the function form) and `KernelModel`
(the reference's constructor, its forward through the op).
"""

from __future__ import annotations

import pprint
from pathlib import Path

from agent_client.shipping.plan import CANDIDATE_BEGIN, CANDIDATE_END, FORMAT, ExportPlan, export_info

RUNTIME_PATH = Path(__file__).parent / "runtime.py"


def _runtime_body() -> str:
    """runtime.py without its docstring and `from __future__` line (the module's own come first)."""
    text = RUNTIME_PATH.read_text(encoding="utf-8")
    end = text.index('"""', 3) + 3
    body = text[end:].replace("from __future__ import annotations\n", "")
    return body.strip() + "\n"


def _attr(path: str) -> str:
    out = "self"
    for part in path.split("."):
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


def _lines_where(plan: ExportPlan) -> list[str]:
    out = []
    for e in plan.entries:
        shapes = ", ".join("x".join(map(str, x["shape"])) + f" {x['dtype']}" if "shape" in x else repr(x.get("value"))
                           for x in e["inputs"])
        if not e["correct"]:
            how = "wrong"
        elif e["speedup"] is None:
            how = "checked, not timed"
        else:
            how = f"{e['speedup']:.3g}x over {e['basis']}"
        out.append(f"    {e['variant']}: [{shapes}] init {e['init']} on {e['device_name']}: {how}")
    return out


def _docstring(plan: ExportPlan, module_name: str) -> str:
    names = ", ".join(plan.input_names)
    lines = [
        f"{plan.spec_name} as a PyTorch op: the kernel kernelkb measured, where it wins; the reference elsewhere.",
        "",
        f"Exported by `kkb export-kernel` from {plan.info.get('source', '?')}. Needs torch and triton only.",
        "",
        "Usage:",
        f"    import {module_name}",
        f"    model = {module_name}.KernelModel(*init_args)   # the reference's constructor: the same parameters",
        f"    out = model({names})                  # eager, or inside torch.compile(model, fullgraph=True)",
        f"    out = {module_name}.kernel_op({names}, state=[...], init={module_name}.DEFAULT_INIT)",
        f"    {module_name}.where()                           # where the kernel wins, loses, is untested",
        f"    logging.getLogger({module_name!r}).setLevel(logging.DEBUG)   # why a new shape runs what it runs",
        "",
        f"The op is {plan.op_name} (inference: no backward). `state` is the module's parameters and buffers in",
        "STATE_PATHS order. A call runs the kernel where DISPATCH holds a correct measurement of its constructor",
        "arguments, input and parameter shapes, dtypes and strides on this device (torch.cuda.get_device_name)",
        "whose speedup is at least MIN_SPEEDUP; any other call runs the reference's own forward.",
        "",
        "Measured (variant: input shapes, constructor arguments, device, result):",
        *_lines_where(plan),
        "",
        f"Measure other shapes: kkb bench {module_name}.py --shapes NAME=VALUE[,NAME=VALUE] [--device cuda:0]",
    ]
    return '"""' + "\n".join(lines).replace("\\", "\\\\").replace('"""', "'''") + '\n"""\n'


def _op_code(plan: ExportPlan) -> str:
    kinds = {"Tensor": "torch.Tensor", "int": "int", "float": "float", "bool": "bool", "str": "str"}
    params = ", ".join(f"{n}: {kinds[k]}" for n, k in zip(plan.input_names, plan.input_kinds))
    names = ", ".join(plan.input_names)
    tup = f"({names},)" if len(plan.input_names) == 1 else f"({names})"
    returns = "torch.Tensor" if plan.n_outputs is None else (
        "tuple[" + ", ".join(["torch.Tensor"] * plan.n_outputs) + "]")
    mutates = '("state",)' if plan.mutates_state else "()"
    state = ", ".join(_attr(p) for p in plan.state_paths)
    sep = ", " if names else ""
    return f'''
_DISPATCH = KkbDispatch(Model, ModelNew, EXPORT_INFO["op_name"], DISPATCH, STATE_PATHS, MIN_SPEEDUP,
                        logging.getLogger(__name__))


@torch.library.custom_op(EXPORT_INFO["op_name"], mutates_args={mutates})
def _kkb_op({params}{sep}state: list[torch.Tensor], init: str) -> {returns}:
    return _DISPATCH.run({tup}, state, init)


@_kkb_op.register_fake
def _kkb_op_fake({names}{sep}state, init):
    return _DISPATCH.reference({tup}, state, init)


def kernel_op({names}{sep}*, state, init=DEFAULT_INIT):
    """The op as a function: `state` holds the parameters and buffers in STATE_PATHS order."""
    return _kkb_op({names}{sep}list(state), init)


class KernelModel(Model):
    """The reference's module (same constructor, same parameters), its forward through the op."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._kkb_init = _DISPATCH.register_init(args, kwargs)

    def forward(self{sep}{names}):
        return _kkb_op({names}{sep}[{state}], self._kkb_init)


def where() -> dict:
    """Where the kernel wins, where it loses, where it is untested (from DISPATCH)."""
    return _DISPATCH.where()


def paths_taken() -> dict:
    """How many calls ran the kernel and the reference in this process, and what the last one ran and why."""
    return {{**_DISPATCH.paths_taken, "last": _DISPATCH.last_path, "why": _DISPATCH.last_reason}}
'''


def render_module(plan: ExportPlan, module_name: str) -> str:
    info = export_info(plan)
    constants = (
        "import logging\n\n"
        f"KKB_EXPORT_FORMAT = {FORMAT}\n"
        f"EXPORT_INFO = {pprint.pformat(info, width=108, sort_dicts=True)}\n"
        f"MIN_SPEEDUP = {plan.min_speedup!r}  # the kernel runs where its measured speedup is at least this\n"
        f"STATE_PATHS = {tuple(plan.state_paths)!r}\n"
        f"DEFAULT_INIT = {plan.default_init!r}\n"
        f"SPEC_SOURCE = {plan.spec_source!r}\n"
        f"DISPATCH = {pprint.pformat(list(plan.entries), width=108, sort_dicts=False)}\n"
    )
    candidate = plan.candidate_source if plan.candidate_source.endswith("\n") else plan.candidate_source + "\n"
    return (
        _docstring(plan, module_name)
        + f"\n{CANDIDATE_BEGIN}\n{candidate}{CANDIDATE_END}\n\n"
        + "# ==== kkb: dispatch (agent_client/shipping/runtime.py) ====\n"
        + _runtime_body()
        + "\n\n# ==== kkb: the export ====\n"
        + constants
        + _op_code(plan)
    )
