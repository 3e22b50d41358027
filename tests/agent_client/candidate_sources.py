"""Test helper (not a test module): candidate sources for specs/scaled_relu.py, good and broken.

Usage: from tests.agent_client.candidate_sources import good, wrong, compile_error
"""

from __future__ import annotations

_GOOD = '''import torch
import triton
import triton.language as tl

TUNABLES = {{"BLOCK": {block}}}


@triton.jit
def _scaled_relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = tl.where(x > 0, x, 0.0) * {scale}
    tl.store(out_ptr + offs, y, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        grid = lambda META: (triton.cdiv(n, META["BLOCK"]),)
        _scaled_relu_kernel[grid](x, out, n, BLOCK=TUNABLES["BLOCK"])
        return out
'''


def good(block: int = 128) -> str:
    return _GOOD.format(block=block, scale="2.0")


def wrong(block: int = 128) -> str:
    """Forgets the scale: the harness must call it wrong."""
    return _GOOD.format(block=block, scale="1.0")


def compile_error() -> str:
    return good().replace("tl.where(x > 0, x, 0.0)", "tl.no_such_function(x)")


def hangs() -> str:
    """Launches the good kernel, then hangs in forward; writes its process id to $KKB_TEST_PIDFILE first."""
    body = good().replace("import torch\n", "import os\nimport pathlib\nimport time\n\nimport torch\n", 1)
    return body.replace("        return out\n", (
        "        note = os.environ.get('KKB_TEST_PIDFILE')\n"
        "        if note:\n"
        "            pathlib.Path(note).write_text(str(os.getpid()))\n"
        "        while True:\n"
        "            time.sleep(0.2)\n"
        "        return out\n"))
