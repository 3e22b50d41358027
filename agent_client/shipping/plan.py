"""What an exported module holds: the candidate, the spec, the op's signature and the dispatch table.

Usage: plan = build_plan(spec_path, candidate_source, measured_rows, info={"source": "session S node n3"})
       text = render_module(plan, "my_op")               # agent_client/shipping/writer.py
       plan = read_plan(Path("my_op.py"))                # back from a written module (kkb bench --shapes)

The op's signature comes from the spec at its default variant, run on the meta device: the kind of each
forward input (Tensor, int, float, bool, str), the output (one tensor or a tuple of tensors), the parameters
and buffers (their attribute paths, in the order the op takes them) and whether the forward writes to them.
The candidate must keep the reference's parameters: its ModelNew builds the same attribute paths as the
spec's Model (the offline provider's candidates subclass Model), or the export is refused.
"""

from __future__ import annotations

import ast
import hashlib
import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from agent_client.measurements import Measured
from harness.pysource import parse_python

FORMAT = 1  # KKB_EXPORT_FORMAT of the modules this version writes


class ExportError(ValueError):
    """The session, record or candidate cannot be exported; the message says which and why."""


@dataclass(frozen=True)
class ExportPlan:
    spec_name: str
    spec_source: str  # the whole spec file (get_inputs included): re-verification builds variants from it
    candidate_source: str  # as the harness judged it
    entries: tuple  # the dispatch table: one dict per measurement (see `entry`)
    state_paths: tuple  # parameters and buffers, in the order the op takes them
    input_kinds: tuple  # per forward input: "Tensor", "int", "float", "bool" or "str"
    input_names: tuple  # the reference forward's argument names (in0, in1... when it takes *args)
    n_outputs: int | None  # None: one tensor; N: a tuple of N tensors
    mutates_state: bool  # the reference writes to a parameter or buffer (BatchNorm's running statistics)
    default_init: str  # the constructor arguments of the default variant, as the dispatch table names them
    min_speedup: float = 1.0  # the kernel runs where its measured speedup is at least this
    info: dict = field(default_factory=dict)  # op_name, source, route, options, candidate_sha256

    @property
    def op_name(self) -> str:
        return self.info["op_name"]


def init_text(args, model_cls) -> str:
    """Constructor arguments as the exported runtime names them (agent_client/shipping/runtime.py)."""
    from agent_client.shipping.runtime import init_key

    return init_key(tuple(args), {}, model_cls)


def entry(m: Measured, init: str) -> dict:
    """One row of the dispatch table (plain literals: it is written into the module as Python)."""
    return {"variant": m.variant, "init": init, "inputs": list(m.inputs), "state": list(m.state),
            "device_name": m.device_name, "correct": m.correct, "speedup": m.speedup, "basis": m.basis,
            "latency_ms": m.latency_ms, "eager_ms": m.eager_ms, "compile_ms": m.compile_ms,
            "versions": dict(m.versions), "source": m.source}


def op_name_for(spec_name: str, candidate_source: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", spec_name.lower()).strip("_")[:40] or "op"
    if slug[0].isdigit():
        slug = "op_" + slug
    digest = hashlib.sha256(candidate_source.encode()).hexdigest()[:8]
    return f"kkb_export::{slug}_{digest}"


def _import(source: str, name: str):
    from harness.spec import import_file

    folder = Path(tempfile.mkdtemp(prefix="kkb_export_"))
    path = folder / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    return import_file(path, "kkb_export_check")


def _forward_names(model_cls, n: int) -> tuple:
    import inspect

    try:
        params = list(inspect.signature(model_cls.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        params = []
    plain = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(plain) == n and len(params) == n and all(p.isidentifier() for p in plain):
        return tuple(plain)
    return tuple(f"in{i}" for i in range(n))


def _kind(value) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return "Tensor"
    for kind in (bool, int, float, str):
        if isinstance(value, kind):
            return kind.__name__
    raise ExportError(f"a forward input of type {type(value).__name__} cannot be an op argument "
                      "(tensors, int, float, bool and str can)")


def _run_reference(spec, variant):
    """(inputs, module, output, paths written) of the reference at a variant: on meta, else on the CPU."""
    import torch

    from harness.spec import argument_list, make_init_inputs

    last = None
    for device in ("meta", "cpu"):
        try:
            with torch.device(device), torch.no_grad():
                torch.manual_seed(0)
                inputs = argument_list(spec.module.get_inputs(**variant.kwargs), "get_inputs")
                module = spec.module.Model(*make_init_inputs(spec, variant))
                if spec.dtype:
                    dtype = getattr(torch, spec.dtype)
                    module = module.to(dtype)
                    inputs = [x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                              for x in inputs]
                named = list(module.named_parameters(remove_duplicate=False)) + list(
                    module.named_buffers(remove_duplicate=False))
                before = {p: t._version for p, t in named}
                out = module(*inputs)
                written = [p for p, t in named if t._version != before[p]]
            return inputs, module, out, written
        except Exception as exc:  # noqa: BLE001 - the next device, then the error names the spec
            last = exc
    raise ExportError(f"spec {spec.path}: its reference does not run on meta or the CPU: "
                      f"{type(last).__name__}: {last}")


def signature_of(spec_path: Path, candidate_source: str) -> dict:
    """The op's signature fields of ExportPlan, from the spec's default variant and the candidate."""
    import torch

    from harness.spec import load_spec, make_init_inputs

    spec = load_spec(spec_path)
    variant = spec.variants[0]
    inputs, module, out, written = _run_reference(spec, variant)
    if isinstance(out, torch.Tensor):
        n_outputs = None
    elif isinstance(out, (tuple, list)) and out and all(isinstance(t, torch.Tensor) for t in out):
        n_outputs = len(out)
    else:
        raise ExportError(f"spec {spec.path}: the reference returns {type(out).__name__}; an op returns a tensor "
                          "or a tuple of tensors")
    paths = [p for p, t in list(module.named_parameters(remove_duplicate=False))
             + list(module.named_buffers(remove_duplicate=False)) if t is not None]
    candidate = _import(candidate_source, f"candidate_{spec.name}")
    if not hasattr(candidate, "ModelNew") or not hasattr(candidate, "Model"):
        raise ExportError("the candidate defines no ModelNew(Model): an exported op needs the spec's Model in the "
                          "candidate and ModelNew subclassing it (as the offline provider writes them)")
    with torch.device("meta"):
        try:
            new = candidate.ModelNew(*make_init_inputs(spec, variant))
        except Exception as exc:
            raise ExportError(f"the candidate's ModelNew cannot be built from the spec's init inputs: {exc}") from exc
    new_paths = [p for p, t in list(new.named_parameters(remove_duplicate=False))
                 + list(new.named_buffers(remove_duplicate=False)) if t is not None]
    if new_paths != paths:
        raise ExportError(f"the candidate's ModelNew has the parameters and buffers {new_paths}, the spec's Model "
                          f"{paths}: an exported op passes the reference's tensors to the kernel, so they must match")
    init = make_init_inputs(spec, variant)
    return {"spec_name": spec.name, "spec_source": spec.source, "state_paths": tuple(paths),
            "input_kinds": tuple(_kind(x) for x in inputs),
            "input_names": _forward_names(spec.module.Model, len(inputs)), "n_outputs": n_outputs,
            "mutates_state": bool(written), "default_init": init_text(init, spec.module.Model)}


def init_for_variant(spec_path: Path, variant_name: str) -> str:
    from harness.spec import load_spec, make_init_inputs

    spec = load_spec(spec_path)
    for v in spec.variants:
        if v.name == variant_name:
            return init_text(make_init_inputs(spec, v), spec.module.Model)
    raise ExportError(f"spec {spec.path} has no variant {variant_name!r} (it has {[v.name for v in spec.variants]})")


def build_plan(spec_path: Path, candidate_source: str, rows: list[Measured], info: dict,
               min_speedup: float = 1.0) -> ExportPlan:
    """An ExportPlan for a candidate judged on `spec_path`, its dispatch table from `rows`."""
    sig = signature_of(Path(spec_path), candidate_source)
    entries = tuple(entry(m, init_for_variant(Path(spec_path), m.variant)) for m in rows)
    info = {"op_name": op_name_for(sig["spec_name"], candidate_source),
            "candidate_sha256": hashlib.sha256(candidate_source.encode()).hexdigest()[:16], **info}
    return ExportPlan(candidate_source=candidate_source, entries=entries, min_speedup=min_speedup, info=info, **sig)


SIGNATURE_FIELDS = ("spec_name", "state_paths", "input_kinds", "input_names", "n_outputs", "mutates_state",
                    "default_init")


def export_info(plan: ExportPlan) -> dict:
    """EXPORT_INFO of a module: the plan's info and its signature fields (the sources and table apart)."""
    out = dict(plan.info)
    for name in SIGNATURE_FIELDS:
        value = getattr(plan, name)
        out[name] = list(value) if isinstance(value, tuple) else value
    return out


CANDIDATE_BEGIN = "# ==== kkb: the candidate, as the harness judged it ===="
CANDIDATE_END = "# ==== kkb: end of the candidate ===="


def read_plan(path: Path) -> ExportPlan:
    """The ExportPlan of a module written by `kkb export-kernel` (ExportError names what is missing)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if CANDIDATE_BEGIN not in text or "KKB_EXPORT_FORMAT" not in text:
        raise ExportError(f"{path}: not a module written by kkb export-kernel (no KKB_EXPORT_FORMAT)")
    start = text.index(CANDIDATE_BEGIN) + len(CANDIDATE_BEGIN) + 1
    candidate = text[start:text.index(CANDIDATE_END)]
    values = {}
    for node in parse_python(text).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in ("KKB_EXPORT_FORMAT", "EXPORT_INFO", "MIN_SPEEDUP", "SPEC_SOURCE", "DISPATCH"):
                values[name] = ast.literal_eval(node.value)
    if values.get("KKB_EXPORT_FORMAT") != FORMAT:
        raise ExportError(f"{path}: export format {values.get('KKB_EXPORT_FORMAT')!r}, this kernelkb reads {FORMAT}")
    info = dict(values["EXPORT_INFO"])
    fields = {k: info.pop(k) for k in SIGNATURE_FIELDS}
    for k in ("state_paths", "input_kinds", "input_names"):
        fields[k] = tuple(fields[k])
    return ExportPlan(spec_source=values["SPEC_SOURCE"], candidate_source=candidate,
                      entries=tuple(values["DISPATCH"]), min_speedup=float(values["MIN_SPEEDUP"]), info=info,
                      **fields)


def with_entries(plan: ExportPlan, new_entries: list[dict], candidate_source: str | None = None) -> ExportPlan:
    return replace(plan, entries=tuple(plan.entries) + tuple(new_entries),
                   candidate_source=candidate_source if candidate_source is not None else plan.candidate_source)
