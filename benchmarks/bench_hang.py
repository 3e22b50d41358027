"""Time to a verdict for a candidate that launches an honest kernel and then hangs (issue bar: within 90 s).

Runs `kkb bench SPEC CANDIDATE --device cpu` with its default options (torch.compile baseline included, no
--timeout) from a cold baseline cache, several times, and records the whole command's wall time, the limit the
verdict names and the exit status. Run it on an otherwise idle machine: the figure is the harness's, not the
machine's load.

Usage: python benchmarks/bench_hang.py [--runs 3] [--out PATH]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import write_results

REPO = Path(__file__).resolve().parents[1]

SPEC = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(8, 64)]


def get_init_inputs():
    return []
'''

CANDIDATE = '''import time

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + offs, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _softmax_kernel[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        while True:  # the hang, after an honest launch
            time.sleep(0.2)
        return y
'''


def one_run(folder: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "TRITON_INTERPRET": "1", "KKB_HARNESS_CACHE": str(folder / "cache")}
    cmd = [sys.executable, "-m", "harness.cli", str(folder / "spec.py"), str(folder / "candidate.py"),
           "--device", "cpu", "-o", str(folder / "verdict.json")]
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)
    limit = re.search(r"no result within (\d+) s", done.stdout)
    return {"wall_s": round(time.monotonic() - t0, 1), "exit_code": done.returncode,
            "limit_s": int(limit.group(1)) if limit else None, "timeout_verdict": "timeout" in done.stdout}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    runs = []
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="kkb-hang-") as tmp:  # a cold baseline cache each run
            folder = Path(tmp)
            (folder / "spec.py").write_text(SPEC)
            (folder / "candidate.py").write_text(CANDIDATE)
            runs.append(one_run(folder))
        print(f"run {i + 1}: {runs[-1]}", flush=True)
    walls = [r["wall_s"] for r in runs]
    ok = all(r["exit_code"] == 1 and r["timeout_verdict"] for r in runs)
    summary = {"runs": runs, "median_wall_s": statistics.median(walls), "max_wall_s": max(walls),
               "every_run_a_timeout_verdict": ok, "bar_s": 90, "meets_bar": ok and max(walls) < 90,
               "load_average_at_end": os.getloadavg()}
    path = write_results("hang", summary, packages=["torch", "triton"], path=args.out)
    print(f"median {summary['median_wall_s']} s, max {summary['max_wall_s']} s; results: {path}")
    return 0 if summary["meets_bar"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
