"""Pointwise kernels: one lane per element of the stored values (same element count).

Usage: k = pointwise_kernel("k0", outputs, buffers, "cuda")
"""

from __future__ import annotations

import math

from agent_client.lowering.index import Index, delinearize
from agent_client.lowering.kernels.common import (
    Kernel,
    evaluate,
    finish,
    index_type,
    loadable,
    pow2,
    pow2_range,
    tune,
)
from agent_client.lowering.writer import KernelWriter, shape


# ---- pointwise -----------------------------------------------------------------------------------------
def pointwise_kernel(name: str, outputs: list, buffers: dict, target: str) -> Kernel:
    numel = math.prod(shape(outputs[0]))
    w = KernelWriter(loadable(buffers, outputs), name)
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)")
    index_type(w, numel, "xi")
    w.emit(f"xmask = xi < {numel}")
    w.mask = "xmask"
    xi = Index.var("xi", numel)
    for node in outputs:
        idx = delinearize(xi, shape(node))
        code, _ = evaluate(w, node, idx)
        w.store(buffers[node], idx, code, "xmask")
    cap = pow2(numel)
    default = min(cap, 1 << 16 if target == "cpu" else 1024)  # the interpreter pays per program
    xb, t1, s1 = tune(name, "XBLOCK", default, [b for b in pow2_range(64, 8192) if b <= max(cap, 64)])
    nw, t2, s2 = tune(name, "num_warps", 4, [1, 2, 4, 8])
    return Kernel(name, finish(w, ["XBLOCK"]), list(w.args), f"(triton.cdiv({numel}, {xb}),)",
                  {"XBLOCK": xb, "num_warps": nw}, {**t1, **t2}, {**s1, **s2}, "pointwise",
                  f"pointwise over {numel} elements -> {', '.join(n.name for n in outputs)}")
