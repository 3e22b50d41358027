"""Judge an exported module at shapes a user names, and add what the harness says to its dispatch table.

Usage: results = reverify(Path("my_op.py"), [{"batch_size": 64}], device="cuda:0")
       kkb bench my_op.py --shapes batch_size=64 [--shapes batch_size=8,height=16] [--device cuda:0]

For each set of shapes: the module's spec at those shapes (agent_client/shipping/variants.py), the kernel
for them, one harness verdict, and its measurements appended to DISPATCH (the module is rewritten in place,
so calls at those shapes run the kernel if it wins there, and the reference if not). With no --shapes, the
module is judged at the shapes it was exported with, on this device: that is how a table measured on one
GPU gains entries for another.

The kernel for new shapes: a library kernel (or any candidate without per-shape plans) serves every shape
as it is, and is judged as it is. A kernel from the general lowering is specialised to the shapes it was
traced at (`_PLANS`, one plan per input shapes); for new input shapes the spec is lowered again at them,
with the route's options, and the new plan (its kernels renamed, at the lowering's default launch
parameters) joins the module's candidate. The plans measured before are left as they were, so their
measurements stay true. The merged candidate is what the harness judges; it is kept only when it is right.
A new constructor configuration at input shapes the candidate already has a plan for is judged with that
plan (the lowering keys plans by input shapes alone): where the plan does not fit, the verdict says wrong
and the table sends those calls to the reference.
"""

from __future__ import annotations

import ast
import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from agent_client.measurements import measured_from_verdict
from agent_client.shipping.plan import ExportPlan, entry, init_for_variant, read_plan, with_entries
from agent_client.shipping.variants import shapes_text, spec_at
from agent_client.shipping.writer import render_module
from harness.pysource import parse_python


@dataclass(frozen=True)
class Reverified:
    shapes: str  # as named: "batch_size=64" (or "as exported")
    status: str  # the verdict's status
    reasons: list  # the verdict's reasons when it did not pass
    entries: list  # the rows added to DISPATCH
    relowered: bool  # a new plan of the general lowering joined the candidate

    def to_dict(self) -> dict:
        return {"shapes": self.shapes, "status": self.status, "reasons": self.reasons, "entries": self.entries,
                "relowered": self.relowered}


def _plans_node(tree: ast.Module, name: str) -> ast.Assign | None:
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            return stmt
    return None


def _input_key(spec_file: Path) -> tuple:
    from harness.measured import describe_variant
    from harness.spec import load_spec

    spec = load_spec(spec_file)
    desc = describe_variant(spec, spec.variants[0])
    return tuple(tuple(x["shape"]) for x in desc["inputs"] if "shape" in x)


def _segment(lines: list[str], node: ast.AST) -> str:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
    if start > 0 and lines[start - 1].lstrip().startswith("#"):
        start -= 1  # the kernel's note
    return "".join(lines[start:node.end_lineno])


def merge_plan(candidate: str, new_source: str) -> str:
    """`candidate` with the default plan of `new_source` (a lowering of other shapes) added as its next plan."""
    from agent_client.offline.tunables import get_tunables, set_tunables

    tree = parse_python(candidate)
    plans = _plans_node(tree, "_PLANS")
    n = 1 + max((int(m) for m in re.findall(r"^def _plan(\d+)\(", candidate, re.MULTILINE)), default=-1)
    renamed = re.sub(r"\b_p0k(?=\d)", f"_p{n}k", new_source)
    renamed = re.sub(r"\b_plan0\b", f"_plan{n}", renamed)
    new_tree = parse_python(renamed)
    new_lines = renamed.splitlines(keepends=True)
    pieces = [_segment(new_lines, s) for s in new_tree.body if isinstance(s, ast.FunctionDef)
              and (s.name == f"_plan{n}" or s.name.startswith(f"_p{n}k"))]
    new_plans = _plans_node(new_tree, "_PLANS")
    key = next(ast.literal_eval(k) for k, v in zip(new_plans.value.keys, new_plans.value.values)
               if isinstance(v, ast.Name) and v.id == f"_plan{n}")
    old = {ast.literal_eval(k): v.id for k, v in zip(plans.value.keys, plans.value.values)}
    table = "_PLANS = {\n" + "".join(f"    {k!r}: {v},\n" for k, v in {**old, key: f"_plan{n}"}.items()) + "}\n"
    lines = candidate.splitlines(keepends=True)
    merged = ("".join(lines[:plans.lineno - 1]) + "\n\n".join(p.rstrip("\n") + "\n" for p in pieces) + "\n\n"
              + table + "".join(lines[plans.end_lineno:]))
    tunables = {k: v for k, v in get_tunables(renamed).items() if k.startswith(f"_p{n}k")}
    return set_tunables(merged, tunables)


def candidate_for(plan: ExportPlan, spec_file: Path, device: str) -> tuple[str, bool]:
    """(the candidate to judge at the spec's shapes, whether a new plan was lowered for them)."""
    tree = parse_python(plan.candidate_source)
    plans = _plans_node(tree, "_PLANS")
    if plans is None or not isinstance(plans.value, ast.Dict):
        return plan.candidate_source, False  # no per-shape plans: the kernel serves any shape as it is
    keys = {ast.literal_eval(k) for k in plans.value.keys}
    if _input_key(spec_file) in keys:
        return plan.candidate_source, False
    from agent_client.lowering.lower import lower_spec

    target = "cpu" if device.startswith("cpu") else "cuda"
    lowered = lower_spec(spec_file, target, dict(plan.info.get("options") or {}))
    return merge_plan(plan.candidate_source, lowered.source), True


def reverify_one(plan: ExportPlan, overrides: dict, device: str, config) -> tuple[ExportPlan, Reverified]:
    from harness import evaluate

    text = shapes_text(overrides)
    folder = Path(tempfile.mkdtemp(prefix="kkb_reverify_"))
    spec_file = folder / f"{plan.spec_name}.py"  # the spec's own name: verdicts and entries name it
    spec_file.write_text(spec_at(plan.spec_source, overrides), encoding="utf-8")
    candidate, relowered = candidate_for(plan, spec_file, device)
    verdict = evaluate(spec_file, candidate, backend=plan.info.get("backend") or "triton", device=device,
                       config=config).to_dict()
    source = f"kkb bench --shapes {text}" if overrides else "kkb bench (as exported)"
    init = init_for_variant(spec_file, "default")
    rows = [replace(m, variant=f"shapes {text}" if overrides else m.variant)
            for m in measured_from_verdict(verdict, source=source)]
    entries = [entry(m, init) for m in rows]  # none when the harness stopped before running it
    passed = verdict["status"] == "passed"
    new_plan = with_entries(plan, entries, candidate if (passed and relowered) else None)
    return new_plan, Reverified(text, verdict["status"], list(verdict.get("reasons") or []), entries,
                                relowered and passed)


def reverify(module_path: Path, shapes: list[dict], device: str, config=None, write: bool = True
             ) -> list[Reverified]:
    """Judge the module at each set of shapes ([{}]: as exported), add the rows, rewrite the module."""
    from harness import EvalConfig

    module_path = Path(module_path)
    plan = read_plan(module_path)
    config = config or EvalConfig()
    results = []
    for overrides in shapes or [{}]:
        plan, result = reverify_one(plan, overrides, device, config)
        results.append(result)
    if write:
        module_path.write_text(render_module(plan, module_path.stem), encoding="utf-8")
    return results
