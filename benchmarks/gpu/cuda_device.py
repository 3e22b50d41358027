"""Print the CUDA device and the versions a GPU run uses; exit 2 where there is no CUDA device.

Usage (repo root): python3 benchmarks/gpu/cuda_device.py [SCRIPT NAME for the messages]
                   python3 benchmarks/gpu/cuda_device.py --id     (prints the accelerator id, e.g. h200)
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    import torch
    import triton

    who = argv[1] if len(argv) > 1 else "cuda_device"
    if who == "--id":
        name = torch.cuda.get_device_name().lower() if torch.cuda.is_available() else "cpu"
        print(next((known for known in ("h200", "h100", "a100", "b200") if known in name), name.split()[-1]))
        return 0
    if not torch.cuda.is_available():
        print(f"{who}: no CUDA device; on a CPU, run the library's checks with: pytest -q tests/corpus/kernels",
              file=sys.stderr)
        return 2
    print(f"[{who}] {torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__} "
          f"cuda {torch.version.cuda}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
