"""Measurements as typed records: where a kernel wins, where it loses, where it is untested.

Usage: from agent_client.measurements import measured_from_verdict, where_it_wins
       rows = measured_from_verdict(node.verdict)           # one per variant the harness ran
       rows = measured_from_record(record)                   # a library record's measurements
       where = where_it_wins(rows)                          # {"wins": [...], "loses": [...], "untested": [...]}

A measurement is one variant of a spec on one device: its forward inputs (shape and dtype of each tensor,
the value of each plain argument) and the module's parameters and buffers, whether the kernel was right
there, and, where it was timed, its median against the reference's (eager) and torch.compile's. The speedup
that decides is the one over torch.compile where it was timed, else over eager (the CPU interpreter skips
the compile baseline), as in a session's fitness. Imports only the standard library (a machine without
pydantic runs it: benchmarks/gpu/export_kernel.py).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Measured:
    variant: str  # "default" or a VARIANTS name of the spec (or a shape named to `kkb bench --shapes`)
    spec: str  # spec name
    device_name: str  # as the driver names the device: "NVIDIA H200"; "cpu" for the Triton interpreter
    inputs: tuple  # per forward input: {"shape": [...], "dtype": "float32"} or {"value": 3}
    state: tuple  # parameters and buffers: {"path": "conv.weight", "shape": [...], "dtype": "float32"}
    correct: bool  # checked against the reference at these shapes
    latency_ms: float | None = None  # the kernel's median; None where it was only checked
    eager_ms: float | None = None
    compile_ms: float | None = None
    versions: dict = field(default_factory=dict)  # torch, triton, cuda, python of the process that measured
    source: str = ""  # what measured it: "session S node n0003", "kkb bench --shapes ..."

    @property
    def basis(self) -> str | None:
        """"compile" or "eager": the baseline the speedup is over (None when not timed)."""
        if self.latency_ms is None:
            return None
        return "compile" if self.compile_ms else ("eager" if self.eager_ms else None)

    @property
    def speedup(self) -> float | None:
        base = {"compile": self.compile_ms, "eager": self.eager_ms}.get(self.basis or "")
        return base / self.latency_ms if base and self.latency_ms else None

    @property
    def outcome(self) -> str:
        """"wins" (right and faster than the baseline), "loses" (right and slower, or wrong), "untested"
        (right, not timed)."""
        if not self.correct:
            return "loses"
        if self.speedup is None:
            return "untested"
        return "wins" if self.speedup >= 1.0 else "loses"

    def shape_text(self) -> str:
        return shape_text(self.inputs)

    def dtype_text(self) -> str:
        return dtype_text(self.inputs, self.state)

    def describe(self) -> str:
        """One line for people: variant, shapes, dtype, device, and the speedup or why there is none."""
        if not self.correct:
            how = "wrong"
        elif self.speedup is None:
            how = "checked, not timed"
        else:
            how = f"{self.speedup:.3g}x over {'torch.compile' if self.basis == 'compile' else 'eager'}"
        return f"{self.variant} [{self.shape_text()}] {self.dtype_text()} on {self.device_name}: {how}"

    def to_dict(self) -> dict:
        out = asdict(self)
        out["inputs"], out["state"] = list(self.inputs), list(self.state)
        out.update(basis=self.basis, speedup=self.speedup, outcome=self.outcome)
        return out


def shape_text(inputs) -> str:
    parts = []
    for x in inputs:
        if "shape" in x:
            parts.append("x".join(str(d) for d in x["shape"]) or "scalar")
        else:
            parts.append(repr(x.get("value")))
    return ", ".join(parts)


def dtype_text(inputs, state=()) -> str:
    seen = []
    for x in list(inputs) + list(state):
        if "dtype" in x and x["dtype"] not in seen:
            seen.append(x["dtype"])
    return "/".join(seen) or "-"


def measured_from_verdict(verdict: dict, source: str = "") -> list[Measured]:
    """One Measured per variant a harness Verdict (as a dict) ran; [] for verdicts recorded before them."""
    out = []
    for m in verdict.get("measurements") or []:
        if m.get("error"):
            continue
        out.append(Measured(
            variant=str(m.get("variant", "")), spec=str(verdict.get("spec_name", "")),
            device_name=str(verdict.get("device_name", "")), inputs=tuple(m.get("inputs") or ()),
            state=tuple(m.get("state") or ()), correct=bool(m.get("correct")), latency_ms=m.get("latency_ms"),
            eager_ms=m.get("eager_ms"), compile_ms=m.get("compile_ms"),
            versions=dict(verdict.get("versions") or {}), source=source))
    return out


def measured_from_record(record) -> list[Measured]:
    """The measurements of a library KernelRecord that name their inputs (written back by a session)."""
    out = []
    for m in record.measurements:
        if not m.inputs and not m.state:
            continue
        out.append(Measured(
            variant=m.variant or "default", spec=m.spec, device_name=m.device_name or m.accelerator,
            inputs=tuple(m.inputs), state=tuple(m.state), correct=m.correct is not False,
            latency_ms=m.latency_ms, eager_ms=m.eager_ms, compile_ms=m.compile_ms, versions=dict(m.versions),
            source=m.command or ""))
    return out


def where_it_wins(rows: list[Measured]) -> dict[str, list[str]]:
    """The lines of `describe()` grouped by outcome; "untested" always ends with the shapes never run."""
    out: dict[str, list[str]] = {"wins": [], "loses": [], "untested": []}
    for m in rows:
        out[m.outcome].append(m.describe())
    out["untested"].append("any other shape, dtype or device: not measured (an exported op runs the reference "
                           "there; `kkb bench EXPORTED.py --shapes ...` measures more)")
    return out


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def accelerator_id(device_name: str, target_facts=None) -> str:
    """The library's accelerator id of a device: the target's id when the device is that chip (its id or an
    alias in the device's name, as agent_client/target.py matches them), else the device name in lower case
    with dashes ("nvidia-h100-80gb-hbm3"); "cpu-interpreter" on the CPU."""
    if not device_name or device_name == "cpu":
        return "cpu-interpreter"
    if target_facts is not None:
        keys = {_squash(k) for k in (target_facts.id, *getattr(target_facts, "aliases", ()))}
        if any(len(k) >= 3 and k in _squash(device_name) for k in keys):
            return target_facts.id
    return re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")
