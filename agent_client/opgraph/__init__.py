"""The op graph: what the spec front end traces from any KernelBench-format file (see trace.py)."""

from agent_client.opgraph.graph import GraphInput, OpGraph, TensorMeta
from agent_client.opgraph.trace import TraceError, trace_spec

__all__ = ["GraphInput", "OpGraph", "TensorMeta", "TraceError", "trace_spec"]
