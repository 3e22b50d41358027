"""Write a session's winners back to the kernel library, so the next session starts from them.

Usage: ids = write_back(kb, config, nodes, spec_info)

A winner passed and beat the baseline (torch.compile; eager when the compile baseline was skipped)
by at least `config.write_back_min_speedup`. Only the best winner of a session is written: its
siblings are variations of one idea and would crowd the library's nearest-kernel search.
"""

from __future__ import annotations

import ast
import datetime as dt
import hashlib
import platform
from pathlib import Path

from agent_client.session.records import Node, SessionConfig
from harness.pysource import parse_python


def spec_signature(spec_path: Path) -> tuple[str, str]:
    """(op family, op signature) of a spec, from agent_client.signature; the spec name if tracing fails."""
    try:
        from agent_client.signature import trace_signature

        sig = trace_signature(Path(spec_path))
        return sig.family or Path(spec_path).stem, sig.text or Path(spec_path).stem
    except Exception:  # noqa: BLE001 - tracing is best effort here: a winner must not be lost to it
        return Path(spec_path).stem, Path(spec_path).stem


def winners(config: SessionConfig, nodes: list[Node]) -> list[Node]:
    ok = [n for n in nodes if n.outcome == "passed" and n.fitness >= config.write_back_min_speedup
          and n.fitness > 0]
    return sorted(ok, key=lambda n: (-n.fitness, n.id))[:1]


def tunables_of(code: str) -> dict:
    """The module-level TUNABLES dict literal of a candidate, as name -> [value]; {} when absent."""
    try:
        tree = parse_python(code)
    except SyntaxError:
        return {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(getattr(t, "id", None) == "TUNABLES" for t in stmt.targets):
            try:
                value = ast.literal_eval(stmt.value)
            except ValueError:
                return {}
            if isinstance(value, dict):
                return {str(k): v if isinstance(v, list) else [v] for k, v in value.items()
                        if isinstance(v, (int, float, str, list))}
    return {}


def kernel_record(config: SessionConfig, node: Node, op_family: str, op_signature: str, target_facts=None):
    """The library record of a winner: one measurement per variant the harness ran, each naming its shapes,
    dtypes and the device that measured it (`target_facts` maps a device that is the target to its id)."""
    from kb_server.schemas import KernelRecord

    v = node.verdict or {}
    spec_name = v.get("spec_name") or Path(config.spec_path).stem
    measurements = _measurements(config, node, spec_name, target_facts)
    accelerators = sorted({m.accelerator for m in measurements})
    basis = "torch.compile" if node.fitness_basis == "compile" else "eager PyTorch (compile baseline skipped)"
    where = v.get("device_name") or config.device
    digest = hashlib.sha256(f"{config.backend}\n{node.code}".encode()).hexdigest()[:16]
    dtypes = sorted({x["dtype"] for m in measurements for x in m.inputs if "dtype" in x})
    return KernelRecord(
        id=f"tuned-{digest}", name=f"{spec_name}-{config.session_id}-{node.id}", op_family=op_family,
        op_signature=op_signature, backend=config.backend, source=node.code,
        description=(f"Found by kkb tune session {config.session_id} (node {node.id}) on {where}: "
                     f"{node.fitness:.3g}x over {basis} for spec {spec_name}."),
        tunables=tunables_of(node.code), dtypes=dtypes, accelerators=accelerators, measurements=measurements,
    )


def _measurements(config: SessionConfig, node: Node, spec_name: str, target_facts) -> list:
    from agent_client.measurements import accelerator_id, measured_from_verdict
    from kb_server.schemas import KernelMeasurement

    v = node.verdict or {}
    common = {"spec": spec_name, "date": dt.date.today().isoformat(), "command": config.command or None,
              "limit_kind": v.get("limit_kind")}
    rows = measured_from_verdict(v)
    if not rows:  # a verdict recorded before verdicts named their shapes: the timed variant alone
        accelerator = config.target if config.device.startswith("cuda") else "cpu-interpreter"
        return [KernelMeasurement(
            accelerator=accelerator, shape="", dtype="", latency_ms=v.get("latency_ms"),
            speedup_vs_eager=v.get("speedup_vs_eager"), speedup_vs_compile=v.get("speedup_vs_compile"),
            fraction_of_limit=v.get("fraction_of_limit"), versions=_versions(), **common)]
    out = []
    for m in rows:
        timed_default = m.variant == "default" and m.latency_ms is not None
        out.append(KernelMeasurement(
            accelerator=accelerator_id(m.device_name, target_facts), shape=m.shape_text(), dtype=m.dtype_text(),
            latency_ms=m.latency_ms, speedup_vs_eager=(m.eager_ms / m.latency_ms) if m.eager_ms and m.latency_ms
            else None, speedup_vs_compile=(m.compile_ms / m.latency_ms) if m.compile_ms and m.latency_ms else None,
            fraction_of_limit=v.get("fraction_of_limit") if timed_default else None,
            versions={k: str(val) for k, val in m.versions.items()}, device_name=m.device_name,
            variant=m.variant, inputs=list(m.inputs), state=list(m.state), correct=m.correct,
            eager_ms=m.eager_ms, compile_ms=m.compile_ms, **common))
    return out


def write_back(kb, config: SessionConfig, nodes: list[Node]) -> list[str]:
    chosen = winners(config, nodes)
    if not chosen:
        return []
    family, signature = spec_signature(Path(config.spec_path))
    try:
        target_facts = kb.accelerator(config.target)
    except Exception:  # noqa: BLE001 - without the target's facts, devices are named by their driver names
        target_facts = None
    return [kb.add_kernel(kernel_record(config, node, family, signature, target_facts)) for node in chosen]


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("torch", "triton"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = "absent"
    return out
