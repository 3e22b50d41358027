"""The lowering's two exceptions: a graph it cannot emit, and a fused value needed where it is not held.

Usage: raise LoweringError("no lowering for aten.foo"); raise FusionError(node)
"""

from __future__ import annotations


class LoweringError(ValueError):
    """The graph holds something the lowering cannot emit; the message names the op."""


class FusionError(Exception):
    """A computed value was needed where the kernel does not hold it: materialize `node`."""

    def __init__(self, node):
        super().__init__(node.name)
        self.node = node
