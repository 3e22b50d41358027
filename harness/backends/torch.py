"""The `torch` backend: a candidate written with PyTorch ops (eager or torch.compile); any op allowed.

The harness also times the reference itself, eager and under torch.compile, as every result's baselines.
"""

from __future__ import annotations

from harness.backends import register
from harness.backends.base import Backend

register(Backend(
    name="torch",
    description="PyTorch ops (eager or torch.compile); the baselines every result is compared with",
    allowed_ops=None,
    forbidden_imports=(),
))
