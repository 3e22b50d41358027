"""What every kernel generator shares: the Kernel record, launch-parameter tunables, evaluation helpers.

Usage: from agent_client.lowering.kernels.common import Kernel, tune, finish
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_client.lowering.writer import FusionError, KernelWriter

INT32_MAX = 2**31 - 1


@dataclass
class Kernel:
    name: str
    source: str
    args: list[str]  # Python variables of the buffers it takes, in order
    grid: str  # Python expression of the launch grid (may read T, the tunables)
    constexprs: dict[str, str]  # keyword -> Python expression at launch
    tunables: dict = field(default_factory=dict)  # name -> default
    space: dict = field(default_factory=dict)  # name -> allowed values
    kind: str = ""
    note: str = ""  # what the kernel computes, for the candidate's comments
    temps: list = field(default_factory=list)  # (python name, shape, dtype name) allocated before launch
    host: list = field(default_factory=list)  # Python lines the forward runs before the launch (a packed weight)
    helpers: list = field(default_factory=list)  # source blocks (jit functions it calls) a candidate holds once


def pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def pow2_range(lo: int, hi: int) -> list[int]:
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return out or [lo]


def signature(w: KernelWriter, constexprs: list[str]) -> str:
    params = list(w.args) + [f"{c}: tl.constexpr" for c in constexprs]
    return f"@triton.jit\ndef {w.name}({', '.join(params)}):\n"


def finish(w: KernelWriter, constexprs: list[str]) -> str:
    return signature(w, constexprs) + "\n".join(w.lines) + "\n"


def index_type(w: KernelWriter, numel: int, var: str) -> None:
    if numel > INT32_MAX or any(b.meta.numel > INT32_MAX for b in w.buffers.values()):
        w.emit(f"{var} = {var}.to(tl.int64)")


def loadable(buffers: dict, outputs: list) -> dict:
    """What a kernel may load: every stored value but its own outputs (which it computes)."""
    return {n: b for n, b in buffers.items() if n not in outputs}


def evaluate(w: KernelWriter, node, idx, culprit=None, cond=None):
    """w.value, naming the value being computed when a FusionError passes through."""
    try:
        return w.value(node, idx, cond)
    except FusionError as exc:
        if getattr(exc, "culprit", None) is None:
            exc.culprit = culprit if culprit is not None else node
        raise


def tune(name: str, key: str, default, allowed) -> tuple[str, dict, dict]:
    full = f"{name}_{key}"
    allowed = sorted(set(allowed) | {default})
    return f'T["{full}"]', {full: default}, {full: allowed}
