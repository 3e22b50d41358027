"""Print the CUDA device and the versions a GPU run uses; exit 2 where there is no CUDA device.

Usage (repo root): python3 benchmarks/gpu/cuda_device.py [SCRIPT NAME for the messages]
                   python3 benchmarks/gpu/cuda_device.py --id     (prints the card's short id, e.g. h100)
The id is the card the device is (agent_client/card.py: its name and memory matched to corpus/accelerators),
so results files are named by the card that ran them.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def main(argv: list[str]) -> int:
    import torch
    import triton

    who = argv[1] if len(argv) > 1 else "cuda_device"
    if who == "--id":
        from agent_client.card import card_peaks

        print(card_peaks("cuda:0").short_id)
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
