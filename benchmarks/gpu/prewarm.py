"""Keep the GPU busy for a few seconds before a measured run, from its own process.

Usage (a CUDA machine, repo root): python3 benchmarks/gpu/prewarm.py [SECONDS]   (default 15)

Why: on the H200 the first specs timed after the machine sat idle came out bimodal (ours and
torch.compile's alike: benchmarks/results/library-h200-r6-20261130T155330Z.json in commit cd266249b, the
first rows of sweep-20261130T164547Z.json in commit ff902dffa); 15 s of bf16 matmuls and copies from a
separate process before the run removed it (library-h200-r6-20261130T155636Z.json in commit cd266249b);
the same load from inside the measuring process did not
(library-h200-r7-20261130T155806Z.json in commit cd266249b).
"""

from __future__ import annotations

import sys
import time


def prewarm(seconds: float) -> int:
    import torch

    if not torch.cuda.is_available():
        return 0
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    big = torch.empty(1 << 28, device="cuda", dtype=torch.uint8)
    rounds = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(8):
            a @ a
            big.clone()
        torch.cuda.synchronize()
        rounds += 1
    return rounds


if __name__ == "__main__":
    s = float(sys.argv[1]) if len(sys.argv) > 1 else 15.0
    print(f"prewarm: {prewarm(s)} rounds in {s:.0f} s")
