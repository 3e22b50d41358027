"""The op graph of a spec: ATen calls over the forward's inputs, parameters, buffers and constants.

Usage: graph = trace_spec("spec.py"); graph.calls() -> [(op name, output meta), ...]; graph.text

One representation read by every later step: the offline lowering walks `graph.gm` (a torch.fx graph of
ATen ops after decomposition, no mutations but the final copies into buffers), prompts read `query()`,
and library records read `text`. Placeholders are described by `inputs`: a forward input (by position), a
parameter or buffer (by attribute path, e.g. "conv.weight"), or a constant tensor held by the module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.fx


@dataclass(frozen=True)
class TensorMeta:
    shape: tuple[int, ...]
    dtype: str  # torch dtype name without the prefix: "float32", "int64", "bool"
    stride: tuple[int, ...]

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def is_float(self) -> bool:
        return self.dtype in {"float32", "float16", "bfloat16", "float64"}

    @staticmethod
    def of(t: torch.Tensor) -> TensorMeta:
        return TensorMeta(tuple(int(s) for s in t.shape), str(t.dtype).removeprefix("torch."),
                          tuple(int(s) for s in t.stride()))


@dataclass(frozen=True)
class GraphInput:
    kind: str  # "input" | "param" | "buffer" | "constant"
    ref: int | str  # the forward input's position, or the attribute path on the module ("conv.weight")
    meta: TensorMeta


@dataclass
class OpGraph:
    gm: torch.fx.GraphModule  # its output node returns the forward's results, then the buffer updates
    inputs: dict[str, GraphInput]  # placeholder name -> what it holds
    n_outputs: int  # how many of the output node's values the forward returns
    output_tuple: bool  # the forward returns a tuple/list (else one tensor)
    mutation_targets: list[str] = field(default_factory=list)  # attribute paths of buffers updated
    scalar_inputs: dict[int, object] = field(default_factory=dict)  # non-tensor forward args, baked in
    n_forward_inputs: int = 0  # forward arguments, nested ones counted by their leaves
    input_spec: str | None = None  # pytree spec (treespec_dumps) of nested forward arguments, else None
    output_spec: str | None = None  # pytree spec of a dict or nested result (the graph returns its leaves)

    def _results(self) -> list:
        out = next(n for n in self.gm.graph.nodes if n.op == "output")
        return list(out.args[0])

    @property
    def outputs(self) -> list:
        """fx nodes (or Python values) the forward returns, in order."""
        return self._results()[:self.n_outputs]

    @property
    def mutations(self) -> list[tuple[str, torch.fx.Node]]:
        """(attribute path, new value) of each buffer the forward updates (BatchNorm's statistics)."""
        return list(zip(self.mutation_targets, self._results()[self.n_outputs:]))

    def call_nodes(self) -> list[torch.fx.Node]:
        return [n for n in self.gm.graph.nodes if n.op == "call_function"]

    def calls(self) -> list[str]:
        """ATen op names in order, e.g. ["aten.convolution", "aten.relu"]."""
        return [op_name(n) for n in self.call_nodes() if op_name(n) != "getitem"]

    @property
    def text(self) -> str:
        """A one-line signature: the ops and the forward's input shapes."""
        shapes = ", ".join(f"{list(g.meta.shape)}:{g.meta.dtype}" for g in self.inputs.values()
                           if g.kind == "input")
        ops = " ".join(dict.fromkeys(c.removeprefix("aten.") for c in self.calls()))
        return f"({shapes}) -> {ops}"

    def query(self) -> str:
        """Words for retrieving passages and library kernels about this graph."""
        return " ".join(dict.fromkeys(c.removeprefix("aten.").strip("_") for c in self.calls()))


def op_name(node: torch.fx.Node) -> str:
    """'aten.add' for aten.add.Tensor; 'getitem' for tuple indexing."""
    target = node.target
    if getattr(target, "__name__", "") == "getitem":
        return "getitem"
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        return f"aten.{packet.__name__}"
    return str(target)


def meta_of(node) -> TensorMeta | tuple | None:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    if isinstance(val, torch.Tensor):
        return TensorMeta.of(val)
    if isinstance(val, (tuple, list)):
        return tuple(TensorMeta.of(v) if isinstance(v, torch.Tensor) else None for v in val)
    return None
